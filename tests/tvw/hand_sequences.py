"""Hand-built sequences whose replays can be followed step by step."""

from __future__ import annotations

import numpy as np

from reclaim.core.grouped import GroupedArray
from reclaim.tvw.scenario import Sequence


def sequence(series, arrival) -> Sequence:
    """Workloads using ``series[j]`` (steps x (cpu, mem) units), arriving at ``arrival`` steps."""
    usage = GroupedArray.from_series([np.array(s, np.int16) for s in series])
    n = len(series)
    flags, zeros = np.zeros(n, bool), np.zeros(n, np.int64)
    return Sequence(usage, np.array(arrival, np.int64), flags, flags, zeros, zeros, 1.0)


# Workload 0 uses (2, 1) then (3, 1); 1 uses (1, 1) for a step; 2 uses (4, 4) for two steps.
SEQ = sequence([[[2, 1], [3, 1]], [[1, 1]], [[4, 4], [4, 4]]], [0, 0, 1])
