"""Sub-5-minute fluctuation drawn from real data: Google 2019 windows -> 10-second slots.

The CORP paper "transformed the remaining of the 5-minute trace into 10-second trace" without
saying how. Sample-and-hold (:func:`reclaim.corp.scenario.resample_hold`) invents nothing but also
leaves no fluctuation faster than 5 minutes, which is what CORP's HMM is meant to predict. Google's
2019 trace (the ``google2019-usage`` store) records, for every 5-minute window of a task, the mean
CPU usage, the percentiles p0, p10, ..., p90, p91, ..., p99 of the window's **1-second** CPU samples,
the max CPU sample and the mean and max memory. :class:`PercentileSlots` draws the 10-second slots
of each window from that window's own distribution:

* **CPU.** The window's 1-second distribution is the piecewise-linear quantile function through
  (q / 100, cpu_pq), closed at level 1 by ``max(cpu_max, cpu_p99)`` (cpu_max is below p99 in 0.2 %
  of the sample's windows: the two are not measured on exactly the same samples).
* **Calibrated slots** (``mode="calibrated"``, the default): the window's 300 seconds take one
  1-second value each at **stratified** levels ``(k + U_k) / 300`` (so that together they cover
  the window's distribution once: p0 .. p99 are kept), in the time order of a Gaussian AR(1)
  with coefficient ``phi`` per second (:func:`ordered_levels`), and a slot is the **mean of its
  ten seconds**. How alike neighbouring seconds are is not in Google's trace; Alibaba 2018's
  machine usage, sampled every ~10 s, shows it at 10 s and beyond: within 5-minute windows,
  values 10 s apart correlate at 0.70 (CPU) and 0.90 (memory) (:mod:`reclaim.corp.variability`,
  :data:`SLOT_CORRELATION`). ``phi`` is the per-second coefficient whose 10-second slots have
  that within-window correlation (:func:`second_correlation`: 0.963 for CPU). A slot then keeps
  0.93 of the window's 1-second standard deviation (independent seconds would keep 0.32), and
  slots 20 and 30 s apart correlate at 0.40 and 0.21 (measured: 0.47 and 0.31).
* ``mode="percentiles"``: each of the 30 slots takes one value at stratified levels
  ``(k + U_k) / 30`` in a random order: a 10-second slot is one 1-second sample (the upper end of
  the spread, no likeness between slots).
* In both, the slots are then scaled by ``window mean / mean of the drawn slots``, so **each
  window's mean is kept** exactly (the quantile function's own mean is within 0.5 % / 5 % of the
  recorded mean for 95 % of windows). ``mode="window-hold"`` holds each window's means.
* **Memory**: only the window's mean and max are recorded. Values are drawn at stratified levels
  from the uniform distribution on ``[max(0, 2 mean - max), max]`` (the widest interval with that
  max whose mean is the window's), per second in the order of an AR(1) (calibrated: the measured
  0.90 is above what a rank order of an AR(1) reaches, 0.87 with ``phi`` near 1, which is used)
  or per slot in random order (percentiles), shifted to keep the window mean and kept within
  [0, max]: memory rises **up to the window max** and no higher.
* Windows without 1-second samples (the source writes -1, stored as null; 37 of 70,573 windows in
  the shipped sample) are held at their mean, as is memory where ``mem_max`` is null.
* Slots above the request (Borg lets CPU run past its limit) are clipped to it and counted
  (``clipped``); those windows lose the clipped part of their mean.

Values are fractions of each task's **own** limit (``cpu / cpu_request``), so the level of usage
against the request is the real one (Google 2019 tasks use on average 41 % of their CPU limit
and 74 % of their memory limit per window in the shipped sample): the pairing of usage with
requests comes from the same task, as :mod:`reclaim.workload.pairing` measures it.

A store given here may also be a folder (or file) of raw Google 2019 task files: it is imported
with the ``google2019-usage`` reader into a temporary store first, whose errors name the file and
line of a broken row.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
from numpy.typing import NDArray
from scipy.signal import lfilter

from reclaim.core.grouped import GroupedArray
from reclaim.errors import ReclaimError, TraceError
from reclaim.traces.schema import CPU_PERCENTILES, META_FILE, USAGE_FILE
from reclaim.traces.store import load_store

#: The quantile levels of a window's 1-second CPU distribution: p0 .. p99, then the max at 1.
LEVELS = np.array([*(q / 100.0 for q in CPU_PERCENTILES), 1.0])
PERCENTILE_COLUMNS = tuple(f"cpu_p{q}" for q in CPU_PERCENTILES)
#: How slots are made from a window: ``calibrated`` (means of correlated 1-second draws),
#: ``percentiles`` (one 1-second draw per slot, random order), ``window-hold`` (the mean held).
MODES = ("calibrated", "percentiles", "window-hold")
#: Within-window correlation of 10-second values 10 s apart, (cpu, mem), measured on Alibaba
#: cluster-trace-v2018 machine_usage (the development subset: 11 machines, 65,812 samples, 7,047
#: pairs 10 s apart in one window; :mod:`reclaim.corp.variability`,
#: ``benchmarks/bench_corp_variability.py``). Pooled: CPU 0.697 (per machine 0.57-0.79, one
#: near-idle machine -0.13, weighed by its tiny variance), memory 0.897 (0.84-0.92). At 20 and
#: 30 s: CPU 0.465 and 0.305, memory 0.778 and 0.654: close to a geometric decay.
SLOT_CORRELATION = (0.70, 0.90)


@dataclass(frozen=True)
class WindowTable:
    """Per 5-minute window of every series, fractions of the series' own request.

    mean: GroupedArray, data (n, 2) float64 window means (cpu, mem), one series per task in id
    order. cpu_q: (n, len(LEVELS)) float64 quantile function of the window's 1-second CPU
    samples, NaN rows where unknown. mem_max: (n,) float64, NaN where unknown. ids: (S,) str.
    store: the store read.
    """

    mean: GroupedArray
    cpu_q: NDArray[np.float64]
    mem_max: NDArray[np.float64]
    ids: list[str]
    store: str


def load_windows(path: str | Path) -> WindowTable:
    """Read every window of a ``google2019-usage`` store as fractions of its task's limit.

    ``path`` may also be raw task files (a folder or one file): they are imported into a
    temporary store, read, and the store removed; the reader's errors name the file and line.
    Rows that cannot be fractions or whose percentiles are not a distribution raise a one-line
    TraceError naming the store's usage file, the row, the task and the time."""
    path = Path(path)
    if (path / META_FILE).exists():
        return _read_windows(path)
    from reclaim.traces.importer import import_trace

    with tempfile.TemporaryDirectory(prefix="reclaim-g19-") as tmp:
        out = Path(tmp) / "store"
        import_trace("google2019-usage", path, out)
        table = _read_windows(out)
    return WindowTable(table.mean, table.cpu_q, table.mem_max, table.ids, str(path))


