"""CORP's allocation (Liu et al., section III-B): pack complementary jobs, then the most matched VM.

Packing: each job's dominant resource is the one it asks the largest share of (against the largest
host's capacity, as best-fit measures it). Taking the batch in order, every job not yet packed is
paired with the unpacked job of a *different* dominant resource whose demands deviate most from its
own, DV(j, i) = sum_k (d_jk - m_k)^2 + (d_ik - m_k)^2 with m_k = (d_jk + d_ik) / 2; a job with no
such partner is an entity alone. The framework binds each pair to one host.

Most matched VM: among the hosts that satisfy the entity's demand, the one with the smallest unused
resource volume, sum_k free_k / C'_k, C' being the largest capacity of each resource over all hosts.
CORP computes volumes over *predicted* unused resources; here ``free`` is whatever the caller says
is unused (``reclaim.tvw`` passes capacity minus the residents' peaks by default).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reclaim.placement.framework import CycleState, min_max_normalize, no_filter
from reclaim.registry import register


def deviation(a: NDArray, b: NDArray) -> NDArray[np.float64]:
    """DV of demand vectors ``a`` (..., R) and ``b`` (..., R): how far apart two jobs' demands are."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    mid = (a + b) / 2
    return ((a - mid) ** 2 + (b - mid) ** 2).sum(axis=-1)


def complementary_pairs(request: NDArray, largest: NDArray) -> NDArray[np.int64]:
    """(B,) entity label of each job of ``request`` (B, R): CORP's greedy pairing, in batch order;
    ties between partners go to the earlier job. ``largest``: (R,) scale of the dominant share."""
    n = len(request)
    dominant = (request / largest).argmax(axis=1)
    label = np.full(n, -1, np.int64)
    entity = 0
    for i in range(n):
        if label[i] >= 0:
            continue
        label[i] = entity
        partners = np.flatnonzero((label < 0) & (dominant != dominant[i]))
        if len(partners):
            label[partners[np.argmax(deviation(request[partners], request[i]))]] = entity
        entity += 1
    return label


@register("placement", "corp-packing")
class CorpPacking:
    monotone = True  # load added to a host only shrinks its unused volume, raising its score

    filter = no_filter

    def prepare(self, state: CycleState) -> NDArray[np.int64]:
        """(B,) pair label of each workload of the batch."""
        return complementary_pairs(state.request, state.capacity.max(axis=0))

    def score(self, state: CycleState, feasible):
        """(B, H) minus each host's unused resource volume (the same for every workload)."""
        volume = (state.free / state.capacity.max(axis=0)).sum(axis=1)
        return np.broadcast_to(-volume, feasible.shape)

    normalize = staticmethod(min_max_normalize)
