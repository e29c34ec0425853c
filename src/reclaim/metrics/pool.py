"""Pool metrics of the LAVA paper (section 2.3): resource stranding by inflation.

Inflation fills every host's free capacity with a representative mix of VMs until nothing fits;
what is left free is *stranded*: capacity in shapes no VM of the mix can use (free memory on a host
without free cores). Pure functions of free capacity and the mix.

The fill, deterministic: rounds over the mix, shapes in decreasing frequency; a round gives each
active shape a run of copies in proportion to its weight (the run sizes add up to about half of
what the pool's total free capacity could hold, at least one copy each) and places the run
best-fit (least free units of the shape's dominant resource first, ties to the lower host index;
filling the best host until the shape no longer fits equals binding one copy at a time, because
best-fit is monotone). A shape that places nothing in a round is dropped; the fill ends when every
shape is dropped.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

#: A host fits a shape when short by less than this (requests are sums of float32 values).
TOLERANCE = 1e-6


def representative_mix(
    request: NDArray[np.floating], size: int = 16
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The ``size`` most frequent rows of ``request`` (N, R) and their weights (sum 1), most
    frequent first (ties: lexicographic shape order). Rows that request nothing are left out."""
    request = np.asarray(request, np.float64)
    request = request[(request > 0).any(axis=1)]
    if len(request) == 0:
        return np.empty((0, np.shape(request)[1])), np.empty(0)
    shapes, counts = np.unique(request, axis=0, return_counts=True)  # lexicographic
    order = np.argsort(-counts, kind="stable")[:size]
    return shapes[order], counts[order] / counts[order].sum()


def _copies(free: NDArray[np.float64], shape: NDArray[np.float64]) -> NDArray[np.int64]:
    """(H,) copies of ``shape`` that fit in each row of ``free``."""
    need = shape > 0
    per = np.floor((free[:, need] + TOLERANCE) / shape[need]).min(axis=1)
    return np.maximum(per, 0).astype(np.int64)


def fill_best_fit(
    free: NDArray[np.float64], shape: NDArray[np.float64], count: int, largest: NDArray
) -> int:
    """Place up to ``count`` copies of ``shape`` best-fit into ``free`` (H, R), updated in place;
    ``largest``: (R,) scale of the dominant share. Returns the copies placed."""
    dominant = int(np.argmax(shape / np.where(largest > 0, largest, np.inf)))
    fit = _copies(free, shape)
    order = np.lexsort((np.arange(len(free)), free[:, dominant]))
    order = order[fit[order] > 0]
    per_host = fit[order]
    before = np.concatenate([[0], np.cumsum(per_host)[:-1]])
    take = np.clip(count - before, 0, per_host)
    free[order] -= take[:, None] * shape[None, :]
    return int(take.sum())


def inflate(
    free: NDArray[np.float64],
    capacity: NDArray[np.float64],
    shapes: NDArray[np.float64],
    weights: NDArray[np.float64],
) -> NDArray[np.float64]:
    """(H, R) free capacity left after filling ``free`` with the mix ``shapes`` (K, R) of
    ``weights`` (K,) until nothing fits (see the module docstring); ``free`` is not changed."""
    free = np.array(free, np.float64)
    shapes = np.asarray(shapes, np.float64)
    weights = np.asarray(weights, np.float64)
    largest = np.asarray(capacity, np.float64).max(axis=0)
    active = (weights > 0) & (shapes > 0).any(axis=1)
    while active.any():
        ks = np.flatnonzero(active)
        w = weights[ks] / weights[ks].sum()
        mean = (w[:, None] * shapes[ks]).sum(axis=0)
        total = free.clip(min=0).sum(axis=0)
        room = np.min(total[mean > 0] / mean[mean > 0])
        batch = max(int(room) // 2, 1)
        for k, share in zip(ks, w, strict=True):
            count = max(round(share * batch), 1)
            if fill_best_fit(free, shapes[k], count, largest) == 0:
                active[k] = False
    return free


def stranding(
    free: NDArray[np.float64],
    capacity: NDArray[np.float64],
    shapes: NDArray[np.float64],
    weights: NDArray[np.float64],
) -> NDArray[np.float64]:
    """(R,) % of the pool's capacity of each resource left free after :func:`inflate`; 0 for a
    resource the pool has none of."""
    left = inflate(free, capacity, shapes, weights).sum(axis=0)
    total = np.asarray(capacity, np.float64).sum(axis=0)
    return np.divide(100.0 * left, total, out=np.zeros_like(total), where=total > 0)
