"""The trace-driven cluster simulator: FIFO admission of whole applications on reservations,
placement through the plugin framework, a monitor tick at which usage is observed and a controller
resizes or preempts, and exact work accounting.

Model (every policy is judged under it, so it is stated here once):

- Time. Arrivals and completions happen at their exact times. Every ``period`` seconds (the usage
  shapes' sampling period) a monitor tick observes usage and runs the controller. A component's
  usage is constant between ticks: sample ``k = offset + floor((t - start) / period)`` of its shape.
- Admission. Applications queue in arrival order. The head is admitted when all its core components
  fit (placed together or not at all); then as many elastic components as fit. Elastic components
  that did not fit wait and are placed, in application order, whenever capacity frees up, ahead of
  the queue (their application was admitted first). Strict FIFO: nothing overtakes the head.
  An application one of whose components fits no host even on an empty cluster, or whose core
  components exceed the whole cluster, can never run: it is rejected at arrival and counted; so is
  a head whose core components the placer cannot fit even when the cluster is empty.
- Progress. A component needs ``work`` seconds at full speed. CPU demand above its CPU allocation
  throttles it: it progresses at ``allocation / demand`` of full speed. Memory demand above its
  memory allocation at a tick is an out-of-memory failure.
- Soft memory limits. A controller that declares ``soft_memory_limits`` (the optimistic
  shaper) treats memory allocations as soft, as a container's soft limit is: a component may use
  more than its allocation while its host has memory left. When a host's memory demand exceeds
  its capacity, the host's OOM killer stops the component with the largest memory demand, and the
  next largest, until the rest fit (Linux's OOM killer picks the largest resident process).
- Forecasts. A controller that declares ``needs_forecast`` is handed, at every tick, a forecast
  of each running component's CPU and memory demand for the coming interval, by the run's forecaster,
  from the component's observed demand since it started (at most ``forecast_window`` samples);
  the ``oracle`` forecaster is handed the true demand. Components within the controller's grace
  period keep their request whatever the forecast, so they are not forecast.
- Rules. Three rules of the model are settings (:class:`SimRules`), so that the shaping paper's
  own simulator can be replayed: whether CPU demand above the allocation throttles progress (the
  paper's does not model CPU contention), whether a raise that overflows its host on one
  resource is refused whole or on that resource only (the paper's refuses each resource apart),
  and whether admission waits for all of an application's components (the paper's rigid
  baseline) or only its core ones.
- Slack. At each tick every running component's request, allocation and usage count for the
  interval until the next tick, summed per application: its slack is (allocated - used) /
  requested over its whole life, i.e. the allocated share of its request minus the used share,
  time-weighted: the per-application measure of the shaping paper's section 4.1.
- Failures. A failed or preempted core component fails its whole application: all its components
  stop, all work done so far (finished components included) is lost, and the application returns to
  the queue at its original position. A failed or preempted elastic component loses its own work and
  waits to be placed again. Lost work is counted in component-seconds and, weighted by each
  component's request, in core-seconds and GiB-seconds.
"""

from __future__ import annotations

import time as wallclock
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import ControllerCapabilities, ForecasterCapabilities, capabilities
from reclaim.core.control import (
    Controller,
    UsageForecast,
    control_step,
    forecast_usage,
    grace_of,
    in_grace,
)
from reclaim.core.engine import Engine
from reclaim.core.tables import HostTable
from reclaim.core.types import MEM, R, Status
from reclaim.forecast.base import Forecaster
from reclaim.forecast.oracle import Oracle
from reclaim.placement.compiled import compiled_binding, message_buffer
from reclaim.placement.framework import Placer
from reclaim.sim import _kernels, _step_kernels
from reclaim.sim.state import DONE, QUEUED, REJECTED, RUNNING, SimState
from reclaim.sim.view import SimActuator, SimView
from reclaim.workload.model import Workload