def _read_windows(path: Path) -> WindowTable:
    store = load_store(path)
    cols = store.usage().collect_schema().names()
    missing = [c for c in ("cpu_max", "mem_max", *PERCENTILE_COLUMNS) if c not in cols]
    if missing:
        raise TraceError(
            store.path / USAGE_FILE,
            f"no {missing[0]} column: sub-5-minute slots need the google2019-usage percentiles",
        )
    req = store.workloads().select("id", "cpu_request", "mem_request")
    frame = (
        store.usage()
        .select("id", "time", "cpu", "mem", "cpu_max", "mem_max", *PERCENTILE_COLUMNS)
        .with_row_index("row")
        .join(req, on="id", how="left", maintain_order="left")
        .sort("id", "time")
        .collect()
    )
    _check(frame, store.path / USAGE_FILE)
    cpu_req = frame["cpu_request"].to_numpy()
    mem_req = frame["mem_request"].to_numpy()
    mean = np.column_stack([frame["cpu"].to_numpy() / cpu_req, frame["mem"].to_numpy() / mem_req])
    q = frame.select(*PERCENTILE_COLUMNS).to_numpy().astype(np.float64)
    top = np.fmax(frame["cpu_max"].to_numpy().astype(np.float64), q[:, -1])
    cpu_q = np.column_stack([q, top]) / cpu_req[:, None]
    mem_max = frame["mem_max"].to_numpy().astype(np.float64) / mem_req
    ids, lengths = np.unique(frame["id"].to_numpy(), return_counts=True)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return WindowTable(GroupedArray(mean, indptr), cpu_q, mem_max, ids.tolist(), str(store.path))


