"""Best-fit: the feasible host with the least free units of the workload's dominant resource.

This is the definition the TVW-RL paper uses; the dominant resource is the one the workload asks the
largest share of for, measured against the largest host's capacity of each resource.
"""

from __future__ import annotations

import numba
import numpy as np

from reclaim.core.capabilities import PlacementCapabilities
from reclaim.core.component import Component
from reclaim.placement._kernels import largest_capacity
from reclaim.placement.framework import CycleState, min_max_normalize
from reclaim.registry import register


@numba.njit(cache=True)
def best_fit_kernel(capacity, free, req, out):
    """Compiled :meth:`BestFit.score` for one request (R-tuple): writes (H,) raw scores to ``out``."""
    top = largest_capacity(capacity, req)
    dominant, share = 0, -1.0
    for r in range(len(req)):
        s = req[r] / top[r] if top[r] > 0 else 0.0  # a resource no host has cannot dominate
        if s > share:
            dominant, share = r, s
    for h in range(free.shape[0]):
        out[h] = -free[h, dominant]


@register("placement", "best-fit")
class BestFit(Component):
    # monotone: adding load lowers free capacity, which only raises the score
    __capabilities__ = PlacementCapabilities(monotone=True, kernel=best_fit_kernel)

    def score(self, state: CycleState, feasible):
        """(B, H) minus the host's free capacity of each item's dominant resource."""
        top = state.capacity.max(axis=0)
        share = np.divide(state.request, top, out=np.zeros(state.request.shape), where=top > 0)
        dominant = share.argmax(axis=1)  # (B,)
        return -state.free[:, dominant].T

    normalize = staticmethod(min_max_normalize)
