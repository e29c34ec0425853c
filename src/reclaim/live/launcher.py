"""The live launcher: a workload's applications admitted FIFO as real processes, shaped (or not)
by the agent, with the simulator's rules and its result tables.

It replays the simulator's model (``reclaim.sim.simulator``) on this machine, so one workload
runs both ways and the two can be compared:

- Admission. Applications queue in arrival order. The head is admitted when all its core
  components fit what is not yet allocated (placed together or not at all), then as many elastic
  components as fit; elastic components left over wait and go first, in application order,
  whenever room frees. Strict FIFO. "Allocated" is each running component's reservation until
  the agent has shaped it, then the agent's current limit: reservations in the baseline, shaped
  allocations with the pessimistic policy. Applications that can never fit are rejected.
- Processes. Each component is ``component.py`` in its own cgroup under the run's parent, with
  its reservation as CPU quota and as soft and hard memory limit; its usage follows its shape
  from its offset, and it exits when its work is done, slower when throttled.
- Failures. A component stopped by SIGKILL was preempted if the agent killed it that period,
  out of memory if its cgroup's kernel OOM counter rose, lost otherwise. A core component's
  failure stops its application, which returns to the queue at its place; an elastic one
  waits to be placed again. A component is relaunched only after the agent has seen it stop, so
  its history and grace start afresh.
- Time runs ``time_factor`` times faster than the trace; every time reported is trace time, and
  every amount is in the simulated host's units (live amounts divided by the scale).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from enum import IntEnum
from pathlib import Path

import numpy as np

from reclaim.agent.config import AgentSettings, Components
from reclaim.agent.loop import Agent
from reclaim.core.types import R
from reclaim.live.host import LiveHost
from reclaim.live.scenario import LiveScenario
from reclaim.metrics import (
    summarize_applications,
    summarize_timeline,
    timeline_table,
)
from reclaim.sim.results import SimResult, tally_table
from reclaim.sim.simulator import RunStats
from reclaim.sim.state import DONE, QUEUED, REJECTED, RUNNING, WAITING
from reclaim.workload.model import Workload

COMPONENT_PROGRAM = Path(__file__).with_name("component.py")
#: Component states: not running (never started, or waiting to be placed again), running, done.
IDLE, UP, FINISHED = 0, 1, 2
#: How often the launcher looks at its processes and the queue, wall seconds.
POLL_S = 0.05

MODES = {
    "reservation": {"controller": "reservation"},
    "shaped": {"controller": "pessimistic"},
}


class Interrupted(Exception):
    """SIGTERM or SIGINT arrived: unwind, and let the host kill everything."""


class Outcome(IntEnum):
    """How a component that did not finish its work stopped."""

    PREEMPTED = 1  # the agent killed it (Algorithm 1)
    OOM = 2  # the kernel's OOM killer did (its cgroup's counter rose)
    LOST = 3  # something else did


class LiveRun:
    """One run of ``workload`` in ``mode`` ('reservation' or 'shaped') on the host the scenario
    scales to; ``run()`` returns a :class:`SimResult` (the simulator's tables)."""

    def __init__(
        self,
        workload: Workload,
        scenario: LiveScenario,
        mode: str,
        out: Path,
        root: Path | str = "/sys/fs/cgroup",
        parent: str = "reclaim-live",
        on_period=None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES)}, got {mode!r}")
        self.workload, self.scenario, self.mode = workload, scenario, mode
        self.out, self.root, self.parent = Path(out), root, parent
        self.on_period = on_period

    # ------------------------------------------------------------------ set-up
    def _names(self) -> list[str]:
        wl = self.workload
        app = wl.app_of_component
        first = wl.comp_indptr[app]
        return [f"a{a:04d}-c{c - f:03d}" for c, (a, f) in enumerate(zip(app, first, strict=True))]

    def _agent_settings(self, names: list[str]) -> AgentSettings:
        sc, wl, f = self.scenario, self.workload, self.scenario.time_factor
        shaped = self.mode == "shaped"
        return AgentSettings(
            parent=self.parent,
            components=Components(
                names=names,
                apps=[f"app{a}" for a in range(wl.n_apps)],
                app=wl.app_of_component,
                core=wl.core,
                request=(wl.request * sc.scale).astype(np.float32),
            ),
            database=self.out / "agent.db",
            cgroup_root=Path(self.root),
            period_s=sc.period_s / f,
            grace_s=sc.grace_s / f,
            controller=MODES[self.mode]["controller"],
            forecaster=sc.forecaster if shaped else "naive",
            k1=sc.k1,
            k2=sc.k2,
            host_cpu=sc.live_cores,
            host_mem_gib=sc.live_mem_gib,
            wait_for_cgroups=True,
        )

    def _shape_files(self) -> list[Path]:
        """Each shape a component uses, as the raw float32 file ``component.py`` reads."""
        folder = self.out / "shapes"
        folder.mkdir(parents=True, exist_ok=True)
        shapes = self.workload.shapes
        files = [folder / f"{s}.f32" for s in range(len(shapes))]
        for s in np.unique(self.workload.shape):
            data = shapes.data[shapes.indptr[s] : shapes.indptr[s + 1]]
            np.ascontiguousarray(data, "<f4").tofile(files[s])
        return files

    # ------------------------------------------------------------------ the run
    def run(self) -> SimResult:
        sc, wl = self.scenario, self.workload
        self.out.mkdir(parents=True, exist_ok=True)
        names = self._names()
        capacity = np.array([sc.host_cores, sc.host_mem_gib])
        handler = signal.getsignal(signal.SIGTERM)

        def interrupt(*_):
            raise Interrupted

        signal.signal(signal.SIGTERM, interrupt)
        began = time.monotonic()
        try:
            with LiveHost(self.root, self.parent, sc.live_cores, sc.live_mem_gib) as host:
                for c, name in enumerate(names):
                    cores, mem = wl.request[c] * sc.scale
                    host.prepare(name, float(cores), float(mem))
                state = _State(wl, capacity)
                agent = Agent(self._agent_settings(names), cgroups=host.cgroups)
                try:
                    self._loop(host, agent, state, names)
                finally:
                    state.kill_all(host, names)
                    agent.close()
                    oom_total = sum(host.oom_kills(n) for n in names)
                    parent_ooms = host.oom_kills()
        except KeyboardInterrupt:
            raise Interrupted from None
        finally:
            signal.signal(signal.SIGTERM, handler)
        return self._result(state, capacity, oom_total, parent_ooms, time.monotonic() - began)

    def _loop(self, host: LiveHost, agent: Agent, state: _State, names: list[str]) -> None:
        sc, wl = self.scenario, self.workload
        f = sc.time_factor
        files = self._shape_files()
        t0 = time.monotonic()
        next_period, steps = 0.0, 0
        row = {name: c for c, name in enumerate(names)}
        while not state.finished():
            now = (time.monotonic() - t0) * f
            state.reap(now, host, names, steps)
            state.arrive(now)
            for c in state.admit(now, steps):
                host.prepare(names[c], *(float(x) for x in wl.request[c] * sc.scale))
                state.launch(c, now, host, names[c], files, sc, host.oom_kills(names[c]))
            if now >= next_period:
                report = agent.step()
                steps += 1
                state.agent_killed.update(row[name] for name in report.killed)
                state.account(now, agent, sc.scale, sc.period_s, steps)
                next_period += sc.period_s
                if self.on_period is not None:
                    self.on_period(now, state)
            time.sleep(POLL_S)

    def _result(self, state, capacity, oom_total, parent_ooms, wall_s) -> SimResult:
        wl, sc = self.workload, self.scenario
        apps = tally_table(wl.arrival, state)
        timeline = timeline_table(np.asarray(state.timeline), capacity[None, :])
        summary = summarize_applications(apps) | summarize_timeline(timeline)
        summary |= {
            "kernel_oom_kills": float(oom_total),
            "kernel_parent_oom_kills": float(parent_ooms),
            "oom_stops": float(state.oom_stops),
            "agent_preemptions": float(state.agent_kills),
            "lost_stops": float(state.lost_stops),
            "launches": float(state.launches),
            "wall_s": wall_s,
            "simulated_days": state.now / 86400.0,
        }
        settings = {"mode": self.mode, "parent": self.parent} | sc.params()
        stats = RunStats(wall_s=wall_s, ticks=len(state.timeline))
        return SimResult(apps, timeline, summary, stats, settings)