def _check(frame: pl.DataFrame, where: Path) -> None:
    """One-line error at the first row that cannot become fractions of a distribution."""
    pcts = [pl.col(c) for c in PERCENTILE_COLUMNS]
    checks = {
        "has no cpu or mem limit in workloads (cannot be a fraction of it)": ~(
            (pl.col("cpu_request") > 0) & (pl.col("mem_request") > 0)
        ).fill_null(True),
        "has unknown or negative mean usage": (
            pl.col("cpu").is_null()
            | pl.col("mem").is_null()
            | ~pl.col("cpu").is_finite()
            | ~pl.col("mem").is_finite()
            | (pl.col("cpu") < 0)
            | (pl.col("mem") < 0)
        ),
        "has cpu percentiles that are only partly known (all or none)": pl.any_horizontal(
            p.is_null() for p in pcts
        )
        & ~pl.all_horizontal(p.is_null() for p in pcts),
        "has cpu percentiles that decrease (not a distribution)": pl.any_horizontal(
            (b < a) for a, b in zip(pcts[:-1], pcts[1:], strict=True)
        ).fill_null(False),
        "has a negative or non-finite cpu percentile or max": pl.any_horizontal(
            (p < 0) | ~p.is_finite() for p in [*pcts, pl.col("cpu_max"), pl.col("mem_max")]
        ).fill_null(False),
    }
    hits = frame.select(**{k: m.arg_true().first() for k, m in checks.items()}).row(0, named=True)
    found = [(i, k) for k, i in hits.items() if i is not None]
    if found:
        i, problem = min(found)
        row = frame.row(i, named=True)
        raise TraceError(
            where, f"window of task {row['id']!r} at time {row['time']:g} s {problem}", row["row"]
        )


def window_positions(
    values: GroupedArray,
    series: NDArray[np.integer],
    start_s: NDArray[np.floating],
    n_slots: NDArray[np.integer],
    period_s: float,
    slot_s: float,
    point: int,
):
    """Checks shared by both resamplers: (series, n_slots, lengths, indptr, slot positions in
    samples (sum n_slots,)). ``point`` 1 (linear, slots are instants): the last slot must not pass
    the last sample's timestamp, ``(length - 1) * period_s``; ``point`` 0 (hold, slots are
    intervals): the last slot's end must not pass the end of the last interval,
    ``length * period_s``."""
    series = np.asarray(series, np.int64)
    n_slots = np.asarray(n_slots, np.int64)
    start_s = np.asarray(start_s, np.float64)
    lengths = values.lengths[series]
    end = start_s + (n_slots - point) * slot_s
    limit = (lengths - point) * period_s + 1e-9
    bad = (start_s < 0) | (end > limit)
    if np.any(bad):
        i = int(np.argmax(bad))
        raise ReclaimError(f"window {i} runs outside series {series[i]} ({lengths[i]} samples)")
    indptr = np.concatenate([[0], np.cumsum(n_slots)]).astype(np.int64)
    k = np.arange(indptr[-1]) - np.repeat(indptr[:-1], n_slots)
    x = (np.repeat(start_s, n_slots) + k * slot_s) / period_s  # slot start, in samples
    return series, n_slots, lengths, indptr, x


