"""First-fit: the feasible host with the lowest index."""

from __future__ import annotations

import numpy as np

from reclaim.placement.framework import CycleState, min_max_normalize
from reclaim.registry import register


@register("placement", "first-fit")
class FirstFit:
    monotone = True  # the score ignores load entirely

    def filter(self, state: CycleState):
        return None

    def score(self, state: CycleState, feasible):
        """(B, H) minus the host index."""
        hosts = -np.arange(len(state.free), dtype=np.float64)
        return np.broadcast_to(hosts, feasible.shape)

    normalize = staticmethod(min_max_normalize)