# Event kinds; at equal times completions free capacity before arrivals ask for it, and both
# happen before the monitor tick of that instant.
COMPLETE, ARRIVAL, TICK = 0, 1, 2
_PRIORITY = {COMPLETE: 0, ARRIVAL: 1, TICK: 2}


@dataclass(frozen=True)
class SimRules:
    """The rules of the model that are settings (module docstring); the defaults are reclaim's.

    throttle_cpu: CPU demand above the CPU allocation slows progress to allocation / demand;
        False: progress ignores CPU, as in the shaping paper's simulator (``Workload.scala``
        :397-428 at commit 8abcf51), and usage is the demand.
    refuse_whole_resize: a resize that would overflow its host on any resource is refused for
        every resource; False: only the raises of the resources that overflow are refused, as the
        paper's simulator does (``Scheduler.scala``:235-246).
    rigid_admission: an application is admitted only when all its components fit at once, as
        the paper's ``baseline-zoe`` (``ZoeSimulation.scala``:332-382): every component is then
        treated as core, so a stopped elastic component fails its application too. Meant for the
        reservation baseline, under which no component is stopped.
    """

    throttle_cpu: bool = True
    refuse_whole_resize: bool = True
    rigid_admission: bool = False


@dataclass
class RunStats:
    """How the run went, for benchmarks: wall seconds (all, and in monitor ticks), events,
    component-ticks (running components observed, summed over ticks), and forecasts: rows past
    the controller's grace period that were forecast, and those of them the forecaster answered by
    its fallback. ``seconds_*``: wall seconds of the set-up, of the compiled event loop, and of
    the ticks' forecast, decide and apply phases (the rest of ``tick_s`` reads the demand and
    accounts the interval)."""

    wall_s: float = 0.0
    tick_s: float = 0.0
    seconds_reset: float = 0.0
    seconds_events: float = 0.0
    seconds_forecast: float = 0.0
    seconds_decide: float = 0.0
    seconds_apply: float = 0.0

    def add_phases(self, seconds: dict[str, float]) -> None:
        """Count a control step's phases (``ControlStep.seconds``)."""
        self.seconds_forecast += seconds["forecast"]
        self.seconds_decide += seconds["decide"]
        self.seconds_apply += seconds["apply"]

    events: int = 0
    ticks: int = 0
    component_ticks: int = 0
    forecasts: int = 0
    forecast_fallbacks: int = 0