@dataclass
class PercentileSlots:
    """Resampler drawing 10-second slots from each window's distribution (module docstring).

    Called like :func:`reclaim.corp.scenario.resample_hold`: ``(values, series, start_s,
    n_slots, period_s, slot_s) -> GroupedArray`` with ``values`` = ``windows.mean``. ``mode``
    (:data:`MODES`): ``"calibrated"`` slots are means of correlated 1-second draws,
    ``"percentiles"`` one 1-second draw each, ``"window-hold"`` holds each window's means
    (sample-and-hold on the same windows). ``correlation``: (cpu, mem) within-window correlation
    of 10-second slots 10 s apart that calibrated slots reproduce (default the measured
    :data:`SLOT_CORRELATION`). Draws come from ``rng``; ``clipped`` counts slots clipped to the
    request, per resource.
    """

    windows: WindowTable
    rng: np.random.Generator
    mode: str = "calibrated"
    correlation: tuple[float, float] = SLOT_CORRELATION
    clipped: NDArray[np.int64] | None = None

    def __call__(
        self,
        values: GroupedArray,
        series: NDArray[np.integer],
        start_s: NDArray[np.floating],
        n_slots: NDArray[np.integer],
        period_s: float,
        slot_s: float,
    ) -> GroupedArray:
        per = period_s / slot_s
        k = int(round(per))
        if abs(per - k) > 1e-9 or k < 1:
            raise ReclaimError(f"slots must divide the {period_s:g} s windows, got {slot_s:g} s")
        if self.mode not in MODES:
            raise ReclaimError(f"slot mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.mode == "calibrated" and abs(slot_s - round(slot_s)) > 1e-9:
            raise ReclaimError(f"calibrated slots are whole seconds, got {slot_s:g} s")
        series, n_slots, _, slot_ptr, _ = window_positions(
            values, series, start_s, n_slots, period_s, slot_s, point=0
        )
        first = np.floor(np.asarray(start_s, np.float64) / slot_s + 1e-9).astype(np.int64)
        # every 5-minute window any job touches, drawn once per job (jobs do not share draws)
        w_first = first // k
        w_last = (first + n_slots - 1) // k
        n_win = w_last - w_first + 1
        job = np.repeat(np.arange(len(series)), n_win)
        win_ptr = np.concatenate([[0], np.cumsum(n_win)])
        rows = values.indptr[series][job] + w_first[job] + (np.arange(win_ptr[-1]) - win_ptr[job])
        drawn = self.draw(rows, k, int(round(slot_s)))  # (W, k, 2)
        # slot s of job i is slot (first_i + s) of its first window onwards
        s = np.arange(slot_ptr[-1]) - np.repeat(slot_ptr[:-1], n_slots)
        pos = np.repeat(first, n_slots) + s - np.repeat(w_first * k, n_slots)
        flat = drawn.reshape(-1, 2)
        out = flat[np.repeat(win_ptr[:-1], n_slots) * k + pos]
        return GroupedArray(out, slot_ptr)

    def draw(self, rows: NDArray[np.int64], k: int, seconds: int = 10) -> NDArray[np.float64]:
        """(W, k, 2) slots of the given window rows, ``seconds`` per slot: CPU from the 1-second
        percentiles, memory up to the window max, each window's mean kept; clipped to [0, 1]
        (the request)."""
        w = self.windows
        mean = w.mean.data[rows]  # (W, 2)
        out = np.repeat(mean[:, None, :], k, axis=1)
        if self.mode != "window-hold":
            q = w.cpu_q[rows]
            ok = ~np.isnan(q).any(axis=1)
            if ok.any():
                levels = self._cpu_levels(int(ok.sum()), k, seconds)
                cpu = _slot_means(_quantile(q[ok], levels), k)
                got = cpu.mean(axis=1, keepdims=True)
                scale = np.divide(
                    mean[ok, :1], got, out=np.zeros_like(got), where=got > 0
                )  # a window whose samples are all 0 has mean 0
                out[ok, :, 0] = np.where(got > 0, cpu * scale, mean[ok, :1])
            top = w.mem_max[rows]
            okm = np.isfinite(top) & (top >= mean[:, 1])
            if okm.any():
                m, hi = mean[okm, 1:2], top[okm, None]
                lo = np.maximum(2.0 * m - hi, 0.0)
                mem = _slot_means(lo + (hi - lo) * self._mem_levels(int(okm.sum()), k, seconds), k)
                mem = np.clip(mem + (m - mem.mean(axis=1, keepdims=True)), 0.0, hi)
                out[okm, :, 1] = mem
        over = out > 1.0
        count = over.reshape(-1, 2).sum(axis=0).astype(np.int64)
        self.clipped = count if self.clipped is None else self.clipped + count
        return np.clip(out, 0.0, 1.0)

    def _levels(self, n: int, k: int) -> NDArray[np.float64]:
        """(n, k) stratified levels in random order: one in each of [j/k, (j+1)/k)."""
        strata = self.rng.permuted(np.tile(np.arange(k), (n, 1)), axis=1)
        return (strata + self.rng.random((n, k))) / k

    def _cpu_levels(self, n: int, k: int, seconds: int) -> NDArray[np.float64]:
        if self.mode == "percentiles":
            return self._levels(n, k)
        return ordered_levels(self.rng, n, k * seconds, second_correlation(self.correlation[0]))

    def _mem_levels(self, n: int, k: int, seconds: int) -> NDArray[np.float64]:
        if self.mode == "percentiles":
            return self._levels(n, k)
        return ordered_levels(self.rng, n, k * seconds, second_correlation(self.correlation[1]))


def ordered_levels(
    rng: np.random.Generator, n: int, seconds: int, phi: float
) -> NDArray[np.float64]:
    """(n, seconds) stratified levels, one in each 1/seconds of [0, 1), in the time order of a
    Gaussian AR(1) with coefficient ``phi`` per second (its ranks): every window's 1-second
    draws still cover its distribution once, and neighbouring seconds are alike as the
    measured data say. ``phi = 0``: a random order."""
    noise = rng.standard_normal((n, seconds))
    noise[:, 1:] *= np.sqrt(1.0 - phi * phi)  # the first second starts stationary
    latent = lfilter([1.0], [1.0, -phi], noise, axis=1)
    ranks = np.argsort(np.argsort(latent, axis=1), axis=1)
    return (ranks + rng.random((n, seconds))) / seconds


def within_window_correlation(slots: NDArray[np.float64]) -> float:
    """Pooled within-window correlation of consecutive slots of windows (W, k): one minus half
    their mean squared difference over the within-window variance (n - 1), as
    :mod:`reclaim.corp.variability` measures real samples."""
    var = slots.var(axis=1, ddof=1).mean()
    half_sq = 0.5 * np.mean(np.diff(slots, axis=1) ** 2)
    return float(1.0 - half_sq / var)


#: The most persistent order :func:`ordered_levels` draws (a near random walk): its 10-second
#: slots reach a within-window correlation of about 0.87 at most.
MAX_PHI = 0.9999


@cache
def second_correlation(target: float, seconds: int = 10, k: int = 30) -> float:
    """The per-second AR(1) coefficient whose 10-second means (``k`` slots of ``seconds`` per
    window) have within-window correlation ``target`` between neighbours: found by bisection on
    1,000 windows drawn with a fixed seed (the correlation grows with the coefficient). A target
    above what :data:`MAX_PHI` reaches gets :data:`MAX_PHI` (memory's measured 0.90: 0.87 is
    reached). Deterministic; cached per target."""
    if not -0.05 < target < 1.0:
        raise ReclaimError(f"a slot correlation must lie in (-0.05, 1), got {target}")

    def correlation(phi: float) -> float:
        rng = np.random.default_rng(20240603)
        return within_window_correlation(
            _slot_means(ordered_levels(rng, 1000, k * seconds, phi), k)
        )

    lo, hi = 0.0, MAX_PHI
    if correlation(lo) >= target:
        return lo
    if correlation(hi) <= target:
        return hi
    for _ in range(20):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if correlation(mid) < target else (lo, mid)
    return 0.5 * (lo + hi)


def _slot_means(values: NDArray[np.float64], k: int) -> NDArray[np.float64]:
    """(W, k) means of ``values`` (W, k x s) over consecutive runs of s (s = 1: unchanged)."""
    return values.reshape(len(values), k, -1).mean(axis=2)


def _quantile(q: NDArray[np.float64], levels: NDArray[np.float64]) -> NDArray[np.float64]:
    """Piecewise-linear quantile functions through (LEVELS, q[i]) at ``levels[i]``: (W, k)."""
    j = np.clip(np.searchsorted(LEVELS, levels, side="right") - 1, 0, len(LEVELS) - 2)
    x0, x1 = LEVELS[j], LEVELS[j + 1]
    rows = np.arange(len(q))[:, None]
    y0, y1 = q[rows, j], q[rows, j + 1]
    return y0 + (y1 - y0) * (levels - x0) / (x1 - x0)
