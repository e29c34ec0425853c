"""The Forecast container and the Forecaster interface shared by every model.

A forecaster takes a batch of series (a :class:`GroupedArray`, thousands at once, uneven lengths)
and returns a predictive distribution per series and step. Policies read it through the mean, the
standard deviation and Gaussian quantiles; a model whose predictive distribution is not Gaussian
still reports the mean and standard deviation of the one it has.

Online use (the simulator's monitor tick, the live agent): pass ``keys``, one integer per series
naming it across calls. A forecaster that keeps per-series state (selected orders, refreshed
hyper-parameters, calibration) carries it from one call to the next under the same key and forgets
keys absent from a call. The contract is one call per period, each series one observation longer
than at the previous call (or its window slid by one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reclaim.core.capabilities import ForecasterCapabilities
from reclaim.core.component import Component
from reclaim.core.grouped import GroupedArray
from reclaim.errors import ReclaimError


class ForecastError(ReclaimError):
    """Series a forecaster cannot use: empty, NaN or infinite values, wrong shape."""


def gaussian_quantile(q: ArrayLike) -> NDArray[np.float64]:
    """Standard normal quantile z(q) for scalar or array ``q`` in (0, 1)."""
    q = np.asarray(q, dtype=np.float64)
    if np.any((q <= 0) | (q >= 1)):
        raise ForecastError(f"quantile levels must lie in (0, 1), got {q.tolist()}")
    inv = np.vectorize(NormalDist().inv_cdf, otypes=[np.float64])
    return inv(q)


@dataclass(frozen=True, slots=True)
class Forecast:
    """Predictive distribution per series and step.

    mean, std: (S, h) float64, in the series' units (cores, GiB); std may be ``inf`` where a
    series is too short to estimate any error (a policy then keeps the reservation).
    fallback: (S,) bool, series the model could not use, answered by the documented fallback.
    """

    mean: NDArray[np.float64]
    std: NDArray[np.float64]
    fallback: NDArray[np.bool_] = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        mean = np.asarray(self.mean, dtype=np.float64)
        std = np.asarray(self.std, dtype=np.float64)
        if mean.ndim != 2 or mean.shape != std.shape:
            raise ValueError(f"mean and std must both be (S, h), got {mean.shape}, {std.shape}")
        if np.any(std < 0) or np.any(np.isnan(std)):
            raise ValueError("std must be non-negative and not NaN")
        fallback = self.fallback
        fallback = np.zeros(len(mean), bool) if fallback is None else np.asarray(fallback, bool)
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)
        object.__setattr__(self, "fallback", fallback)

    def __len__(self) -> int:
        return len(self.mean)

    @property
    def horizon(self) -> int:
        return self.mean.shape[1]

    def quantile(self, q: ArrayLike) -> NDArray[np.float64]:
        """Gaussian quantiles: (S, h) for a scalar ``q``, (Q, S, h) for an array of levels."""
        z = gaussian_quantile(q)
        with np.errstate(invalid="ignore"):  # inf std times z = 0 would be NaN; it is the mean
            out = self.mean + np.multiply.outer(z, self.std)
        return np.where(np.isnan(out), self.mean, out)

    def interval(self, coverage: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Central interval holding ``coverage`` of the predictive mass: (lower, upper), (S, h)."""
        tail = (1.0 - coverage) / 2.0
        return self.quantile(tail), self.quantile(1.0 - tail)

    def take(self, rows: NDArray[np.integer]) -> Forecast:
        return Forecast(self.mean[rows], self.std[rows], self.fallback[rows])


def validate_series(y: GroupedArray, who: str) -> NDArray[np.float64]:
    """The batch's values as float64 (N,), after checking they can be forecast at all.

    Raises ForecastError for a 2-D batch, an empty series or a non-finite value, naming the series.
    """
    data = np.asarray(y.data)
    if data.ndim != 1:
        raise ForecastError(f"{who}: expects univariate series (1-D data), got shape {data.shape}")
    lengths = y.lengths
    if len(lengths) and lengths.min() == 0:
        i = int(np.argmin(lengths))
        raise ForecastError(f"{who}: series {i} is empty, there is nothing to forecast from")
    bad = ~np.isfinite(data)
    if bad.any():
        first = int(np.argmax(bad))
        series = int(np.searchsorted(y.indptr, first, side="right") - 1)
        at = first - int(y.indptr[series])
        raise ForecastError(f"{who}: series {series}, observation {at} is {data[first]}")
    return data.astype(np.float64, copy=False)


def check_keys(keys: ArrayLike | None, n: int) -> NDArray[np.int64] | None:
    if keys is None:
        return None
    keys = np.asarray(keys, dtype=np.int64).reshape(-1)
    if len(keys) != n:
        raise ForecastError(f"{n} series but {len(keys)} keys")
    # Speed trick: a sort and a neighbour test, not ``np.unique`` (25x slower on the 25,000 keys
    # of a paper-scale tick, where it cost as much as the GP's search; bench_shaping.py).
    ordered = np.sort(keys)
    if (ordered[1:] == ordered[:-1]).any():
        raise ForecastError("keys must name each series once")
    return keys


class KeyedState:
    """Per-series arrays carried between calls, looked up by integer key.

    ``fields`` maps a name to its fill value for keys seen for the first time. :meth:`align`
    returns each field's rows in the order of ``keys`` and which keys are new; :meth:`store`
    keeps exactly the given keys (keys absent from the call are forgotten, so memory stays
    bounded by the batch size).
    """

    def __init__(self, **fields: float) -> None:
        self.fill = fields
        self.keys = np.empty(0, np.int64)  # sorted
        self.arrays = {name: np.empty(0) for name in fields}

    def align(self, keys: NDArray[np.int64]) -> tuple[dict[str, NDArray], NDArray[np.bool_]]:
        pos = np.searchsorted(self.keys, keys)
        pos = np.minimum(pos, max(len(self.keys) - 1, 0))
        known = (self.keys[pos] == keys) if len(self.keys) else np.zeros(len(keys), bool)
        out = {}
        for name, fill in self.fill.items():
            col = np.full(len(keys), fill, np.float64)
            col[known] = self.arrays[name][pos[known]]
            out[name] = col
        return out, ~known

    def store(self, keys: NDArray[np.int64], arrays: dict[str, NDArray]) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.arrays = {name: np.asarray(arrays[name], np.float64)[order] for name in self.fill}


class Forecaster(Component):
    """Base class: constructors store settings only; learned state ends in ``_``.

    Subclasses implement :meth:`fit` and :meth:`predict`. A forecaster whose capabilities say
    ``needs_future`` must be handed the true future (``fit(..., future=)``): the oracle.
    """

    __capabilities__ = ForecasterCapabilities()

    def fit(self, y: GroupedArray, keys: ArrayLike | None = None, **kw: Any) -> Self:
        raise NotImplementedError

    def predict(self, h: int = 1) -> Forecast:
        raise NotImplementedError

    def forecast(
        self, y: GroupedArray, h: int = 1, keys: ArrayLike | None = None, **kw: Any
    ) -> Forecast:
        """``fit(y, keys).predict(h)`` in one call."""
        return self.fit(y, keys, **kw).predict(h)


def check_horizon(h: int) -> int:
    if int(h) != h or h < 1:
        raise ForecastError(f"horizon must be a positive whole number of steps, got {h}")
    return int(h)
