"""The checks every registered controller must pass (``check_controller``).

Over a few periods of a random cluster whose usage drifts, a controller's decisions resize or
evict (the simulator and the agent carry out nothing else) and name only running rows, each at
most once; new limits are finite and positive; a row within the grace period the controller
declares keeps its request (the core's grace rule); ``decide`` leaves the view as it found it;
and a clone fed the same periods decides the same (controllers that learn from what they see,
like VPA's histograms, included). The declared capabilities are read as the loops read them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
from sklearn.base import clone

from reclaim import registry
from reclaim.core.capabilities import ControllerCapabilities, capabilities
from reclaim.core.control import UsageForecast, grace_of, in_grace
from reclaim.core.grouped import GroupedArray
from reclaim.core.tables import HostTable, WorkloadTable
from reclaim.core.types import Decisions, R

PERIODS = 4
PERIOD_S = 300.0
TRIALS = 3


def random_view(rng: np.random.Generator, now: float) -> SimpleNamespace:
    """A :class:`~reclaim.core.view.ClusterView` of 4 hosts and 6-15 rows, a third of them not
    running, in 2-5 applications; usage 5-100 % of requests; some started recently."""
    hosts = HostTable.parse("4x16c64g")
    n = int(rng.integers(6, 16))
    wt = WorkloadTable.empty(n)
    n_apps = int(rng.integers(2, 6))
    wt.component[:] = np.arange(n)
    wt.app[:] = rng.integers(0, n_apps, n)
    wt.core[:] = rng.random(n) < 0.5
    wt.host[:] = np.where(rng.random(n) < 0.7, rng.integers(0, len(hosts), n), -1)
    wt.start[:] = now - rng.uniform(0, 4 * 3600, n)
    wt.request[:] = rng.uniform(0.25, 4.0, (n, R))
    wt.limit[:] = wt.request
    wt.used[:] = wt.request * rng.uniform(0.05, 1.0, (n, R))
    running = np.flatnonzero(wt.host >= 0)
    for r in range(R):
        hosts.allocated[:, r] = np.bincount(wt.host[running], wt.limit[running, r], len(hosts))
        hosts.used[:, r] = np.bincount(wt.host[running], wt.used[running, r], len(hosts))
    history = [wt.used[i] * rng.uniform(0.8, 1.2, (12, R)) for i in range(n)]

    def usage_history(rows: np.ndarray, window: int) -> GroupedArray:
        return GroupedArray.from_series([history[i][-window:] for i in rows])

    return SimpleNamespace(
        now=now,
        hosts=hosts,
        workloads=wt,
        running=running.astype(np.int64),
        app_failures=np.zeros(n_apps, np.int32),
        component_ooms=np.zeros(n, np.uint8),
        recent_ooms=(np.empty(0, np.int64), np.empty(0, np.float32)),
        usage_history=usage_history,
    )


def _drift(view: SimpleNamespace, rng: np.random.Generator) -> None:
    """Next period: time moves on and usage wanders (within 5-120 % of the request)."""
    wt, rows = view.workloads, view.running
    view.now += PERIOD_S
    wt.used[rows] = np.clip(
        wt.used[rows] * rng.uniform(0.7, 1.4, (len(rows), R)),
        0.05 * wt.request[rows],
        1.2 * wt.request[rows],
    )


def _forecast(view: SimpleNamespace) -> UsageForecast:
    rows = view.running
    used = view.workloads.used[rows].astype(np.float64)
    return UsageForecast(rows, used, 0.1 * used, np.zeros(len(rows), bool))


def _snapshot(view: SimpleNamespace) -> dict[str, np.ndarray]:
    arrays = {f"workloads.{k}": v for k, v in vars(view.workloads).items()}
    arrays |= {f"hosts.{k}": v for k, v in vars(view.hosts).items()}
    arrays |= {"running": view.running, "app_failures": view.app_failures}
    return {k: np.array(v, copy=True) for k, v in arrays.items() if isinstance(v, np.ndarray)}


def _apply(view: SimpleNamespace, decisions: Decisions) -> None:
    """What an actuator would do: new limits take effect, evicted rows stop running."""
    view.workloads.limit[decisions.resize_rows] = decisions.resize_limit
    view.workloads.host[decisions.evict] = -1
    view.running = np.flatnonzero(view.workloads.host >= 0).astype(np.int64)


def _episode(controller, seed: int, where: str) -> list[Decisions]:
    rng = np.random.default_rng(seed)
    view = random_view(rng, now=86_400.0)
    decided = []
    for period in range(PERIODS):
        here = f"{where}, period {period}"
        caps = capabilities(controller, ControllerCapabilities)
        forecast = _forecast(view) if caps.needs_forecast else None
        before = _snapshot(view)
        decisions = controller.decide(view, forecast)
        after = _snapshot(view)
        for key in before:
            assert np.array_equal(before[key], after[key]), f"{here}: decide changed view {key}"
        assert isinstance(decisions, Decisions), f"{here}: decide returned {type(decisions)}"
        _check_decisions(view, decisions, here)
        _check_grace(view, decisions, grace_of(controller), here)
        decided.append(decisions)
        _apply(view, decisions)
        _drift(view, rng)
    return decided


def _check_decisions(view: SimpleNamespace, d: Decisions, where: str) -> None:
    others = len(d) - len(d.resize_rows) - len(d.evict)
    assert others == 0, (
        f"{where}: bind, migrate or lend rows, which no shaping actuator carries out"
    )
    running = set(view.running.tolist())
    resized, evicted = d.resize_rows.tolist(), d.evict.tolist()
    assert set(resized) <= running, f"{where}: resizes a row that is not running"
    assert set(evicted) <= running, f"{where}: evicts a row that is not running"
    assert len(set(resized)) == len(resized), f"{where}: resizes a row twice"
    assert len(set(evicted)) == len(evicted), f"{where}: evicts a row twice"
    assert not set(resized) & set(evicted), f"{where}: resizes and evicts one row"
    assert d.resize_limit.shape == (len(resized), R), f"{where}: limits {d.resize_limit.shape}"
    assert np.all(np.isfinite(d.resize_limit)), f"{where}: non-finite limit"
    assert np.all(d.resize_limit > 0), f"{where}: limit not above zero"


def _check_grace(view: SimpleNamespace, d: Decisions, grace_s: float, where: str) -> None:
    wt = view.workloads
    young = in_grace(view.now, wt.start[d.resize_rows], grace_s)
    kept = np.all(d.resize_limit[young] == wt.request[d.resize_rows[young]], axis=1)
    assert kept.all(), f"{where}: shapes a row within its {grace_s:g} s grace period"


def _same(a: list[Decisions], b: list[Decisions]) -> bool:
    return all(
        np.array_equal(x.resize_rows, y.resize_rows)
        and np.array_equal(x.resize_limit, y.resize_limit)
        and np.array_equal(x.evict, y.evict)
        for x, y in zip(a, b, strict=True)
    )


def check_controller(name: str, build: Callable[[], object] | None = None) -> None:
    """Raise AssertionError naming the first broken promise of controller ``name``.

    ``build`` makes a fresh instance (default: the registry's ``name`` with default settings).
    """
    build = build or (lambda: registry.build("controller", name))
    controller = build()
    caps = capabilities(controller, ControllerCapabilities)
    assert isinstance(caps.needs_forecast, bool), f"{name}: needs_forecast is not a bool"
    assert isinstance(caps.soft_memory_limits, bool), f"{name}: soft_memory_limits is not a bool"
    grace = caps.grace_s
    assert grace is None or (np.isfinite(grace) and grace >= 0), f"{name}: grace_s {grace}"
    for trial in range(TRIALS):
        where = f"{name}, trial {trial}"
        twin = clone(controller)
        first = _episode(controller, trial, where)
        assert _same(first, _episode(twin, trial, where)), f"{where}: a clone decides otherwise"
        assert _same(first, _episode(copy.deepcopy(build()), trial, where)), (
            f"{where}: a fresh instance decides otherwise"
        )
        controller = build()
