"""Stranding: how much of the pool's scarce resource a placement leaves unusable.

The LAVA paper's scheduler (Borg) ranks business objectives and multi-dimensional packing above its
lifetime scores (LAVA paper, sections 2.2, 4.2, 4.3). A lifetime score ranked first packs by
lifetime alone: on the GPU pool ``dlrm-hn`` LAVA fills hosts' GPUs with small-memory VMs and
strands their memory, until no host has both a GPU and the memory a common VM needs
(``docs/lava.md``). Ranked first (``"stranding>lava>las>best-fit"``), this score keeps every lower
score to the hosts where a placement strands the least; it is coarse (whole VMs), so those scores
still decide among most hosts.

The anticipated VMs are the pool's representative mix
(:func:`reclaim.metrics.pool.representative_mix` of the requests of its VM table, the mix the
stranding metric inflates with: shapes and their frequency, no lifetimes). The *scarce* resource is the one the mix's mean VM asks
the largest share of the pool's capacity for: filled with that mix, hosts run out of it first, so
any of it stranded is capacity lost, while the other resources have slack. On a host with free
capacity ``f``, the part of the scarce resource r that the mix can use is the most that copies of
one shape take, max_k copies_k(f) x shape_k[r]; the rest is stranded. A placement's cost is the
stranded r it adds to its host, in whole mean VMs: floor(added / the mix's mean request of r).
Stranding less than one mean VM costs nothing; using capacity already stranded is not rewarded
(packing is left to the later scores). Raw score: minus the cost.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import PlacementCapabilities
from reclaim.core.component import Component
from reclaim.errors import ReclaimError
from reclaim.metrics.pool import representative_mix
from reclaim.placement.framework import (
    FIT_TOLERANCE,
    CycleState,
    copies_that_fit,
    min_max_normalize,
)
from reclaim.registry import register


def stranded(free: NDArray[np.float64], shapes: NDArray[np.float64]) -> NDArray[np.float64]:
    """(..., R) capacity of ``free`` (..., R) that no one shape of ``shapes`` (K, R) can use."""
    free = np.maximum(free, 0.0)
    copies = copies_that_fit(free[..., None, :], shapes)  # (..., K)
    usable = np.zeros_like(free)
    for k, shape in enumerate(shapes):  # a maximum per shape: see copies_that_fit's speed trick
        np.maximum(usable, copies[..., k, None] * shape, out=usable)
    return np.maximum(free - usable, 0.0)


@register("placement", "stranding")
class Stranding(Component):
    """Minus the mean VMs' worth of the scarce resource each placement strands (see module)."""

    __capabilities__ = PlacementCapabilities(needs_view=True)

    def mix(self, view) -> tuple[NDArray[np.float64], int, float]:
        """(K, k) shapes of the pool's mix on the resources placement sees, the column of the
        scarce resource and its mean request; made once per view."""
        mix = view.plugin_state.get("stranding")
        if mix is None:
            shapes, weights = representative_mix(view.vms.request[~view.lacking][:, view.axes])
            mean = weights @ shapes
            share = mean / view.capacity[:, view.axes].sum(axis=0)
            scarce = int(np.argmax(share)) if len(shapes) else 0
            mix = view.plugin_state["stranding"] = (shapes, scarce, float(mean[scarce]))
        return mix

    def score(self, state: CycleState, feasible):
        if state.view is None:
            raise ReclaimError(
                "placement plugin 'stranding' takes the pool's VM mix from CycleState.view; "
                "run it through reclaim.lifetime.replay"
            )
        shapes, r, unit = self.mix(state.view)
        if len(shapes) == 0:
            return np.zeros(feasible.shape)
        hosts = np.flatnonzero(feasible.any(axis=0))  # the others' scores are never read
        free = state.free[hosts]
        # one call for the hosts as they are (row 0) and after each item (rows 1..B)
        left = np.concatenate([free[None], free[None] - state.request[:, None, :]])
        held = stranded(left, shapes)[..., r]
        cost = np.zeros(feasible.shape)
        cost[:, hosts] = np.floor(np.maximum(held[1:] - held[0], 0.0) / unit + FIT_TOLERANCE)
        return -cost

    normalize = staticmethod(min_max_normalize)