class Simulator:
    """Replays ``workload`` on ``hosts`` under ``controller`` with placement by ``placer``.

    ``forecaster`` serves controllers that need a forecast (``forecast_window`` samples of history
    at most). ``horizon`` (s) stops the run early; applications not finished by then are reported
    as they are (running or queued). ``on_tick(sim)`` is called after each tick (progress bars).

    The simulator handles the events; what they change is ``state`` (:class:`SimState`), which
    its view (``view``, what the controller reads) and actuator (``actuator``) share.

    With a placer that placement binds in compiled code (``placement.compiled``: best-fit,
    first-fit, random-fit), arrivals and completions run in a compiled event loop between ticks
    (``_kernels.run_events``); ``compiled`` False (tests compare the two) runs them through the
    engine and the Python handlers instead.
    """

    compiled = True

    def __init__(
        self,
        workload: Workload,
        hosts: HostTable,
        controller: Controller,
        placer: Placer,
        forecaster: Forecaster | None = None,
        forecast_window: int = 40,
        horizon: float | None = None,
        on_tick: Callable[[Simulator], None] | None = None,
        rules: SimRules = SimRules(),  # noqa: B008 - frozen, shared safely
    ) -> None:
        if rules.rigid_admission:
            workload = replace(workload, core=np.ones_like(workload.core))
        self.state = SimState(workload.validate(), hosts)
        self.controller = controller
        self.placer = placer
        self.forecaster = forecaster
        self.forecast_window = forecast_window
        if capabilities(controller, ControllerCapabilities).needs_forecast and forecaster is None:
            raise ValueError(f"{type(controller).__name__} needs a forecaster")
        self.horizon = np.inf if horizon is None else float(horizon)
        self.on_tick = on_tick
        self.rules = rules
        self.view = SimView(self.state)
        self.actuator = SimActuator(self.state, self, rules.refuse_whole_resize)

    # ------------------------------------------------------------------ set-up
    def _reset(self) -> None:
        st, hosts = self.state, self.state.hosts
        st.reset()
        self._batches: dict[int, tuple[NDArray[np.int64], NDArray[np.int64]]] = {}
        self._free_buf = np.empty_like(hosts.capacity)
        self._batch_id = 0
        self._dirty = True
        self._timeline: list[NDArray[np.float64]] = []
        self.stats = RunStats()
        self.engine = Engine(
            {COMPLETE: self._on_complete, ARRIVAL: self._on_arrival, TICK: self._on_tick}
        )
        # how the event loop binds; None: no event loop
        self._binding = compiled_binding(self.placer) if self.compiled else None
        if self._binding is not None:
            self._reset_loop()
        else:
            self.engine.schedule_many(
                (t, _PRIORITY[ARRIVAL], ARRIVAL, a) for a, t in enumerate(st.workload.arrival)
            )
        self.engine.schedule(0.0, _PRIORITY[TICK], TICK, 0)

    def _reset_loop(self) -> None:
        """State and scratch of the compiled event loop; the engine keeps only the ticks."""
        st = self.state
        width = int(st.app_size.max()) if len(st.app_size) else 1
        self._heap = _kernels.CompletionHeap()
        self._ist = np.zeros(_kernels.I_SIZE, np.int64)
        self._fst = np.zeros(2)
        self._snap = np.empty(st.workload.n_apps, np.int64)
        self._sc_comps = np.empty(width, np.int64)
        self._sc_where = np.empty(width, np.int32)
        self._sc_req = np.empty((width, R), np.float32)
        self._raw = np.empty(len(st.hosts))
        self._before = np.empty_like(st.hosts.capacity)
        self._buf = np.empty(R)
        self._runs = np.empty(width + 1, np.int64)
        self._sc_still = np.empty(width, np.int64)
        self._sums = np.empty_like(st.hosts.capacity)
        self._sort_keys = np.empty((2, width))
        self._sort_idx = np.empty((2, width), np.int64)
        self._open = np.empty(len(st.hosts), np.bool_)
        self._bounds = np.empty(width + 1, np.int64)
        self._message = message_buffer(len(st.hosts), R)
        self._levels = np.empty(len(st.hosts))
        self._failed_free = np.empty_like(st.hosts.capacity)
        self._failed_up = np.empty(len(st.hosts), np.bool_)
        self._dirty_hosts = np.zeros(len(st.hosts), np.bool_)
        self._dirty_list = np.empty(len(st.hosts), np.int64)
        self._free_total = np.empty(R)
        self._ist[_kernels.I_RUNS_APP] = -1
        self._ist[_kernels.I_FAILED_APP] = -1

    # ------------------------------------------------------------------ run
    def run(self) -> Simulator:
        """Run to completion of every application (or to the horizon); returns self."""
        self._started = wallclock.perf_counter()
        self._reset()
        self.stats.seconds_reset = wallclock.perf_counter() - self._started
        return self._finish()

    def resume(self, on_tick: Callable[[Simulator], None] | None = None) -> Simulator:
        """Run a simulator restored from a pickle taken in ``on_tick`` (see
        :mod:`reclaim.sim.checkpoint`) on to its end, calling ``on_tick`` from now on: the same
        results, bit for bit, as the run it was taken from would have given."""
        self.on_tick = on_tick
        self._started = wallclock.perf_counter() - self._elapsed
        return self._finish()

    def __getstate__(self) -> dict:
        """What a checkpoint saves: everything but the tick callback; the wall time so far."""
        state = self.__dict__ | {"on_tick": None}
        now = wallclock.perf_counter()
        state["_elapsed"] = now - getattr(self, "_started", now)
        return state

    def _finish(self) -> Simulator:
        """The events from where the run stands to its end."""
        self.engine.run(until=self.horizon)
        last = self.engine.now
        if self._binding is not None:
            self._run_loop(self.horizon)  # events after the last tick
            last = max(last, float(self._fst[_kernels.F_LAST]))
        self.state.now = min(last, self.horizon) if np.isfinite(self.horizon) else last
        self.stats.wall_s = wallclock.perf_counter() - self._started
        return self

    @property
    def timeline(self) -> NDArray[np.float64]:
        """(T, 3 + 2R) per tick: time, running components, queued apps, allocated[R], used[R]."""
        if not self._timeline:
            return np.empty((0, 3 + 2 * R))
        return np.stack(self._timeline)

    # ------------------------------------------------------------------ events
    def _on_arrival(self, t: float, app: int) -> None:
        st = self.state
        self.stats.events += 1
        st.now = t
        st.arrived += 1
        wl, cp = st.workload, st.workload.comp_indptr
        request = wl.request[cp[app] : cp[app + 1]]
        biggest = st.hosts.capacity.max(axis=0)
        if np.any(request > biggest) or np.any(st.core_total[app] > st.hosts.capacity.sum(0)):
            self._reject(app)
            return
        st.app_state[app] = QUEUED
        st.queue.push(app)
        self._dirty = True
        self._schedule(t)

    def _on_complete(self, t: float, batch: int) -> None:
        st = self.state
        self.stats.events += 1
        st.now = t
        rows, epoch = self._batches.pop(batch)
        wt = st.wt
        n, st.free_top, finished = _kernels.complete(
            rows,
            epoch,
            st.epoch,
            wt.host,
            wt.app,
            wt.component,
            wt.limit,
            st.hosts.allocated,
            st.free_rows,
            st.free_top,
            st.comp_state,
            st.app_done,
            st.app_size,
        )
        if n == 0:
            return
        self._dirty = True
        if len(finished):
            st.app_state[finished] = DONE
            st.app_end[finished] = t
            st.finished += len(finished)
        self._schedule(t)

    def _on_tick(self, t: float, _: int) -> None:
        st = self.state
        if self._binding is not None:
            self._run_loop(t)  # arrivals and completions up to this instant come first
        st.now = t
        if not self._work_left():
            return
        self.stats.ticks += 1
        began = wallclock.perf_counter()
        st.rows_moved()
        rows = st.running_rows()
        self._advance(rows, t)
        # The demand of the coming interval, read once for the tick (the oracle's forecast is
        # it): no row starts before the next tick, and those the controller stops drop out.
        demand = self._demand(rows, t)
        if len(rows):
            forecast = lambda due: self._forecast(due, t, rows, demand)  # noqa: E731
            step = control_step(self.view, self.controller, forecast, self.actuator)
            self.stats.add_phases(step.seconds)
            # No row starts within a tick: the rows still running are those still on a host.
            alive = st.wt.host[rows] >= 0
            if not alive.all():
                rows, demand = rows[alive], demand[alive]
        oom = _kernels.over_limit(rows, demand, st.wt.limit)
        if capabilities(self.controller, ControllerCapabilities).soft_memory_limits:
            oom = _kernels.host_oom_victims(
                st.wt.host[rows], demand[:, MEM], st.hosts.capacity[:, MEM]
            )
        if oom.any():
            st.last_ooms = (st.wt.component[rows[oom]].astype(np.int64), demand[oom, MEM])
            self._kill(rows[oom], Status.OOM, t)
            alive = st.wt.host[rows] >= 0  # a failed application takes its other rows along
            rows, demand = rows[alive], demand[alive]
        else:
            st.last_ooms = (np.empty(0, np.int64), np.empty(0, np.float32))
        self.stats.component_ticks += len(rows)
        # Usage, host totals recomputed from scratch (so that incremental sums cannot drift), the
        # applications' totals, the timeline's sums and the new rates, in one compiled call.
        wt, totals = st.wt, np.empty(2 * R)
        completions = _kernels.observe(
            rows,
            demand,
            t,
            st.period,
            wt.host,
            wt.app,
            wt.request,
            wt.limit,
            wt.used,
            st.hosts.allocated,
            st.hosts.used,
            st.app_requested,
            st.app_allocated,
            st.app_used,
            st.remaining,
            st.rate,
            st.epoch,
            totals,
            self.rules.throttle_cpu,
        )
        self._timeline.append(np.concatenate([[t, len(rows), len(st.queue)], totals]))
        self._schedule_completions(*completions)
        st.rows_moved()
        self.stats.tick_s += wallclock.perf_counter() - began
        self._schedule(t)
        self.engine.schedule(t + st.period, _PRIORITY[TICK], TICK, 0)
        if self.on_tick is not None:  # last: the run is whole here, a checkpoint may save it
            self.on_tick(self)

    # ------------------------------------------------------------------ scheduling
    def _schedule(self, t: float) -> None:
        """Place waiting elastic components, then admit queued applications head first."""
        st = self.state
        if not self._dirty:
            return
        if self._binding is not None:
            self._run_loop(t, pass_at=t)
            return
        self._dirty = False
        hosts = st.hosts
        free = _kernels.free_capacity(hosts.capacity, hosts.allocated, hosts.up, self._free_buf)
        for app in st.elastic_waiting.sorted():
            self._place_elastic(app, free, t)
        queue, wl, cp = st.queue, st.workload, st.workload.comp_indptr
        while queue:
            app = queue.head()
            if not _kernels.total_covers(free, st.core_total[app]):
                break
            first, stop = int(cp[app]), int(cp[app] + st.n_core[app])
            request = wl.request[first:stop]  # core components come first: a view, not a copy
            if _kernels.may_fit(free, hosts.up, request):
                where = self.placer.place(hosts.capacity, free, hosts.up, request, True)
            else:  # hopeless; most attempts are, and asking the placer costs more
                where = np.full(stop - first, -1, np.int32)
            if stop > first and where[0] < 0:
                if st.cluster_empty():
                    # The placer cannot fit it on an empty cluster: it never will.
                    queue.pop()
                    self._reject(app)
                    continue
                break
            queue.pop()
            st.app_state[app] = RUNNING
            st.app_start[app] = t
            if np.isnan(st.app_first_start[app]):
                st.app_first_start[app] = t
            self._start(app, np.arange(first, stop), where, 0, t)
            st.next_elastic[app] = stop
            if stop < cp[app + 1]:
                st.elastic_waiting.add(app)
                self._place_elastic(app, free, t)

    def _place_elastic(self, app: int, free: NDArray[np.float64], t: float) -> None:
        """Place as many of ``app``'s waiting elastic components as fit into ``free``."""
        st = self.state
        wl, end = st.workload, int(st.workload.comp_indptr[app + 1])
        first = int(st.next_elastic[app])
        stop = _kernels.elastic_stop(free, st.min_elastic[app], first, end)
        if stop < 0:
            return
        fresh = np.arange(first, stop, dtype=np.int64)
        returned = st.returned.pop(app)
        if returned is None:  # the usual case; a slice of the requests is a view, not a copy
            waiting, n_returned, request = fresh, 0, wl.request[first:stop]
        else:
            waiting, n_returned = np.concatenate([returned, fresh]), len(returned)
            request = wl.request[waiting]
        where = self.placer.place(st.hosts.capacity, free, st.hosts.up, request)
        still, after = self._start(app, waiting, where, n_returned, t)
        if after >= 0:  # the next pass resumes after the last fresh component placed
            st.next_elastic[app] = after
        if len(still):
            st.returned.set(app, still)
        if st.next_elastic[app] >= end and app not in st.returned:
            st.elastic_waiting.discard(app)

    def _run_loop(self, until: float, pass_at: float | None = None) -> None:
        """Arrivals and completions up to and including ``until`` in the compiled event loop, or
        with ``pass_at`` only the admission pass a tick at that time asks for (see
        ``_kernels.run_events``); provides the rows and room the loop stops for."""
        began = wallclock.perf_counter()
        st = self.state
        ist, wl, hosts, heap, k = self._ist, st.workload, st.hosts, self._heap, _kernels
        ist[k.I_DIRTY], ist[k.I_ARRIVED], ist[k.I_EVENTS] = self._dirty, st.arrived, 0
        ist[k.I_TOP], ist[k.I_FINISHED] = st.free_top, st.finished
        biggest, cap_total = hosts.capacity.max(axis=0), hosts.capacity.sum(0)
        while True:
            ret = st.returned
            status = k.run_events(
                until, pass_at is not None, 0.0 if pass_at is None else pass_at, self._binding,
                st.period, biggest, cap_total, wl.arrival, wl.comp_indptr,
                st.workload_columns(),
                k.AppColumns(
                    st.app_state, st.app_first_start, st.app_start, st.app_end,
                    st.app_done, st.app_size, st.n_core, st.core_total, st.min_elastic,
                    st.next_elastic,
                ),
                st.comp_state,
                k.HostColumns(
                    hosts.capacity, hosts.allocated, hosts.up, self._free_buf, self._free_total,
                    self._dirty_hosts, self._dirty_list,
                ),
                st.free_rows,
                st.row_columns(),
                k.QueueColumns(
                    st.queue.q, st.elastic_waiting.items, st.elastic_waiting.n, ret.off,
                    ret.length, ret.pool, ret.state,
                ),
                k.HeapColumns(
                    heap.time, heap.seq, heap.off, heap.len, heap.rows, heap.epoch, heap.state
                ),
                ist, self._fst, self._snap,
                k.Scratch(
                    self._sc_comps, self._sc_where, self._sc_req, self._raw, self._before,
                    self._buf, self._runs, self._sc_still, self._sums, self._sort_keys,
                    self._sort_idx, self._open, self._bounds, self._message, self._levels,
                    self._failed_free, self._failed_up,
                ),
            )  # fmt: skip
            if status == k.DONE_LOOP:
                break
            need = int(ist[k.I_NEED])
            if status == k.NEED_ROWS:  # where _start grows the table, by as much
                st.free_top = int(ist[k.I_TOP])
                st.grow(need)
                ist[k.I_TOP] = st.free_top
            elif status == k.NEED_BATCHES:
                heap.reserve(need)
            else:
                ret.reserve(need)
        st.rows_moved()  # rows started and stopped
        self._dirty, st.arrived = bool(ist[k.I_DIRTY]), int(ist[k.I_ARRIVED])
        st.free_top, st.finished = int(ist[k.I_TOP]), int(ist[k.I_FINISHED])
        self.stats.events += int(ist[k.I_EVENTS])
        self.stats.seconds_events += wallclock.perf_counter() - began

    # ------------------------------------------------------------------ component life
    def _start(
        self,
        app: int,
        comps: NDArray[np.int64],
        where: NDArray[np.int32],
        n_returned: int,
        t: float,
    ) -> tuple[NDArray[np.int64], int]:
        """Start those of ``app``'s components ``comps`` that were placed (``where`` >= 0); returns
        which of them still wait and where fresh ones resume (see ``_kernels.elastic_outcome``)."""
        st = self.state
        st.rows_moved()
        while True:
            top, still, after, *completions = _kernels.start(
                st.free_rows, st.free_top, comps, where, n_returned, app, t,
                st.workload_columns(), st.row_columns(), st.comp_state,
                st.hosts.allocated, st.period,
            )  # fmt: skip
            if top >= 0:
                break
            st.grow(int(np.count_nonzero(where >= 0)))  # too few free rows: grow, retry
        st.free_top = top
        self._schedule_completions(*completions)
        return still, after

    def preempt(self, rows: NDArray[np.int64]) -> None:
        """A controller stops ``rows`` now: their work is lost (core rows fail their application)."""
        self._kill(rows, Status.KILLED, self.state.now)

    def allocation_shrank(self) -> None:
        """Limits went down: waiting work may fit now, so the next instant runs a scheduling pass."""
        self._dirty = True

    def _release(self, rows: NDArray[np.int64]) -> None:
        st = self.state
        st.rows_moved()
        wt = st.wt
        st.free_top = _kernels.release(
            rows, wt.host, wt.app, wt.limit, st.hosts.allocated, st.free_rows, st.free_top
        )
        self._dirty = True

    def _kill(self, rows: NDArray[np.int64], reason: Status, t: float) -> None:
        """Stop ``rows`` for ``reason`` (OOM or KILLED), with the consequences the model states."""
        st = self.state
        rows = rows[st.wt.host[rows] >= 0]
        self._advance(rows, t)
        if reason == Status.OOM:
            comps = st.wt.component[rows]
            st.comp_ooms[comps] = np.minimum(st.comp_ooms[comps], 254) + 1
        core = st.wt.core[rows]
        failing = np.unique(st.wt.app[rows[core]])
        if len(failing):
            # Speed trick: the rows of every failing application in one pass over the table, not
            # one pass per application (thousands of applications fail a tick at paper scale).
            is_failing = np.zeros(st.workload.n_apps + 1, bool)  # free rows' app -1: the last
            is_failing[failing] = True
            held = np.flatnonzero(is_failing[st.wt.app])
            held_app = st.wt.app[held]
            for app in failing.tolist():
                self._fail_app(app, held[held_app == app], reason)
        elastic = rows[~core & (st.wt.host[rows] >= 0)]
        if len(elastic) == 0:
            return
        comps, apps = st.wt.component[elastic], st.wt.app[elastic]
        lost = st.workload.work[comps] - st.remaining[elastic]
        np.add.at(st.app_work_lost, apps, lost)
        np.add.at(st.app_work_lost_res, apps, lost[:, None] * st.workload.request[comps])
        np.add.at(st.app_component_losses, apps, 1)
        if reason == Status.OOM:
            np.add.at(st.app_component_ooms, apps, 1)
        st.comp_state[comps] = Status.PENDING
        self._release(elastic)
        for app in st.returned.extend(apps, comps).tolist():
            st.elastic_waiting.add(app)

    def _fail_app(self, app: int, rows: NDArray[np.int64], reason: Status) -> None:
        """The whole application stops, loses all its work and requeues at its old position;
        ``rows``: the rows it holds, in order."""
        st = self.state
        wl, cp = st.workload, st.workload.comp_indptr
        span = slice(cp[app], cp[app + 1])
        done = st.comp_state[span] == Status.DONE
        comps = st.wt.component[rows]
        running_lost = wl.work[comps] - st.remaining[rows]
        st.app_work_lost[app] += float(wl.work[span][done].sum()) + float(running_lost.sum())
        st.app_work_lost_res[app] += wl.work[span][done] @ wl.request[span][done].astype(
            np.float64
        ) + running_lost @ wl.request[comps].astype(np.float64)
        self._release(rows)
        st.comp_state[span] = Status.PENDING
        st.app_done[app] = 0
        st.next_elastic[app] = cp[app] + st.n_core[app]
        st.returned.pop(app)
        st.elastic_waiting.discard(app)
        if reason == Status.OOM:
            st.app_failures[app] += 1
        else:
            st.app_preemptions[app] += 1
        st.app_state[app] = QUEUED
        st.queue.push(app)

    # ------------------------------------------------------------------ progress and usage
    def _advance(self, rows: NDArray[np.int64], t: float) -> None:
        """Account the work done by ``rows`` since they were last accounted."""
        st = self.state
        _kernels.advance(rows, t, st.remaining, st.since, st.rate)

    def _schedule_completions(self, rows, epochs, finish, starts) -> None:
        """One completion event per group of rows finishing together (see ``_kernels.set_rates``)."""
        if self._binding is not None:
            self._heap.push(rows, epochs, finish, starts)
            return
        schedule, batches = self.engine.schedule, self._batches
        starts = starts.tolist()
        for i, j in zip(starts[:-1], starts[1:], strict=True):
            batches[self._batch_id] = (rows[i:j], epochs[i:j])
            schedule(float(finish[i]), _PRIORITY[COMPLETE], COMPLETE, self._batch_id)
            self._batch_id += 1

    def _demand(self, rows: NDArray[np.int64], t: float) -> NDArray[np.float32]:
        """(n, R) float32 cores and GiB each row asks for during the interval starting at ``t``."""
        st = self.state
        wt = st.wt
        return _kernels.demand(
            rows,
            t,
            st.period,
            wt.start,
            wt.request,
            st.shape_base,
            st.shape_len,
            st.shape_offset,
            st.workload.shapes.data,
        )

    def _forecast(
        self,
        rows: NDArray[np.int64],
        t: float,
        running: NDArray[np.int64],
        demand: NDArray[np.float32],
    ) -> UsageForecast:
        """One-step forecast of ``rows``' demand (cores, GiB) for the interval starting at ``t``;
        ``demand``: the demand of the rows ``running`` (sorted, including ``rows``) then.

        CPU and memory series of the rows past the controller's grace period go to the forecaster
        as one batch, keyed by ``component * R + resource`` so that online state follows a
        component from tick to tick. Rows still in their grace period keep their request whatever
        a forecast says, so they are not forecast (most components of the traces end within it,
        and a model's order selection on each would dominate the run); they, and rows without a
        sample yet, get mean NaN and std inf.
        """
        st = self.state
        grace = grace_of(self.controller)
        if isinstance(self.forecaster, Oracle):
            # Speed trick: the oracle's forecast is the demand itself, std 0, for the rows with a
            # sample (as forecast_usage gives it); no history to read, no batch to build, and
            # one compiled pass (the paper's world runs 130,000 ticks of ~30,000 rows; tests/sim:
            # equal to the general path).
            mean, std, fallback, count = _step_kernels.oracle_forecast(
                rows, running, demand, t, st.period, grace, st.wt.start
            )
            self.stats.forecasts += count
            return UsageForecast(rows, mean, std, fallback)
        n = len(rows)
        mean, std = np.full((n, R), np.nan), np.full((n, R), np.inf)
        fallback = np.ones(n, bool)
        due = ~in_grace(t, st.wt.start[rows], grace)
        if due.any():
            sub = rows[due]
            future = None
            if capabilities(self.forecaster, ForecasterCapabilities).needs_future:
                future = lambda seen: demand[np.searchsorted(running, sub[seen])]  # noqa: E731
            history = self.view.usage_history(sub, self.forecast_window)
            fc = forecast_usage(self.forecaster, history, sub, st.wt.component[sub], future)
            mean[due], std[due], fallback[due] = fc.mean, fc.std, fc.fallback
            # counted where a fallback changes a decision: rows past the grace period
            counted = history.lengths > 0
            self.stats.forecasts += int(counted.sum())
            self.stats.forecast_fallbacks += int((fc.fallback & counted).sum())
        return UsageForecast(rows, mean, std, fallback)

    # ------------------------------------------------------------------ bookkeeping
    def _reject(self, app: int) -> None:
        st = self.state
        st.app_state[app] = REJECTED
        st.finished += 1

    def _work_left(self) -> bool:
        st = self.state
        return bool(
            len(st.queue)
            or not st.cluster_empty()
            or st.elastic_waiting
            or st.arrived < st.workload.n_apps
        )
