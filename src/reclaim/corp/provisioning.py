"""What every opportunistic provisioning method tells the simulator: how much of each running
job's allocation it may lend to other jobs over the next window.

CORP (DNN + HMM + confidence bound + unlock rule) and the baselines (RCCR, CloudScale, DRA)
implement :class:`Provisioner`; the simulator calls it once per window for every running job and
resource, and the VM choice is the method's placement (CORP: complementary packing and the most
matched VM; the baselines: a random feasible VM).
"""

from __future__ import annotations

from typing import Protocol, Self

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray


class Provisioner(Protocol):
    """Predicts the lendable (allocated but unused) amount of one resource per job."""

    def fit(self, usage: GroupedArray, request: NDArray[np.float64]) -> Self:
        """Learn from past jobs: ``usage`` (S series, one resource, per slot, in the resource's
        units) and their allocations ``request`` (S,). Methods without training return self."""
        ...

    def lendable(
        self, history: GroupedArray, request: NDArray[np.float64], horizon: int
    ) -> NDArray[np.float64]:
        """(S,) amount of each running job's allocation ``request`` (S,) that may be lent to
        other jobs for the next ``horizon`` slots, given its usage so far ``history`` (S series,
        the latest slot last); 0 where nothing is to be lent, never above the request."""
        ...
