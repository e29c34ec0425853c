"""The simulator's :class:`~reclaim.core.view.ClusterView` and actuator."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.core.tables import HostTable, WorkloadTable
from reclaim.core.types import Decisions

if TYPE_CHECKING:
    from reclaim.sim.simulator import Simulator


class SimView:
    """The simulator's state seen through :class:`ClusterView`."""

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim

    @property
    def now(self) -> float:
        return self._sim.now

    @property
    def hosts(self) -> HostTable:
        return self._sim.hosts

    @property
    def workloads(self) -> WorkloadTable:
        return self._sim.wt

    @property
    def running(self) -> NDArray[np.int64]:
        """(n,) int64 rows in use, in order (do not modify: within a tick it is one cached array)."""
        return self._sim.running_rows()

    @property
    def app_failures(self) -> NDArray[np.int32]:
        """(A,) int32 out-of-memory failures of each application so far (its rows' ``app``)."""
        return self._sim.app_failures

    @property
    def component_ooms(self) -> NDArray[np.uint8]:
        """(C,) uint8 times each component (by id, its rows' ``component``) was stopped out of
        memory so far, saturating at 255."""
        return self._sim.comp_ooms

    @property
    def recent_ooms(self) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Components stopped out of memory at the last tick, (k,) int64 component ids (stable
        across restarts, unlike rows), with their memory demand then, (k,) float32 GiB."""
        return self._sim.last_ooms

    def usage_history(self, rows: NDArray[np.integer], window: int) -> GroupedArray:
        """Per row, the usage samples (n, R) float32 observed since its start, at most ``window``.

        Samples are the components' demand (CPU before throttling), oldest first; the current
        interval's sample is not included: it is the future a forecaster is asked about.
        """
        return self._sim.usage_history(np.asarray(rows), window)


class SimActuator:
    """Applies a controller's decisions to the simulator's state."""

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim

    def apply(self, decisions: Decisions) -> NDArray[np.int8]:
        return self._sim.apply(decisions)
