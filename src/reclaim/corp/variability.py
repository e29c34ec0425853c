"""How usage sampled every ~10 s moves inside 5-minute windows: the measurement behind CORP's
calibrated 10-second slots (:mod:`reclaim.corp.fluctuation`).

Google's 2019 windows give the spread of a task's **1-second** CPU samples over 5 minutes, not how
fast they move: a 10-second slot is the mean of ten 1-second samples, and how much of the 1-second
spread survives that mean depends only on how alike neighbouring seconds are. Alibaba's
cluster-trace-v2018 ``machine_usage`` samples machines every ~10 s (irregularly: 20 % of the gaps
are 10 s, the median 60 s), which shows that likeness at 10 s and beyond:

* Samples are cut into the same 5-minute windows (``floor(time / 300)``). The **within-window
  variance** is pooled over windows with at least two samples (deviations from each window's own
  mean, ``n - 1`` per window).
* For a lag ``h`` (10, 20, 30 s) every pair of samples exactly ``h`` apart in one window gives
  ``(x_j - x_i)^2 / 2`` (the variogram, which needs no window mean). The **within-window
  correlation** at ``h`` is ``1 - variogram / within-window variance``, pooled over machines
  (sums of both, so a machine counts by its variance and idle machines little).
* Values are recorded in whole percent: rounding adds ``1/12`` percent^2 to both the variogram
  and the variance, which is taken off both (it matters only for near-idle machines).
* Machines are measured one by one as well (``per_series``), to show the spread between them: the
  slots must not follow one machine's quirks, and a held-out subset will be measured the same way.

Values are fractions of the machine (``cpu / cpu_request``, ``mem / mem_request`` of the
``alibaba2018`` store), in percent for the rounding correction. Machines are aggregates of many
containers: their spread is smaller than one task's, which is why only the correlation (a shape
of the time series, free of the level and size of the spread) is carried over to Google's tasks,
whose own percentiles give the spread.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.core.types import RESOURCES
from reclaim.errors import ReclaimError
from reclaim.traces.schema import META_FILE
from reclaim.traces.store import load_store

#: Lags measured, s (the slots are 10 s; 20 and 30 s check the shape of the decay).
LAGS_S = (10.0, 20.0, 30.0)
#: Variance added by recording whole percent (uniform rounding error), percent^2.
ROUNDING_VAR = 1.0 / 12.0


@dataclass(frozen=True)
class Variability:
    """Within-window correlation of ~10-second samples, per resource and lag.

    correlation: (R, len(lags)) pooled over series. per_series: (S, R, len(lags)), NaN where a
    series has no pair at a lag. pairs: (R, len(lags)) pairs counted. sd: (R,) pooled
    within-window standard deviation, percent of the machine. variogram_sum, variance_sum:
    (S, R, len(lags)) what each series adds to the pooled numerator and denominator. lags_s,
    window_s, ids (S,), source: what was measured.
    """

    correlation: NDArray[np.float64]
    per_series: NDArray[np.float64]
    variogram_sum: NDArray[np.float64]
    variance_sum: NDArray[np.float64]
    pairs: NDArray[np.int64]
    sd: NDArray[np.float64]
    lags_s: tuple[float, ...]
    window_s: float
    ids: list[str]
    source: str

    def pooled(self, series: NDArray[np.integer]) -> NDArray[np.float64]:
        """(R, len(lags)) the pooled correlation of the given series only (e.g. a half of the
        machines, to see whether the answer depends on which machines were measured)."""
        rows = np.asarray(series, np.int64)
        return 1.0 - self.variogram_sum[rows].sum(axis=0) / self.variance_sum[rows].sum(axis=0)


def measure_variability(
    path: str | Path, window_s: float = 300.0, lags_s: tuple[float, ...] = LAGS_S
) -> Variability:
    """Measure an ``alibaba2018`` store, or the raw ``machine_usage`` / ``machine_meta`` files
    (imported into a temporary store first; the reader's errors name the file and line)."""
    path = Path(path)
    if (path / META_FILE).exists():
        frame = _percent(path)
    else:
        from reclaim.traces.importer import import_trace

        with tempfile.TemporaryDirectory(prefix="reclaim-a18-") as tmp:
            out = Path(tmp) / "store"
            import_trace("alibaba2018", path, out)
            frame = _percent(out)
    return _measure(frame, window_s, tuple(float(h) for h in lags_s), str(path))


def _percent(store_path: Path) -> pl.DataFrame:
    store = load_store(store_path)
    size = store.workloads().select("id", "cpu_request", "mem_request")
    return (
        store.usage()
        .select("id", "time", "cpu", "mem")
        .join(size, on="id", how="left")
        .select(
            "id",
            "time",
            cpu=100.0 * pl.col("cpu") / pl.col("cpu_request"),
            mem=100.0 * pl.col("mem") / pl.col("mem_request"),
        )
        .drop_nulls()
        .sort("id", "time")
        .collect()
    )


def _measure(frame: pl.DataFrame, window_s: float, lags: tuple[float, ...], source: str):
    if frame.is_empty():
        raise ReclaimError(f"{source}: no usage samples to measure")
    ids = frame["id"].unique(maintain_order=True).to_list()
    s, r, k = len(ids), len(RESOURCES), len(lags)
    half_sq = np.zeros((s, r, k))  # sum over pairs of (x_j - x_i)^2 / 2, rounding taken off
    pairs = np.zeros((s, k), np.int64)
    var = np.zeros((s, r))  # pooled within-window variance per series, rounding taken off
    for i, (_, g) in enumerate(frame.group_by("id", maintain_order=True)):
        t = g["time"].to_numpy()
        x = g.select(RESOURCES).to_numpy()
        win = np.floor(t / window_s).astype(np.int64)
        var[i] = _within_variance(win, x) - ROUNDING_VAR
        for j, h in enumerate(lags):
            a, b = _pairs(t, win, h)
            pairs[i, j] = len(a)
            half_sq[i, :, j] = 0.5 * ((x[b] - x[a]) ** 2).sum(axis=0) - len(a) * ROUNDING_VAR
    den = pairs[:, None, :] * var[:, :, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        per_series = np.where(pairs[:, None, :] > 0, 1.0 - half_sq / den, np.nan)
        pooled = 1.0 - half_sq.sum(axis=0) / den.sum(axis=0)
    n_win = pairs.sum(axis=0)
    if (n_win == 0).any():
        raise ReclaimError(f"{source}: no two samples {lags[int(np.argmin(n_win))]:g} s apart")
    return Variability(
        correlation=pooled,
        per_series=per_series,
        variogram_sum=half_sq,
        variance_sum=den.astype(np.float64),
        pairs=np.repeat(n_win[None, :], r, axis=0),
        sd=np.sqrt(np.maximum(var.mean(axis=0), 0.0)),
        lags_s=lags,
        window_s=float(window_s),
        ids=ids,
        source=source,
    )


def _within_variance(win: NDArray[np.int64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """(R,) variance around each window's own mean, pooled with n - 1 per window of >= 2."""
    _, inverse, counts = np.unique(win, return_inverse=True, return_counts=True)
    sums = np.zeros((len(counts), x.shape[1]))
    np.add.at(sums, inverse, x)
    dev = x - (sums / counts[:, None])[inverse]
    dof = (counts[counts >= 2] - 1).sum()
    if dof == 0:
        return np.full(x.shape[1], np.nan)
    keep = counts[inverse] >= 2
    return (dev[keep] ** 2).sum(axis=0) / dof


def _pairs(t: NDArray[np.float64], win: NDArray[np.int64], lag: float):
    """(i, j): samples exactly ``lag`` apart (to the second) in the same window."""
    j = np.searchsorted(t, t + lag - 0.5)
    i = np.arange(len(t))
    ok = j < len(t)
    i, j = i[ok], j[ok]
    ok = (np.abs(t[j] - t[i] - lag) < 0.5) & (win[j] == win[i])
    return i[ok], j[ok]
