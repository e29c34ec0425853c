"""First-fit: the feasible host with the lowest index."""

from __future__ import annotations

import numba
import numpy as np

from reclaim.core.capabilities import PlacementCapabilities
from reclaim.core.component import Component
from reclaim.placement.framework import CycleState, min_max_normalize
from reclaim.registry import register


@numba.njit(cache=True)
def first_fit_kernel(capacity, free, req, out):
    """Compiled :meth:`FirstFit.score` for one request: (H,) raw scores into ``out``."""
    for h in range(free.shape[0]):
        out[h] = -h


@register("placement", "first-fit")
class FirstFit(Component):
    # monotone: the score ignores load entirely
    __capabilities__ = PlacementCapabilities(monotone=True, kernel=first_fit_kernel)

    def score(self, state: CycleState, feasible):
        """(B, H) minus the host index."""
        hosts = -np.arange(len(state.free), dtype=np.float64)
        return np.broadcast_to(hosts, feasible.shape)

    normalize = staticmethod(min_max_normalize)