class _State:
    """The run's columnar state: per application (A) and per component (C), in trace time and
    the simulated host's units."""

    def __init__(self, wl: Workload, capacity: np.ndarray) -> None:
        a, c = wl.n_apps, wl.n_components
        self.wl, self.capacity = wl, capacity
        self.app_of = wl.app_of_component
        self.now = 0.0
        self.app_state = np.full(a, WAITING, np.int8)
        self.app_state[wl.never_fits(capacity[None, :])] = REJECTED
        self.app_first_start, self.app_start, self.app_end = (np.full(a, np.nan) for _ in range(3))
        self.app_size = np.diff(wl.comp_indptr).astype(np.int32)
        self.app_failures, self.app_preemptions = np.zeros(a, np.int32), np.zeros(a, np.int32)
        self.app_component_losses, self.app_component_ooms = (
            np.zeros(a, np.int32),
            np.zeros(a, np.int32),
        )
        self.app_work_lost, self.app_work_lost_res = np.zeros(a), np.zeros((a, R))
        self.app_requested, self.app_allocated, self.app_used = (np.zeros((a, R)) for _ in range(3))
        self.comp_state = np.full(c, IDLE, np.int8)
        self.launched = np.full(c, np.nan)
        self.held = np.zeros((c, R))  # what admission counts as allocated, per component
        self.stopped_step = np.full(c, -1, np.int64)  # the agent step count when it last stopped
        self.ooms_at_launch = np.zeros(c, np.int64)
        self.procs: dict[int, subprocess.Popen] = {}
        self.agent_killed: set[int] = set()  # components the agent killed, not yet reaped
        self.timeline: list[list[float]] = []
        self.oom_stops = self.agent_kills = self.lost_stops = self.launches = 0

    def finished(self) -> bool:
        return bool(np.all((self.app_state == DONE) | (self.app_state == REJECTED)))

    def arrive(self, now: float) -> None:
        self.now = now
        due = (self.app_state == WAITING) & (self.wl.arrival <= now)
        self.app_state[due] = QUEUED

    # ------------------------------------------------------------------ admission
    def admit(self, now: float, steps: int) -> list[int]:
        """Components to launch now: waiting elastic ones of running applications first, then
        queue heads whose core components fit, with as many elastic ones as fit."""
        wl, cp = self.wl, self.wl.comp_indptr
        free = self.capacity - self.held.sum(axis=0)
        out: list[int] = []

        def fits(rows) -> bool:
            need = wl.request[rows].sum(axis=0)
            return bool(np.all(need <= free + 1e-9))

        ready = (self.comp_state == IDLE) & (self.stopped_step < steps)
        waiting = np.flatnonzero(ready & ~wl.core & (self.app_state[self.app_of] == RUNNING))
        for c in waiting:
            if fits([c]):
                out.append(int(c))
                free -= wl.request[c]
        for a in np.flatnonzero(self.app_state == QUEUED):
            rows = np.arange(cp[a], cp[a + 1])
            if not np.all(ready[rows]):
                break  # its components from the last attempt are still being cleared
            core = rows[wl.core[rows]]
            if not fits(core):
                break
            self.app_state[a] = RUNNING
            self.app_start[a] = now
            if np.isnan(self.app_first_start[a]):
                self.app_first_start[a] = now
            for c in core:
                out.append(int(c))
                free -= wl.request[c]
            for c in rows[~wl.core[rows]]:
                if fits([c]):
                    out.append(int(c))
                    free -= wl.request[c]
        return out

    def launch(self, c, now, host, name, files, sc, ooms) -> None:
        wl, f = self.wl, sc.time_factor
        cores, mem = wl.request[c] * sc.scale
        cmd = host.join_command(name) + [
            sys.executable,
            "-I",
            "-S",
            str(COMPONENT_PROGRAM),
            "--shape", str(files[wl.shape[c]]),
            "--offset", str(int(wl.shape_offset[c])),
            "--cores", f"{cores:.6g}",
            "--mib", f"{mem * 1024:.6g}",
            "--period", f"{wl.period / f:.6g}",
            "--work", f"{wl.work[c] / f:.6g}",
        ]  # fmt: skip
        # a session of its own: a Ctrl-C reaches the launcher alone, which then kills everything
        self.procs[c] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)
        self.comp_state[c] = UP
        self.launched[c] = now
        self.held[c] = wl.request[c]
        self.ooms_at_launch[c] = ooms
        self.launches += 1

    # ------------------------------------------------------------------ ends
    def reap(self, now, host, names, steps) -> None:
        # core components first: an application stopped whole counts once, as the simulator does
        for c in sorted(self.procs, key=lambda c: (not self.wl.core[c], c)):
            proc = self.procs.get(c)
            code = None if proc is None else proc.poll()
            if code is None:
                continue
            del self.procs[c]
            preempted = c in self.agent_killed
            self._stopped(c, steps)
            if code == 0:
                self.comp_state[c] = FINISHED
                self._maybe_done(self.app_of[c], now)
                continue
            if preempted:
                outcome = Outcome.PREEMPTED
                self.agent_kills += 1
            elif host.oom_kills(names[c]) > self.ooms_at_launch[c]:
                outcome = Outcome.OOM
                self.oom_stops += 1
            else:
                outcome = Outcome.LOST
                self.lost_stops += 1
            self._fail(c, outcome, now, host, names, steps)

    def _stopped(self, c, steps) -> None:
        self.agent_killed.discard(c)
        self.comp_state[c] = IDLE
        self.held[c] = 0.0
        self.stopped_step[c] = steps

    def _lose(self, c, now) -> None:
        a = self.app_of[c]
        ran = now - self.launched[c] if np.isfinite(self.launched[c]) else 0.0
        done = self.comp_state[c] == FINISHED
        seconds = float(self.wl.work[c]) if done else max(ran, 0.0)
        self.app_work_lost[a] += seconds
        self.app_work_lost_res[a] += seconds * self.wl.request[c]

    def _fail(self, c, outcome, now, host, names, steps) -> None:
        a = self.app_of[c]
        self._lose(c, now)
        if not self.wl.core[c]:
            self.app_component_losses[a] += 1
            self.app_component_ooms[a] += outcome == Outcome.OOM
            return
        if outcome == Outcome.PREEMPTED:
            self.app_preemptions[a] += 1
        else:
            self.app_failures[a] += 1
        rows = np.arange(self.wl.comp_indptr[a], self.wl.comp_indptr[a + 1])
        for r in rows:
            if r in self.procs:
                host.cgroups.kill(names[r])
                self.procs.pop(r).wait()
                self._lose(r, now)
                self._stopped(r, steps)
            elif self.comp_state[r] == FINISHED:
                self._lose(r, now)
                self.comp_state[r] = IDLE
        self.app_state[a] = QUEUED
        self.app_start[a] = np.nan

    def _maybe_done(self, a, now) -> None:
        rows = slice(self.wl.comp_indptr[a], self.wl.comp_indptr[a + 1])
        if np.all(self.comp_state[rows] == FINISHED):
            self.app_state[a] = DONE
            self.app_end[a] = now

    def kill_all(self, host, names) -> None:
        for c, proc in self.procs.items():
            host.cgroups.kill(names[c])
            proc.kill()
            proc.wait()
        self.procs.clear()

    # ------------------------------------------------------------------ accounting
    def account(self, now, agent: Agent, scale, period_s, steps) -> None:
        """One period's resource-seconds per application, and a timeline row, from what the
        agent read (usage) and holds (limits); a shaped limit replaces the reservation in
        what admission counts."""
        view = agent.collector.view
        wl = view.workloads
        # from a component's first sample on: the agent's first read of it only primes its CPU
        # counter, and counting that period with no usage would inflate slack
        rows = np.flatnonzero((wl.host >= 0) & (self.comp_state == UP) & (view.count > 0))
        limit = wl.limit[rows].astype(np.float64) / scale
        shaped = np.all(np.isfinite(limit), axis=1)
        # never above the request: a limit equal to it comes back from the cgroup files through
        # float32 a few 1e-8 above it, enough to stop an exact fit that the simulator admits
        self.held[rows[shaped]] = np.minimum(limit[shaped], self.wl.request[rows[shaped]])
        held = self.held[rows]
        used = wl.used[rows].astype(np.float64) / scale
        apps = self.app_of[rows]
        np.add.at(self.app_requested, apps, self.wl.request[rows] * period_s)
        np.add.at(self.app_allocated, apps, held * period_s)
        np.add.at(self.app_used, apps, used * period_s)
        queued = int(np.sum(self.app_state == QUEUED))
        running = int(np.sum(self.comp_state == UP))
        self.timeline.append([now, running, queued, *self.held.sum(axis=0), *used.sum(axis=0)])
