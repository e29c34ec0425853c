"""The simulator's :class:`~reclaim.core.view.ClusterView` and actuator: what a controller reads
of the simulator's state (:class:`~reclaim.sim.state.SimState`), and how its decisions change
that state. Both hold the state, not the simulator; the two acts that need the simulator's event
handling (stopping rows, a scheduling pass after limits shrank) reach it through
:class:`RowControl`."""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.core.tables import HostTable, WorkloadTable
from reclaim.core.types import Decisions, Status
from reclaim.sim import _kernels, _step_kernels
from reclaim.sim.state import SimState


class SimView:
    """The simulator's state seen through :class:`ClusterView`."""

    def __init__(self, state: SimState) -> None:
        self._state = state

    @property
    def now(self) -> float:
        return self._state.now

    @property
    def hosts(self) -> HostTable:
        return self._state.hosts

    @property
    def workloads(self) -> WorkloadTable:
        return self._state.wt

    @property
    def running(self) -> NDArray[np.int64]:
        """(n,) int64 rows in use, in order (do not modify: within a tick it is one cached array)."""
        return self._state.running_rows()

    @property
    def app_failures(self) -> NDArray[np.int32]:
        """(A,) int32 out-of-memory failures of each application so far (its rows' ``app``)."""
        return self._state.app_failures

    @property
    def component_ooms(self) -> NDArray[np.uint8]:
        """(C,) uint8 times each component (by id, its rows' ``component``) was stopped out of
        memory so far, saturating at 255."""
        return self._state.comp_ooms

    @property
    def recent_ooms(self) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
        """Components stopped out of memory at the last tick, (k,) int64 component ids (stable
        across restarts, unlike rows), with their memory demand then, (k,) float32 GiB."""
        return self._state.last_ooms

    def usage_history(self, rows: NDArray[np.integer], window: int) -> GroupedArray:
        """Per row, the usage samples (n, R) float32 observed since its start, at most ``window``.

        Samples are the components' demand (CPU before throttling), oldest first; the current
        interval's sample is not included: it is the future a forecaster is asked about.
        """
        st = self._state
        data, indptr = _kernels.usage_history(
            np.asarray(rows, np.int64),
            st.now,
            st.period,
            window,
            st.wt.start,
            st.wt.request,
            st.shape_base,
            st.shape_len,
            st.shape_offset,
            st.workload.shapes.data,
        )
        return GroupedArray(data, indptr)


class RowControl(Protocol):
    """What the actuator asks of the simulator's event handling (the simulator is one)."""

    def preempt(self, rows: NDArray[np.int64]) -> None:
        """Stop ``rows`` now, with the consequences of the simulator's model."""

    def allocation_shrank(self) -> None:
        """Limits went down: waiting work may fit now."""


class SimActuator:
    """Applies a controller's decisions to the simulator's state; ``control`` stops rows and
    hears of shrunk limits; ``refuse_whole_resize`` is the rule of that name (``SimRules``)."""

    def __init__(self, state: SimState, control: RowControl, refuse_whole_resize: bool) -> None:
        self._state = state
        self._control = control
        self._refuse_whole_resize = refuse_whole_resize

    def apply(self, decisions: Decisions) -> NDArray[np.int8]:
        """Evict, then resize; returns a Status per decision row (resizes first, then evictions).

        A resize that would push its host over capacity is refused (UNSCHEDULABLE): whole, or
        under ``SimRules(refuse_whole_resize=False)`` on the resources that overflow only (the
        row is still UNSCHEDULABLE; its other resources change).
        """
        decisions.require(("resize", "evict"), "the shaping simulator")
        wt, hosts = self._state.wt, self._state.hosts
        status = np.full(len(decisions.resize_rows) + len(decisions.evict), Status.OK, np.int8)
        if len(decisions.evict):
            self._control.preempt(decisions.evict.astype(np.int64))
        shrank = _step_kernels.apply_resizes(
            decisions.resize_rows.astype(np.int64), decisions.resize_limit, wt.host, wt.limit,
            hosts.allocated, hosts.capacity, self._refuse_whole_resize, status,
        )  # fmt: skip
        if shrank:
            self._control.allocation_shrank()
        return status
