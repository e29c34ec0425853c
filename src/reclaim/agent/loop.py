"""The live loop: every period observe, forecast, decide, make safe, apply, record.

It runs the simulator's controllers unchanged (``Controller.decide(view, forecast)`` over a live
:class:`ClusterView`), built by name through the same function as a simulation; only the clock
(:class:`WallClock`) and the actuator differ. What the simulator need not do and a live agent
must, it does here, after the controller and before the actuator:

- Grace: a component keeps its reservation for ``grace_s`` after it is first seen, whatever the
  controller (the paper waits until its forecaster has data: 10 minutes).
- Throttled: a component whose CPU was throttled since the last read gets its CPU reservation
  back at once (its usage reads as its quota, so a forecast from usage would raise the quota only
  K1 * request per period).
- Fail safe: if the forecaster or the controller raises, every limit reverts to the reservation
  and nothing is killed that period; so does a component whose usage has not been read for
  ``stale_s``. Acting on stale data or a broken model is worse than not reclaiming.
- Floor: a limit is never lowered below the component's current usage plus its buffer
  (K1 * request + K2 * std), whatever the controller asked.
- Record: every component's usage, forecast, buffer terms and limit go to the database each
  period, and every action (resize, kill, revert) with its reason to the database and the log.
  ``dry_run`` records recommendations without applying them (VPA's "Off" mode).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from reclaim.agent.actuator import CgroupActuator, DockerActuator
from reclaim.agent.cgroups import CgroupError, Cgroups
from reclaim.agent.collector import Collector, LiveView
from reclaim.agent.config import AgentSettings, build_controller
from reclaim.agent.store import Store
from reclaim.core.clock import SimClock, WallClock
from reclaim.core.control import control_step, forecast_usage, in_grace
from reclaim.core.engine import Engine
from reclaim.core.types import CPU, Decisions, R, Status
from reclaim.core.view import Actuator

log = logging.getLogger("reclaim.agent")
_PRUNE_EVERY_S = 3600.0


@dataclass
class PeriodReport:
    """What one period did: running components, limits changed, components killed, the
    fail-safe reason if any, and seconds spent per phase."""

    t: float
    running: int
    resized: int
    killed: list[str]
    fail_safe: str | None
    seconds: dict[str, float] = field(default_factory=dict)


class Agent:
    """One managed parent cgroup (or Docker host) under one controller."""

    def __init__(
        self,
        settings: AgentSettings,
        cgroups: Cgroups | None = None,
        actuator: Actuator | None = None,
        clock: SimClock | WallClock | None = None,
        metrics=None,
    ) -> None:
        self.settings = settings
        self.controller, self.forecaster = build_controller(settings)
        params = getattr(self.controller, "get_params", dict)()
        self.k1 = float(params.get("k1", settings.k1))
        self.k2 = float(params.get("k2", settings.k2))
        self.cgroups = cgroups or Cgroups(
            settings.cgroup_root, settings.parent, settings.cgroup_version
        )
        names = settings.components.names
        if settings.backend == "cgroup":
            self._check_cgroups(names)
        if actuator is None:
            if settings.backend == "docker":
                actuator = DockerActuator(names)
            else:
                actuator = CgroupActuator(self.cgroups, names)
        self.actuator = actuator
        self.clock = clock or WallClock()
        self.metrics = metrics
        self.store = Store(settings.database)
        self.collector = Collector(settings, self.cgroups)
        first = self.store.sync_components(settings.components)
        self.collector.resume(first, *self.store.history(len(names), settings.window))
        self._pruned = -np.inf
        self._stop = threading.Event()

    def _check_cgroups(self, names: list[str]) -> None:
        """Refuse to start when configured components have no cgroup (a typo in a name or the
        parent would otherwise leave the agent idle and silent), unless told to wait for them."""
        missing = self.cgroups.missing(names)
        if not missing:
            return
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        where = self.cgroups.parent_dirs()[0]
        if not self.settings.wait_for_cgroups:
            raise CgroupError(
                f"{len(missing)} of {len(names)} configured components have no cgroup under "
                f"{where}: {shown} (create them first, or set agent.wait_for_cgroups = true)"
            )
        log.warning("waiting for %d components' cgroups under %s: %s", len(missing), where, shown)

    def stop(self) -> None:
        """Make :meth:`run` return after the current period (from another thread or a signal)."""
        self._stop.set()

    def close(self) -> None:
        self.store.close()

    def run(self, periods: int | None = None) -> list[PeriodReport]:
        """Run ``periods`` periods (None: until :meth:`stop`), one every ``period_s`` seconds of
        the clock, on the engine every simulation runs on; a period that overruns starts the next
        at once instead of bunching up."""
        reports: list[PeriodReport] = []

        def period(due: float, _: int) -> None:
            reports.append(self.step())
            if periods is None or len(reports) < periods:
                engine.schedule(max(due + self.settings.period_s, self.clock.now()), 0, 0, 0)

        engine = Engine({0: period}, clock=self.clock, stop=self._stop)
        if periods != 0:
            engine.schedule(self.clock.now(), 0, 0, 0)
        engine.run()
        return reports

    # ------------------------------------------------------------------ one period
    def step(self) -> PeriodReport:
        s, comps, store = self.settings, self.settings.components, self.store
        now = self.clock.now()
        t0 = time.perf_counter()
        was_garbled = self.collector.garbled.copy()
        started, stopped = self.collector.observe(now)
        for i in np.flatnonzero(self.collector.garbled & ~was_garbled):
            self._event(now, i, "fail-safe", "usage files hold no number: kept at its reservation")
        view = self.collector.view
        wl = view.workloads
        for i in started:
            self._event(now, i, "start", "cgroup has processes: managed from now")
        for i in stopped:
            self._event(now, i, "stop", "cgroup has no processes or is gone")
        if len(started):
            store.set_first_seen(started, wl.start[started])
        store.add_samples(now, self.collector.sampled, wl.used[self.collector.sampled])
        t1 = time.perf_counter()

        def forecast(rows):
            history = view.usage_history(rows, s.window)
            return forecast_usage(self.forecaster, history, rows, wl.component[rows])

        safe: dict[str, object] = {}

        def guard(rows, decisions, predicted, failure):
            """The controller's decisions through grace, fail safe and floors; kept for the
            record; nothing goes to the actuator in a dry run."""
            fail = None
            if failure is not None:
                stage, err = failure
                name = s.forecaster if stage == "forecaster" else s.controller
                fail = f"{stage} {name!r} failed: {err}"
            std = np.full((len(rows), R), np.inf) if predicted is None else predicted.std
            target, evict, action, reason = self._safe_targets(view, rows, decisions, std, fail)
            changed = np.any(target.astype(np.float32) != wl.limit[rows], axis=1) & ~evict
            safe.update(fail=fail, std=std, target=target, evict=evict, action=action)
            safe.update(reason=reason, changed=changed)
            if s.dry_run:
                return Decisions()
            return Decisions(rows[changed], target[changed], rows[evict])

        step = control_step(view, self.controller, forecast, self.actuator, guard, catch=True)
        rows, n = step.rows, len(step.rows)
        mean = np.full((n, R), np.nan) if step.forecast is None else step.forecast.mean
        fail, std, target, evict = safe["fail"], safe["std"], safe["target"], safe["evict"]
        action, reason, changed = safe["action"], safe["reason"], safe["changed"]
        applied = np.zeros(n, bool)
        killed: list[str] = []
        if len(step.status):
            k = int(changed.sum())
            ok_resize, ok_evict = step.status[:k] == Status.OK, step.status[k:] == Status.OK
            applied[np.flatnonzero(changed)[ok_resize]] = True
            applied[np.flatnonzero(evict)[ok_evict]] = True
            wl.limit[rows[changed][ok_resize]] = target[changed][ok_resize]
            for i in np.flatnonzero(changed)[~ok_resize]:
                reason[i] += "; write failed"
            killed = [comps.names[r] for r in rows[evict][ok_evict]]
            gone = np.zeros(n, bool)
            gone[np.flatnonzero(evict)[ok_evict]] = True
            dropped = np.unique(wl.app[rows[gone & wl.core[rows]]])
            view.app_failures[dropped] += 1
        action[changed] = "resize"
        action[evict] = "kill"
        t4 = time.perf_counter()

        self._record(now, rows, mean, std, target, action, reason, applied)
        if fail is not None:
            self._event(now, None, "fail-safe", f"{fail}: every limit back to its reservation")
        for j in np.flatnonzero(evict):
            self._event(now, int(rows[j]), "kill" if applied[j] else "recommend-kill", reason[j])
        if now - self._pruned > _PRUNE_EVERY_S:
            store.prune(now - s.retention_s)
            self._pruned = now
        if self.metrics is not None:
            self.metrics.update(comps, view, rows, mean, target)
        t5 = time.perf_counter()
        seconds = {
            "read": t1 - t0,
            "forecast": step.seconds["forecast"],
            "decide": step.seconds["decide"],
            "apply": t4 - t1 - step.seconds["forecast"] - step.seconds["decide"],
            "record": t5 - t4,
        }
        return PeriodReport(now, n, int(changed.sum()), killed, fail, seconds)

    def _safe_targets(self, view: LiveView, rows, decisions: Decisions, std, fail):
        """(n, R) limits for running ``rows``, which to kill, and an action and reason each:
        the controller's decisions, then grace, fail safe and the usage + buffer floor."""
        s, wl = self.settings, view.workloads
        n = len(rows)
        pos = np.full(len(wl), -1)
        pos[rows] = np.arange(n)
        request = wl.request[rows].astype(np.float64)
        current = wl.limit[rows].astype(np.float64)
        target = current.copy()
        action = np.full(n, "keep", dtype=object)
        reason = np.full(n, f"{s.controller}: keeps the current limit", dtype=object)
        evict = np.zeros(n, bool)

        p = pos[decisions.resize_rows]
        target[p[p >= 0]] = decisions.resize_limit[p >= 0]
        reason[p[p >= 0]] = f"{s.controller}: forecast + K1*request + K2*std"
        p = pos[decisions.evict]
        evict[p[p >= 0]] = True
        app_names = np.asarray(s.components.apps, dtype=object)[wl.app[rows]]
        core = wl.core[rows]
        reason[evict & core] = [
            f"{s.controller}: application {a!r} no longer fits (core components first): "
            "preempt it whole"
            for a in app_names[evict & core]
        ]
        reason[evict & ~core] = (
            f"{s.controller}: elastic component does not fit after older ones: preempt (youngest first)"
        )

        grace = in_grace(view.now, wl.start[rows], s.grace_s)
        target[grace] = request[grace]
        reason[grace & ~evict] = "grace period: reservation"
        throttled = self.collector.throttled[rows] & ~grace & ~evict
        raise_cpu = throttled & (target[:, CPU] < request[:, CPU])
        target[raise_cpu, CPU] = request[raise_cpu, CPU]
        reason[raise_cpu] = "CPU throttled since the last read: CPU back to its reservation"
        stale = self.collector.stale[rows]
        if fail is not None:
            stale[:] = True
        target[stale] = request[stale]
        evict[stale] = False
        reason[stale] = (
            f"fail safe: {fail}: reservation"
            if fail is not None
            else f"fail safe: no usage read for over {s.stale_s:g} s: reservation"
        )
        garbled = self.collector.garbled[rows] & (fail is None)
        reason[garbled] = "fail safe: usage files hold no number: reservation"

        buffer = self.k1 * request + self.k2 * np.where(np.isfinite(std), std, 0.0)
        floor = np.minimum(wl.used[rows] + buffer, current)
        # float32 rounding of a target equal to the floor is not a violation
        raised = (target < floor - 1e-6 * np.maximum(floor, 1.0)) & ~evict[:, None]
        target = np.where(raised, floor, target)
        for i in np.flatnonzero(raised.any(axis=1)):
            reason[i] += "; held at usage + buffer"
        return target, evict, action, reason

    def _record(self, now, rows, mean, std, target, action, reason, applied) -> None:
        wl, comps = self.collector.view.workloads, self.settings.components
        self.store.add_decisions(
            {
                "t": now,
                "component": rows,
                "used_cpu": wl.used[rows, 0],
                "used_mem": wl.used[rows, 1],
                "mean_cpu": mean[:, 0],
                "mean_mem": mean[:, 1],
                "std_cpu": std[:, 0],
                "std_mem": std[:, 1],
                "k1": self.k1,
                "k2": self.k2,
                "req_cpu": wl.request[rows, 0],
                "req_mem": wl.request[rows, 1],
                "limit_cpu": target[:, 0],
                "limit_mem": target[:, 1],
                "action": list(action),
                "reason": list(reason),
                "applied": applied,
            }
        )
        if log.isEnabledFor(logging.INFO):
            verb = "" if not self.settings.dry_run else " (dry run, not applied)"
            for j in np.flatnonzero(action != "keep"):
                log.info(
                    "%s: %s to %.3f cores, %.3f GiB%s: %s",
                    comps.names[rows[j]],
                    action[j],
                    target[j, 0],
                    target[j, 1],
                    verb,
                    reason[j],
                )

    def _event(self, now: float, row: int | None, kind: str, reason: str) -> None:
        who = "agent" if row is None else self.settings.components.names[row]
        level = logging.WARNING if kind in ("kill", "fail-safe") else logging.INFO
        log.log(level, "%s: %s: %s", who, kind, reason)
        self.store.add_event(now, row, kind, reason)
