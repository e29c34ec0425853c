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
from reclaim.core.tables import HostTable, WorkloadTable
from reclaim.core.types import MEM, R, Status
from reclaim.forecast.base import Forecaster
from reclaim.forecast.oracle import Oracle
from reclaim.placement.compiled import compiled_binding, message_buffer
from reclaim.placement.framework import Placer
from reclaim.sim import _kernels
from reclaim.sim.view import SimActuator, SimView
from reclaim.workload.model import Workload

# Event kinds; at equal times completions free capacity before arrivals ask for it, and both
# happen before the monitor tick of that instant.
COMPLETE, ARRIVAL, TICK = 0, 1, 2
_PRIORITY = {COMPLETE: 0, ARRIVAL: 1, TICK: 2}

# Per-row arrays beside the workload table, grown with it: the private progress of each row, and
# where its usage shape starts and how long it is (which the view reads for usage histories).
_ROW_ARRAYS = (
    "_remaining",
    "_since",
    "_rate",
    "_epoch",
    "shape_base",
    "shape_len",
    "shape_offset",
)

# Application states (int8).
QUEUED, RUNNING, DONE, REJECTED, WAITING = 0, 1, 2, 3, 4  # WAITING: not yet arrived
assert (QUEUED, RUNNING, DONE, REJECTED) == (
    _kernels.APP_QUEUED,
    _kernels.APP_RUNNING,
    _kernels.APP_DONE,
    _kernels.APP_REJECTED,
)


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
    its fallback."""

    wall_s: float = 0.0
    tick_s: float = 0.0
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
        self.workload = workload.validate()
        self.hosts = hosts
        self.controller = controller
        self.placer = placer
        self.forecaster = forecaster
        self.forecast_window = forecast_window
        if capabilities(controller, ControllerCapabilities).needs_forecast and forecaster is None:
            raise ValueError(f"{type(controller).__name__} needs a forecaster")
        self.horizon = np.inf if horizon is None else float(horizon)
        self.on_tick = on_tick
        self.rules = rules
        self.view = SimView(self)
        self.actuator = SimActuator(self)

    # ------------------------------------------------------------------ set-up
    def _reset(self) -> None:
        wl, n_apps = self.workload, self.workload.n_apps
        cp = wl.comp_indptr
        self.now = 0.0
        self.period = float(wl.period)
        self.comp_state = np.full(wl.n_components, Status.PENDING, np.int8)
        self.comp_ooms = np.zeros(wl.n_components, np.uint8)  # saturates at 255
        self.app_state = np.full(n_apps, WAITING, np.int8)
        self.app_first_start = np.full(n_apps, np.nan)
        self.app_start = np.full(n_apps, np.nan)
        self.app_end = np.full(n_apps, np.nan)
        self.app_failures = np.zeros(n_apps, np.int32)
        self.app_preemptions = np.zeros(n_apps, np.int32)
        self.app_component_losses = np.zeros(n_apps, np.int32)
        self.app_component_ooms = np.zeros(n_apps, np.int32)
        self.app_work_lost = np.zeros(n_apps, np.float64)
        self.app_work_lost_res = np.zeros((n_apps, R), np.float64)  # core-s and GiB-s
        # resource-seconds requested by, allocated to and used by each application, over all its
        # attempts
        self.app_requested = np.zeros((n_apps, R), np.float64)
        self.app_allocated = np.zeros((n_apps, R), np.float64)
        self.app_used = np.zeros((n_apps, R), np.float64)
        self.app_done = np.zeros(n_apps, np.int64)
        self.app_size = np.diff(cp)
        # Core components and their summed request per app; its smallest elastic request (inf
        # where none): a cheap "can anything fit" check.
        self.n_core, self.core_total, self.min_elastic = app_totals(cp, wl.core, wl.request)
        self.next_elastic = cp[:-1] + self.n_core
        # components returned to wait again, per application, in order
        self.returned = _kernels.ComponentLists(n_apps, max(1024, n_apps))
        self.elastic_waiting = _kernels.AppSet(n_apps)
        self.queue = _kernels.AppQueue(self.app_state)
        self.hosts.allocated[:] = 0
        self.hosts.used[:] = 0
        self.wt = WorkloadTable.empty(1024)
        self._remaining = np.zeros(1024)
        self._since = np.zeros(1024)
        self._rate = np.ones(1024)
        # Free rows as a stack, ``_free_rows[:_free_top]``, popped and pushed at the top.
        self._free_rows = np.arange(1023, -1, -1, dtype=np.int64)
        self._free_top = 1024
        self._epoch = np.zeros(1024, np.int64)
        # Per row: where its usage shape starts in shapes.data, its length and start offset;
        # cached at start so that every tick reads small row arrays, not the (C,) component ones.
        self.shape_base = np.zeros(1024, np.int64)
        self.shape_len = np.ones(1024, np.int64)
        self.shape_offset = np.zeros(1024, np.int64)
        self._batches: dict[int, tuple[NDArray[np.int64], NDArray[np.int64]]] = {}
        self._free_buf = np.empty_like(self.hosts.capacity)
        self._arrived = 0
        self.finished = 0  # applications done or rejected
        self._batch_id = 0
        self._dirty = True
        self._rows: NDArray[np.int64] | None = None  # see running_rows
        self._timeline: list[NDArray[np.float64]] = []
        # components stopped by an out-of-memory failure at the last tick and their memory demand
        self.last_ooms: tuple[NDArray[np.int64], NDArray[np.float32]] = (
            np.empty(0, np.int64),
            np.empty(0, np.float32),
        )
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
                (t, _PRIORITY[ARRIVAL], ARRIVAL, a) for a, t in enumerate(wl.arrival)
            )
        self.engine.schedule(0.0, _PRIORITY[TICK], TICK, 0)

    def _reset_loop(self) -> None:
        """State and scratch of the compiled event loop; the engine keeps only the ticks."""
        width = int(self.app_size.max()) if len(self.app_size) else 1
        self._heap = _kernels.CompletionHeap()
        self._ist = np.zeros(_kernels.I_SIZE, np.int64)
        self._fst = np.zeros(2)
        self._snap = np.empty(self.workload.n_apps, np.int64)
        self._sc_comps = np.empty(width, np.int64)
        self._sc_where = np.empty(width, np.int32)
        self._sc_req = np.empty((width, R), np.float32)
        self._raw = np.empty(len(self.hosts))
        self._before = np.empty_like(self.hosts.capacity)
        self._buf = np.empty(R)
        self._runs = np.empty(width + 1, np.int64)
        self._sc_still = np.empty(width, np.int64)
        self._sums = np.empty_like(self.hosts.capacity)
        self._sort_keys = np.empty((2, width))
        self._sort_idx = np.empty((2, width), np.int64)
        self._open = np.empty(len(self.hosts), np.bool_)
        self._bounds = np.empty(width + 1, np.int64)
        self._message = message_buffer(len(self.hosts), R)
        self._levels = np.empty(len(self.hosts))
        self._failed_free = np.empty_like(self.hosts.capacity)
        self._failed_up = np.empty(len(self.hosts), np.bool_)
        self._dirty_hosts = np.zeros(len(self.hosts), np.bool_)
        self._dirty_list = np.empty(len(self.hosts), np.int64)
        self._free_total = np.empty(R)
        self._ist[_kernels.I_RUNS_APP] = -1
        self._ist[_kernels.I_FAILED_APP] = -1

    # ------------------------------------------------------------------ run
    def run(self) -> Simulator:
        """Run to completion of every application (or to the horizon); returns self."""
        started = wallclock.perf_counter()
        self._reset()
        self.engine.run(until=self.horizon)
        last = self.engine.now
        if self._binding is not None:
            self._run_loop(self.horizon)  # events after the last tick
            last = max(last, float(self._fst[_kernels.F_LAST]))
        self.now = min(last, self.horizon) if np.isfinite(self.horizon) else last
        self.stats.wall_s = wallclock.perf_counter() - started
        return self

    @property
    def timeline(self) -> NDArray[np.float64]:
        """(T, 3 + 2R) per tick: time, running components, queued apps, allocated[R], used[R]."""
        if not self._timeline:
            return np.empty((0, 3 + 2 * R))
        return np.stack(self._timeline)

    # ------------------------------------------------------------------ events
    def _on_arrival(self, t: float, app: int) -> None:
        self.stats.events += 1
        self.now = t
        self._arrived += 1
        wl, cp = self.workload, self.workload.comp_indptr
        request = wl.request[cp[app] : cp[app + 1]]
        biggest = self.hosts.capacity.max(axis=0)
        if np.any(request > biggest) or np.any(self.core_total[app] > self.hosts.capacity.sum(0)):
            self._reject(app)
            return
        self.app_state[app] = QUEUED
        self.queue.push(app)
        self._dirty = True
        self._schedule(t)

    def _on_complete(self, t: float, batch: int) -> None:
        self.stats.events += 1
        self.now = t
        rows, epoch = self._batches.pop(batch)
        wt = self.wt
        n, self._free_top, finished = _kernels.complete(
            rows,
            epoch,
            self._epoch,
            wt.host,
            wt.app,
            wt.component,
            wt.limit,
            self.hosts.allocated,
            self._free_rows,
            self._free_top,
            self.comp_state,
            self.app_done,
            self.app_size,
        )
        if n == 0:
            return
        self._dirty = True
        if len(finished):
            self.app_state[finished] = DONE
            self.app_end[finished] = t
            self.finished += len(finished)
        self._schedule(t)

    def _on_tick(self, t: float, _: int) -> None:
        if self._binding is not None:
            self._run_loop(t)  # arrivals and completions up to this instant come first
        self.now = t
        if not self._work_left():
            return
        self.stats.ticks += 1
        began = wallclock.perf_counter()
        self._rows = None
        rows = self.running_rows()
        self._advance(rows, t)
        # The demand of the coming interval, read once for the tick (the oracle's forecast is
        # it): no row starts before the next tick, and those the controller stops drop out.
        demand = self._demand(rows, t)
        if len(rows):
            forecast = lambda due: self._forecast(due, t, rows, demand)  # noqa: E731
            control_step(self.view, self.controller, forecast, self.actuator)
            if len(self.view.running) < len(rows):
                kept = np.searchsorted(rows, self.view.running)
                rows, demand = rows[kept], demand[kept]
        oom = _kernels.over_limit(rows, demand, self.wt.limit)
        if capabilities(self.controller, ControllerCapabilities).soft_memory_limits:
            oom = _kernels.host_oom_victims(
                self.wt.host[rows], demand[:, MEM], self.hosts.capacity[:, MEM]
            )
        if oom.any():
            self.last_ooms = (self.wt.component[rows[oom]].astype(np.int64), demand[oom, MEM])
            self._kill(rows[oom], Status.OOM, t)
            alive = self.wt.host[rows] >= 0  # a failed application takes its other rows along
            rows, demand = rows[alive], demand[alive]
        else:
            self.last_ooms = (np.empty(0, np.int64), np.empty(0, np.float32))
        self.stats.component_ticks += len(rows)
        # Usage, host totals recomputed from scratch (so that incremental sums cannot drift), the
        # applications' totals, the timeline's sums and the new rates, in one compiled call.
        wt, totals = self.wt, np.empty(2 * R)
        completions = _kernels.observe(
            rows,
            demand,
            t,
            self.period,
            wt.host,
            wt.app,
            wt.request,
            wt.limit,
            wt.used,
            self.hosts.allocated,
            self.hosts.used,
            self.app_requested,
            self.app_allocated,
            self.app_used,
            self._remaining,
            self._rate,
            self._epoch,
            totals,
            self.rules.throttle_cpu,
        )
        self._timeline.append(np.concatenate([[t, len(rows), len(self.queue)], totals]))
        self._schedule_completions(*completions)
        self._rows = None
        self.stats.tick_s += wallclock.perf_counter() - began
        self._schedule(t)
        if self.on_tick is not None:
            self.on_tick(self)
        self.engine.schedule(t + self.period, _PRIORITY[TICK], TICK, 0)

    # ------------------------------------------------------------------ scheduling
    def _schedule(self, t: float) -> None:
        """Place waiting elastic components, then admit queued applications head first."""
        if not self._dirty:
            return
        if self._binding is not None:
            self._run_loop(t, pass_at=t)
            return
        self._dirty = False
        hosts = self.hosts
        free = _kernels.free_capacity(hosts.capacity, hosts.allocated, hosts.up, self._free_buf)
        for app in self.elastic_waiting.sorted():
            self._place_elastic(app, free, t)
        queue, wl, cp = self.queue, self.workload, self.workload.comp_indptr
        while queue:
            app = queue.head()
            if not _kernels.total_covers(free, self.core_total[app]):
                break
            first, stop = int(cp[app]), int(cp[app] + self.n_core[app])
            request = wl.request[first:stop]  # core components come first: a view, not a copy
            if _kernels.may_fit(free, hosts.up, request):
                where = self.placer.place(hosts.capacity, free, hosts.up, request, True)
            else:  # hopeless; most attempts are, and asking the placer costs more
                where = np.full(stop - first, -1, np.int32)
            if stop > first and where[0] < 0:
                if self._cluster_empty():
                    # The placer cannot fit it on an empty cluster: it never will.
                    queue.pop()
                    self._reject(app)
                    continue
                break
            queue.pop()
            self.app_state[app] = RUNNING
            self.app_start[app] = t
            if np.isnan(self.app_first_start[app]):
                self.app_first_start[app] = t
            self._start(app, np.arange(first, stop), where, 0, t)
            self.next_elastic[app] = stop
            if stop < cp[app + 1]:
                self.elastic_waiting.add(app)
                self._place_elastic(app, free, t)

    def _place_elastic(self, app: int, free: NDArray[np.float64], t: float) -> None:
        """Place as many of ``app``'s waiting elastic components as fit into ``free``."""
        wl, end = self.workload, int(self.workload.comp_indptr[app + 1])
        first = int(self.next_elastic[app])
        stop = _kernels.elastic_stop(free, self.min_elastic[app], first, end)
        if stop < 0:
            return
        fresh = np.arange(first, stop, dtype=np.int64)
        returned = self.returned.pop(app)
        if returned is None:  # the usual case; a slice of the requests is a view, not a copy
            waiting, n_returned, request = fresh, 0, wl.request[first:stop]
        else:
            waiting, n_returned = np.concatenate([returned, fresh]), len(returned)
            request = wl.request[waiting]
        where = self.placer.place(self.hosts.capacity, free, self.hosts.up, request)
        still, after = self._start(app, waiting, where, n_returned, t)
        if after >= 0:  # the next pass resumes after the last fresh component placed
            self.next_elastic[app] = after
        if len(still):
            self.returned.set(app, still)
        if self.next_elastic[app] >= end and app not in self.returned:
            self.elastic_waiting.discard(app)

    def _run_loop(self, until: float, pass_at: float | None = None) -> None:
        """Arrivals and completions up to and including ``until`` in the compiled event loop, or
        with ``pass_at`` only the admission pass a tick at that time asks for (see
        ``_kernels.run_events``); provides the rows and room the loop stops for."""
        ist, wl, hosts, heap, k = self._ist, self.workload, self.hosts, self._heap, _kernels
        ist[k.I_DIRTY], ist[k.I_ARRIVED], ist[k.I_EVENTS] = self._dirty, self._arrived, 0
        ist[k.I_TOP], ist[k.I_FINISHED] = self._free_top, self.finished
        biggest, cap_total = hosts.capacity.max(axis=0), hosts.capacity.sum(0)
        while True:
            ret = self.returned
            status = k.run_events(
                until, pass_at is not None, 0.0 if pass_at is None else pass_at, self._binding,
                self.period, biggest, cap_total, wl.arrival, wl.comp_indptr,
                self._workload_columns(),
                k.AppColumns(
                    self.app_state, self.app_first_start, self.app_start, self.app_end,
                    self.app_done, self.app_size, self.n_core, self.core_total, self.min_elastic,
                    self.next_elastic,
                ),
                self.comp_state,
                k.HostColumns(
                    hosts.capacity, hosts.allocated, hosts.up, self._free_buf, self._free_total,
                    self._dirty_hosts, self._dirty_list,
                ),
                self._free_rows,
                self._row_columns(),
                k.QueueColumns(
                    self.queue.q, self.elastic_waiting.items, self.elastic_waiting.n, ret.off,
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
                self._free_top = int(ist[k.I_TOP])
                self._grow(need)
                ist[k.I_TOP] = self._free_top
            elif status == k.NEED_BATCHES:
                heap.reserve(need)
            else:
                ret.reserve(need)
        self._rows = None  # rows started and stopped
        self._dirty, self._arrived = bool(ist[k.I_DIRTY]), int(ist[k.I_ARRIVED])
        self._free_top, self.finished = int(ist[k.I_TOP]), int(ist[k.I_FINISHED])
        self.stats.events += int(ist[k.I_EVENTS])

    # ------------------------------------------------------------------ component life
    def _grow(self, n: int) -> None:
        """Grow the workload table (doubling) so that at least ``n`` of its rows are free."""
        old, top = len(self.wt), self._free_top
        size = max(2 * old, old + n)
        self.wt = self.wt.grown(size)
        for name in _ROW_ARRAYS:
            arr = getattr(self, name)
            grown = np.zeros(size, arr.dtype)
            grown[:old] = arr
            setattr(self, name, grown)
        stack = np.empty(size, np.int64)
        stack[:top] = self._free_rows[:top]
        stack[top : top + size - old] = np.arange(size - 1, old - 1, -1)
        self._free_rows, self._free_top = stack, top + size - old

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
        self._rows = None
        while True:
            top, still, after, *completions = _kernels.start(
                self._free_rows, self._free_top, comps, where, n_returned, app, t,
                self._workload_columns(), self._row_columns(), self.comp_state,
                self.hosts.allocated, self.period,
            )  # fmt: skip
            if top >= 0:
                break
            self._grow(int(np.count_nonzero(where >= 0)))  # too few free rows: grow, retry
        self._free_top = top
        self._schedule_completions(*completions)
        return still, after

    def _workload_columns(self) -> _kernels.WorkloadColumns:
        wl = self.workload
        return _kernels.WorkloadColumns(
            wl.request, wl.work, wl.core, wl.shape, wl.shape_offset, wl.shapes.indptr,
            wl.shapes.data,
        )  # fmt: skip

    def _row_columns(self) -> _kernels.RowColumns:
        """The workload table's columns and the per-row progress, as the kernels take them (fresh
        each call: growing the table replaces the arrays)."""
        wt = self.wt
        return _kernels.RowColumns(
            wt.component, wt.app, wt.host, wt.request, wt.limit, wt.core, wt.start,
            self._remaining, self._since, self._rate, self._epoch, self.shape_base,
            self.shape_len, self.shape_offset,
        )  # fmt: skip

    def running_rows(self) -> NDArray[np.int64]:
        """(n,) int64 rows in use, in order. Speed trick: within a tick, where the controller
        and the tick read them several times, computed once until rows start or stop."""
        if self._rows is None:
            self._rows = np.flatnonzero(self.wt.host >= 0)
        return self._rows

    def preempt(self, rows: NDArray[np.int64]) -> None:
        """A controller stops ``rows`` now: their work is lost (core rows fail their application)."""
        self._kill(rows, Status.KILLED, self.now)

    def allocation_shrank(self) -> None:
        """Limits went down: waiting work may fit now, so the next instant runs a scheduling pass."""
        self._dirty = True

    def _release(self, rows: NDArray[np.int64]) -> None:
        self._rows = None
        wt = self.wt
        self._free_top = _kernels.release(
            rows, wt.host, wt.app, wt.limit, self.hosts.allocated, self._free_rows, self._free_top
        )
        self._dirty = True

    def _kill(self, rows: NDArray[np.int64], reason: Status, t: float) -> None:
        """Stop ``rows`` for ``reason`` (OOM or KILLED), with the consequences the model states."""
        rows = rows[self.wt.host[rows] >= 0]
        self._advance(rows, t)
        if reason == Status.OOM:
            comps = self.wt.component[rows]
            self.comp_ooms[comps] = np.minimum(self.comp_ooms[comps], 254) + 1
        core = self.wt.core[rows]
        failing = np.unique(self.wt.app[rows[core]])
        if len(failing):
            # Speed trick: the rows of every failing application in one pass over the table, not
            # one pass per application (thousands of applications fail a tick at paper scale).
            held = np.flatnonzero(np.isin(self.wt.app, failing))
            held_app = self.wt.app[held]
            for app in failing.tolist():
                self._fail_app(app, held[held_app == app], reason)
        elastic = rows[~core & (self.wt.host[rows] >= 0)]
        if len(elastic) == 0:
            return
        comps, apps = self.wt.component[elastic], self.wt.app[elastic]
        lost = self.workload.work[comps] - self._remaining[elastic]
        np.add.at(self.app_work_lost, apps, lost)
        np.add.at(self.app_work_lost_res, apps, lost[:, None] * self.workload.request[comps])
        np.add.at(self.app_component_losses, apps, 1)
        if reason == Status.OOM:
            np.add.at(self.app_component_ooms, apps, 1)
        self.comp_state[comps] = Status.PENDING
        self._release(elastic)
        for app in self.returned.extend(apps, comps).tolist():
            self.elastic_waiting.add(app)

    def _fail_app(self, app: int, rows: NDArray[np.int64], reason: Status) -> None:
        """The whole application stops, loses all its work and requeues at its old position;
        ``rows``: the rows it holds, in order."""
        wl, cp = self.workload, self.workload.comp_indptr
        span = slice(cp[app], cp[app + 1])
        done = self.comp_state[span] == Status.DONE
        comps = self.wt.component[rows]
        running_lost = wl.work[comps] - self._remaining[rows]
        self.app_work_lost[app] += float(wl.work[span][done].sum()) + float(running_lost.sum())
        self.app_work_lost_res[app] += wl.work[span][done] @ wl.request[span][done].astype(
            np.float64
        ) + running_lost @ wl.request[comps].astype(np.float64)
        self._release(rows)
        self.comp_state[span] = Status.PENDING
        self.app_done[app] = 0
        self.next_elastic[app] = cp[app] + self.n_core[app]
        self.returned.pop(app)
        self.elastic_waiting.discard(app)
        if reason == Status.OOM:
            self.app_failures[app] += 1
        else:
            self.app_preemptions[app] += 1
        self.app_state[app] = QUEUED
        self.queue.push(app)

    # ------------------------------------------------------------------ progress and usage
    def _advance(self, rows: NDArray[np.int64], t: float) -> None:
        """Account the work done by ``rows`` since they were last accounted."""
        _kernels.advance(rows, t, self._remaining, self._since, self._rate)

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
        wt = self.wt
        return _kernels.demand(
            rows,
            t,
            self.period,
            wt.start,
            wt.request,
            self.shape_base,
            self.shape_len,
            self.shape_offset,
            self.workload.shapes.data,
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
        n = len(rows)
        mean, std = np.full((n, R), np.nan), np.full((n, R), np.inf)
        fallback = np.ones(n, bool)
        due = ~in_grace(t, self.wt.start[rows], grace_of(self.controller))
        if due.any() and isinstance(self.forecaster, Oracle):
            # Speed trick: the oracle's forecast is the demand itself, std 0, for the rows with a
            # sample (as forecast_usage gives it); no history to read, no batch to build. The
            # paper's world runs 130,000 ticks; profiled there at 600 applications, forecasting
            # fell from 2.3 to 0.34 ms a tick (tests/sim: equal to the general path).
            sub = rows[due]
            seen = t - self.wt.start[sub] >= self.period
            sub = sub[seen]
            idx = np.flatnonzero(due)[seen]
            # rows are the running ones, or a subset of them (sorted both)
            at = idx if n == len(running) else np.searchsorted(running, sub)
            mean[idx] = demand[at]
            std[idx] = 0.0
            fallback[idx] = False
            self.stats.forecasts += len(sub)
        elif due.any():
            sub = rows[due]
            future = None
            if capabilities(self.forecaster, ForecasterCapabilities).needs_future:
                future = lambda seen: demand[np.searchsorted(running, sub[seen])]  # noqa: E731
            history = self.view.usage_history(sub, self.forecast_window)
            fc = forecast_usage(self.forecaster, history, sub, self.wt.component[sub], future)
            mean[due], std[due], fallback[due] = fc.mean, fc.std, fc.fallback
            # counted where a fallback changes a decision: rows past the grace period
            counted = history.lengths > 0
            self.stats.forecasts += int(counted.sum())
            self.stats.forecast_fallbacks += int((fc.fallback & counted).sum())
        return UsageForecast(rows, mean, std, fallback)

    # ------------------------------------------------------------------ bookkeeping
    def _reject(self, app: int) -> None:
        self.app_state[app] = REJECTED
        self.finished += 1

    def _cluster_empty(self) -> bool:
        return self._free_top == len(self.wt)  # every row is free

    def _work_left(self) -> bool:
        return bool(
            len(self.queue)
            or not self._cluster_empty()
            or self.elastic_waiting
            or self._arrived < self.workload.n_apps
        )


def app_totals(
    indptr: NDArray[np.int64], core: NDArray[np.bool_], request: NDArray[np.float32], block=1 << 22
) -> tuple[NDArray[np.int64], NDArray[np.float32], NDArray[np.float32]]:
    """Per application (components ``indptr[a]:indptr[a+1]``): how many core components, their
    summed request and the smallest elastic request, inf where none, (A, R) as ``request`` (float32).

    Exactly ``np.add.reduceat(core)``, ``np.add.reduceat(request * core[:, None], axis=0)`` and
    ``np.minimum.reduceat(np.where(core[:, None], inf, request), axis=0)``, computed a block of
    about ``block`` components at a time in reused buffers. Speed trick: at paper scale (1.4e8
    components) the whole-workload temporaries are 4 GB, and the kernel's zeroing of their fresh
    pages cost more than the sums (benchmarks/bench_simulate.py).
    """
    n_apps = len(indptr) - 1
    n_core = np.empty(n_apps, np.int64)
    core_total = np.empty((n_apps, R), request.dtype)
    min_elastic = np.empty((n_apps, R), request.dtype)
    counts = np.empty(block, np.int64)
    values = np.empty((block, R), request.dtype)
    a = 0
    while a < n_apps:
        b = max(a + 1, int(np.searchsorted(indptr, indptr[a] + block, side="right")) - 1)
        first, stop = int(indptr[a]), int(indptr[b])
        m = stop - first
        if m > len(counts):
            counts, values = np.empty(m, np.int64), np.empty((m, R), request.dtype)
        starts = indptr[a:b] - first
        is_core = core[first:stop]
        counts[:m] = is_core
        n_core[a:b] = np.add.reduceat(counts[:m], starts)
        np.multiply(request[first:stop], is_core[:, None], out=values[:m])
        core_total[a:b] = np.add.reduceat(values[:m], starts, axis=0)
        values[:m] = request[first:stop]
        values[:m][is_core] = np.inf
        min_elastic[a:b] = np.minimum.reduceat(values[:m], starts, axis=0)
        a = b
    return n_core, core_total, min_elastic
