"""The simulator's :class:`~reclaim.core.view.ClusterView` and actuator: what a controller reads
of the simulator's state, and how its decisions change that state."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.core.tables import HostTable, WorkloadTable
from reclaim.core.types import Decisions, R, Status
from reclaim.sim import _kernels

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
        sim = self._sim
        data, indptr = _kernels.usage_history(
            np.asarray(rows, np.int64),
            sim.now,
            sim.period,
            window,
            sim.wt.start,
            sim.wt.request,
            sim.shape_base,
            sim.shape_len,
            sim.shape_offset,
            sim.workload.shapes.data,
        )
        return GroupedArray(data, indptr)


class SimActuator:
    """Applies a controller's decisions to the simulator's state."""

    def __init__(self, sim: Simulator) -> None:
        self._sim = sim

    def apply(self, decisions: Decisions) -> NDArray[np.int8]:
        """Evict, then resize; returns a Status per decision row (resizes first, then evictions).

        A resize that would push its host over capacity is refused (UNSCHEDULABLE): whole, or
        under ``SimRules(refuse_whole_resize=False)`` on the resources that overflow only (the
        row is still UNSCHEDULABLE; its other resources change).
        """
        decisions.require(("resize", "evict"), "the shaping simulator")
        sim, wt, hosts = self._sim, self._sim.wt, self._sim.hosts
        status = np.full(len(decisions.resize_rows) + len(decisions.evict), Status.OK, np.int8)
        if len(decisions.evict):
            sim.preempt(decisions.evict.astype(np.int64))
        rows = decisions.resize_rows.astype(np.int64)
        alive = wt.host[rows] >= 0
        status[: len(rows)][~alive] = Status.UNSCHEDULABLE
        rows, limit = rows[alive], decisions.resize_limit[alive]
        if len(rows) == 0:
            return status
        host = wt.host[rows]
        delta = limit - wt.limit[rows]
        after = hosts.allocated.copy()
        for r in range(R):
            after[:, r] += np.bincount(host, delta[:, r], minlength=len(hosts))
        over = after > hosts.capacity + 1e-6
        if sim.rules.refuse_whole_resize:
            refused = np.any(over, axis=1)[host] & np.any(delta > 0, axis=1)
            kept = np.repeat(~refused[:, None], R, axis=1)
        else:  # each resource's raise stands or falls alone
            kept = ~(over[host] & (delta > 0))
            refused = ~kept.all(axis=1)
        changed = kept.any(axis=1)
        delta = np.where(kept, delta, 0).astype(delta.dtype)[changed]
        _kernels.add_allocation(hosts.allocated, host[changed], delta, 1)
        wt.limit[rows] = np.where(kept, limit, wt.limit[rows])
        status[np.flatnonzero(alive)[refused]] = Status.UNSCHEDULABLE
        if np.any(delta < 0):
            sim.allocation_shrank()
        return status
