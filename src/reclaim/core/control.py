"""The policy interface and the one control step every loop runs: the shaping simulator's tick,
the live agent's period, CORP's lending refresh, the LAVA pool's defragmentation and the TVW
replay's placement all pass through :func:`control_step`, each with its own view and actuator."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import ControllerCapabilities, capabilities
from reclaim.core.grouped import GroupedArray
from reclaim.core.types import Decisions, R
from reclaim.core.view import Actuator, ClusterView


@dataclass(frozen=True, slots=True)
class UsageForecast:
    """One-step forecast of running workloads' demand, as a controller receives it.

    rows: (n,) int64 rows of the view's workload table; mean, std: (n, R) float64 cores and GiB
    for the coming interval (NaN / inf where a row has no sample yet); fallback: (n,) bool, rows
    the forecaster could not model (answered by its documented fallback).
    """

    rows: NDArray[np.int64]
    mean: NDArray[np.float64]
    std: NDArray[np.float64]
    fallback: NDArray[np.bool_]


def forecast_usage(
    forecaster,
    history: GroupedArray,
    rows: NDArray[np.int64],
    component: NDArray[np.int64],
    future=None,
) -> UsageForecast:
    """One-step forecast of ``rows``' usage from their ``history`` (one series of (t, R) samples
    per row, cores and GiB), for the simulator and the live agent alike.

    CPU and memory series of all rows go to ``forecaster`` as one batch, keyed
    ``component * R + resource`` (``component``: (n,) ids stable across calls) so that online
    state follows a component from call to call. Rows without a sample get mean NaN and std inf.
    ``future``: called with the mask of rows that have samples, it returns what an oracle
    forecaster is to be told ((n_seen, R) values); None for forecasters that need none.
    """
    n = len(rows)
    mean, std = np.full((n, R), np.nan), np.full((n, R), np.inf)
    fallback = np.ones(n, bool)
    seen = history.lengths > 0
    if seen.any():
        m, lengths = int(seen.sum()), history.lengths[seen]
        indptr = np.concatenate([[0], np.cumsum(np.tile(lengths, R))]).astype(np.int64)
        batch = GroupedArray(history.data.T.ravel().astype(np.float64), indptr)
        comp = np.asarray(component, np.int64)[seen]
        keys = (comp[None, :] * R + np.arange(R)[:, None]).ravel()
        extra = {} if future is None else {"future": future(seen).T.reshape(-1, 1)}
        fc = forecaster.forecast(batch, 1, keys=keys, **extra)
        mean[seen] = fc.mean[:, 0].reshape(R, m).T
        std[seen] = fc.std[:, 0].reshape(R, m).T
        fallback[seen] = fc.fallback.reshape(R, m).any(axis=0)
    return UsageForecast(rows, mean, std, fallback)


def in_grace(now: float, start: NDArray[np.floating], grace_s: float) -> NDArray[np.bool_]:
    """The grace rule, the same in every loop: a workload started (``start``, seconds) less than
    ``grace_s`` before ``now`` keeps its reservation; it is neither forecast nor shaped."""
    return now - start < grace_s


def grace_of(controller: Controller) -> float:
    """The grace period ``controller`` declares (0 for a policy that keeps none)."""
    grace = capabilities(controller, ControllerCapabilities).grace_s
    return 0.0 if grace is None else grace


class Controller(Protocol):
    """Decides from the cluster view and, when its capabilities say ``needs_forecast``, a
    forecast of the running workloads' usage (else the forecast is None)."""

    __capabilities__: ControllerCapabilities

    def decide(self, view: ClusterView, forecast: Any) -> Decisions: ...


@dataclass(frozen=True, slots=True)
class ControlStep:
    """What one pass of the loop saw and did.

    rows: (n,) the rows decided on; forecast: the :class:`UsageForecast` (None when the
    controller needs none or the forecaster failed); decisions: what went to the actuator (after
    the guard); status: the actuator's Status per decision row, empty when nothing was applied;
    failure: ``(stage, error)``, ``stage`` "forecaster" or "controller", when a caught exception
    stopped the pass; seconds: wall time of the forecast, decide and apply phases.
    """

    rows: NDArray[np.int64]
    forecast: UsageForecast | None
    decisions: Decisions
    status: NDArray[np.int8]
    failure: tuple[str, Exception] | None = None
    seconds: dict[str, float] = field(default_factory=dict)


Guard = Callable[[NDArray[np.int64], Decisions, UsageForecast | None, Any], Decisions]


def control_step(
    view: ClusterView,
    controller: Controller,
    forecast: Callable[[NDArray[np.int64]], UsageForecast] | None,
    actuator: Actuator,
    guard: Guard | None = None,
    catch: bool = False,
    rows: NDArray[np.integer] | None = None,
) -> ControlStep:
    """One forecast -> decide -> apply pass over the rows of an observed ``view``: every loop
    runs this (module docstring).

    ``rows``: the rows the policy decides over, by default the view's running rows (a placement
    policy decides over its queue). Nothing is forecast or decided when there are none.
    ``forecast(rows)`` runs only when the controller's capabilities say ``needs_forecast``
    (None is fine for a policy that needs none).
    ``guard(rows, decisions, forecast, failure)`` returns what is really applied (the agent's grace
    period, fail safe and usage floors; a dry run returns no rows); None applies the controller's
    decisions as they are. ``catch``: an exception of the forecaster or the controller becomes
    ``failure`` and no decisions instead of propagating (on live hosts a model bug must not leave
    tight limits behind; in a simulation it is a bug to see).
    """
    rows = view.running if rows is None else rows
    predicted, decisions, failure = None, Decisions(), None
    t0 = time.perf_counter()
    if len(rows) and capabilities(controller, ControllerCapabilities).needs_forecast:
        try:
            predicted = forecast(rows)
        except Exception as err:
            if not catch:
                raise
            failure = ("forecaster", err)
    t1 = time.perf_counter()
    if len(rows) and failure is None:
        try:
            decisions = controller.decide(view, predicted)
        except Exception as err:
            if not catch:
                raise
            failure = ("controller", err)
    t2 = time.perf_counter()
    if guard is not None:
        decisions = guard(rows, decisions, predicted, failure)
    status = actuator.apply(decisions) if len(decisions) else np.zeros(0, np.int8)
    seconds = {"forecast": t1 - t0, "decide": t2 - t1, "apply": time.perf_counter() - t2}
    return ControlStep(rows, predicted, decisions, status, failure, seconds)
