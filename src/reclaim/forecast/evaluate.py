"""Rolling-origin evaluation of forecasters on real usage series, the way the shaper uses them.

Every series is forecast one step ahead at consecutive origins, all series of a batch at once and
with their keys, exactly as a monitor tick would ask; online state (refreshed hyper-parameters,
selected orders, conformal calibration) therefore evolves as it would in the simulator. Each model
sees the last ``2 * history`` observations at every origin (enough for the GP's ``history``
patterns of length ``history``); models with a ``history`` setting get it too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import NDArray
from scipy.special import ndtr, ndtri

from reclaim import registry
from reclaim.core.capabilities import ForecasterCapabilities, capabilities
from reclaim.core.grouped import GroupedArray
from reclaim.forecast.base import Forecaster, ForecastError

#: Central intervals whose coverage is reported (nominal 68.3, 95.4, 99.7 %): their half-widths
#: in standard deviations.
SIGMA_INTERVALS = {"68": 1.0, "95": 2.0, "99.7": 3.0}


def build_model(name: str, history: int, params: dict | None = None) -> Forecaster:
    """``name`` from the registry, given ``history`` where it has that setting (for ``conformal``
    it goes to the base model)."""
    params = dict(params or {})
    model = registry.build("forecaster", name, **params)
    settings = model.get_params()
    if "history" in settings and "history" not in params:
        model.set_params(history=history)
    if "base_params" in settings:
        base_params = dict(settings["base_params"] or {})
        base = registry.build("forecaster", settings["base"], **base_params)
        if "history" in base.get_params():
            base_params.setdefault("history", history)
        model.set_params(base_params=base_params)
    return model


@dataclass
class Origins:
    """Which windows are forecast: series ``s`` at origins ``t = window + k`` for k < count[s]."""

    window: int
    count: NDArray[np.int64]  # (S,)

    @classmethod
    def plan(cls, y: GroupedArray, window: int, origins: int) -> Origins:
        usable = np.maximum(y.lengths - window, 0)
        return cls(window, np.minimum(usable, origins).astype(np.int64))


def rolling_forecasts(
    model: Forecaster,
    y: GroupedArray,
    origins: Origins,
    on_step: Callable[[int], None] | None = None,
) -> tuple[pl.DataFrame, float]:
    """One-step forecasts at every planned origin: a frame (series, step, actual, mean, std,
    fallback) and the seconds spent inside the model."""
    w, data = origins.window, np.asarray(y.data, np.float64)
    frames, spent = [], 0.0
    for k in range(int(origins.count.max(initial=0))):
        series = np.flatnonzero(origins.count > k)
        start = y.indptr[series] + k
        rows = (start[:, None] + np.arange(w)).ravel()
        batch = GroupedArray(data[rows], np.arange(len(series) + 1, dtype=np.int64) * w)
        actual = data[start + w]
        needs = capabilities(model, ForecasterCapabilities).needs_future
        extra = {"future": actual[:, None]} if needs else {}
        began = time.perf_counter()
        fc = model.forecast(batch, 1, keys=series, **extra)
        spent += time.perf_counter() - began
        frames.append(
            pl.DataFrame(
                {
                    "series": series.astype(np.int32),
                    "step": np.full(len(series), k, np.int32),
                    "actual": actual,
                    "mean": fc.mean[:, 0],
                    "std": fc.std[:, 0],
                    "fallback": fc.fallback,
                }
            )
        )
        if on_step is not None:
            on_step(len(series))
    if not frames:
        raise ForecastError(f"no series is longer than the window of {w} observations")
    return pl.concat(frames), spent


def _gaussian_crps(err: NDArray, std: NDArray) -> NDArray:
    """CRPS of N(mean, std^2) at the actual value, from err = actual - mean (closed form)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = err / std
        pdf = np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
        crps = std * (z * (2 * ndtr(z) - 1) + 2 * pdf - 1 / np.sqrt(np.pi))
    return np.where(std == 0, np.abs(err), crps)


def score(frame: pl.DataFrame) -> dict[str, float]:
    """Error, calibration and sharpness of a frame of forecasts (see :func:`rolling_forecasts`).

    Coverage counts a forecast with infinite std as covered; such forecasts (fallbacks on series
    too short to measure an error) are counted in ``fallback_share`` and left out of widths and
    CRPS, which they would make infinite.
    """
    err = (frame["actual"] - frame["mean"]).to_numpy()
    std = frame["std"].to_numpy()
    finite = np.isfinite(std)
    out = {
        "forecasts": float(len(err)),
        "mae": float(np.mean(np.abs(err))),
        "rmse": float(np.sqrt(np.mean(err**2))),
        "bias": float(np.mean(err)),
        "fallback_share": float(frame["fallback"].mean()),
    }
    for label, k in SIGMA_INTERVALS.items():
        out[f"coverage_{label}"] = float(np.mean(np.abs(err) <= k * std))
    # the shaper's question: how often does usage exceed the one-sided 99 % bound?
    out["upper_99_miss"] = float(np.mean(err > ndtri(0.99) * std))
    out["width_95"] = float(np.mean(2 * 2.0 * std[finite])) if finite.any() else np.inf
    out["crps"] = (
        float(np.mean(_gaussian_crps(err[finite], std[finite]))) if finite.any() else np.inf
    )
    return out


@dataclass(frozen=True)
class EvalTask:
    """One cell of an evaluation: a model with a history on one resource of one store."""

    store: str
    resource: str
    model: str
    history: int

    @property
    def key(self) -> str:
        return f"{self.store}--{self.resource}--{self.model}--h{self.history}"


def model_label(name: str, params: dict) -> str:
    """``conformal(gp-exp)`` for wrappers, the name otherwise."""
    return f"{name}({params['base']})" if "base" in params else name


def evaluate_task(
    task: EvalTask,
    name: str,
    params: dict,
    y: GroupedArray,
    origins: int,
    on_step: Callable[[int], None] | None = None,
) -> tuple[pl.DataFrame, dict[str, float]]:
    """Forecasts and scores of one task (forecaster ``name`` with ``params``); the scores include
    ``series_per_s``, the throughput inside the model."""
    model = build_model(name, task.history, params)
    plan = Origins.plan(y, 2 * task.history, origins)
    frame, spent = rolling_forecasts(model, y, plan, on_step)
    scores = score(frame) | {"seconds": spent, "series_per_s": len(frame) / max(spent, 1e-9)}
    return frame, scores


def planned_forecasts(y: GroupedArray, history: int, origins: int) -> int:
    return int(Origins.plan(y, 2 * history, origins).count.sum())
