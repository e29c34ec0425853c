"""ClusterView and Actuator: what a controller reads and what applies its decisions.

The simulator (:mod:`reclaim.sim.view`) and the live agent (:mod:`reclaim.agent.collector`,
:mod:`reclaim.agent.actuator`) each implement both, so a controller never knows which of the two
it is driving.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.core.tables import HostTable, WorkloadTable
from reclaim.core.types import Decisions


class ClusterView(Protocol):
    """Read-only, columnar state at time ``now``."""

    now: float
    hosts: HostTable
    workloads: WorkloadTable

    @property
    def running(self) -> NDArray[np.int64]: ...  # rows of ``workloads`` in use

    @property
    def app_failures(self) -> NDArray[np.int32]: ...  # (A,) failures of each application so far

    @property
    def component_ooms(self) -> NDArray[np.uint8]: ...  # (C,) out-of-memory stops per component

    @property
    def recent_ooms(self) -> tuple[NDArray[np.int64], NDArray[np.float32]]: ...

    def usage_history(self, rows: NDArray[np.integer], window: int) -> GroupedArray: ...


class Actuator(Protocol):
    def apply(self, decisions: Decisions) -> NDArray[np.int8]: ...  # Status per row
