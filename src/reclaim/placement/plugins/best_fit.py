"""Best-fit: the feasible host with the least free units of the workload's dominant resource.

This is the definition the TVW-RL paper uses; the dominant resource is the one the workload asks the
largest share of for, measured against the largest host's capacity of each resource.
"""

from __future__ import annotations

from reclaim.placement.framework import CycleState, min_max_normalize
from reclaim.registry import register


@register("placement", "best-fit")
class BestFit:
    monotone = True  # adding load lowers free capacity, which only raises the score

    def filter(self, state: CycleState):
        return None

    def score(self, state: CycleState, feasible):
        """(B, H) minus the host's free capacity of each item's dominant resource."""
        dominant = (state.request / state.capacity.max(axis=0)).argmax(axis=1)  # (B,)
        return -state.free[:, dominant].T

    normalize = staticmethod(min_max_normalize)
