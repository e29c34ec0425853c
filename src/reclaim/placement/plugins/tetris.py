"""Tetris: the alignment of a workload's demand with a host's free resources (Grandl et al. 2014).

The score of a host is the dot product of the workload's demand and the host's free resources, both
as shares of the host's capacity, so that no resource outweighs another by its unit. Tetris adds
this to a shortest-remaining-time term and a fairness knob; TVW-RL compares against it with the
fairness knob off and no runtime knowledge, which leaves the alignment alone. The request is the
workload's peak demand: a caller that replays usage passes peaks (``reclaim.tvw`` does so for
``tetris`` by default), so hosts are never over-committed at any instant.
"""

from __future__ import annotations

import numpy as np

from reclaim.core.capabilities import PlacementCapabilities
from reclaim.core.component import Component
from reclaim.placement.framework import CycleState, min_max_normalize
from reclaim.registry import register


@register("placement", "tetris")
class Tetris(Component):
    # not monotone: load added to a host lowers its free resources and so its alignment
    __capabilities__ = PlacementCapabilities()

    def score(self, state: CycleState, feasible):
        """(B, H) sum over resources of (request / capacity) x (free / capacity) of each host."""
        cap = state.capacity
        free_share = np.divide(state.free, cap * cap, out=np.zeros_like(cap), where=cap > 0)
        return state.request.astype(np.float64) @ free_share.T

    normalize = staticmethod(min_max_normalize)
