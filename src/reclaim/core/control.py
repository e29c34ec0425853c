"""The controller interface shared by the simulator and the live agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.core.types import Decisions, R
from reclaim.core.view import ClusterView


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


class Controller(Protocol):
    """Decides allocations from the cluster view and a forecast of running workloads' usage.

    ``needs_forecast`` False lets the caller skip forecasting entirely (the forecast is None).
    """

    needs_forecast: bool

    def decide(self, view: ClusterView, forecast: Any) -> Decisions: ...
