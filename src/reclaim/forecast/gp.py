"""``gp``: Gaussian-process regression on history patterns, the forecaster of the shaping paper.

Model (paper section 3.1.2-3.1.3). The pattern of time t is x_t = [t, y_{t-h}, ..., y_{t-1}]
(eq. 5), its target y_t. A zero-mean GP with the history kernel
k(x, x') = s2 * rho(||x - x'|| / l) (eq. 6), rho the exponential (Matern 1/2, ``kernel="exp"``,
the paper's GP-Exp) or the squared exponential (``"rbf"``), plus Gaussian noise sigma^2 = r * s2,
is fitted on the N latest patterns of each series (N = h by default) and queried at the pattern of
the next step with the posterior of eq. 7-8.

Scaling (our choice; the paper does not say). A zero-mean prior on raw cores or GiB would pull every
forecast towards 0, so each series' window (its last h + N observations) is standardised: minus
its mean, divided by its standard deviation. A constant window keeps scale 1 and has z = 0; it is
forecast as its value with a spread of about 1e-6 of its units (the floor of s2). The time
coordinate is counted from the forecast origin in units of ``time_unit`` steps (default N): the
training targets sit at -1, ..., -1/N and the next step at 0, so time weighs like one history
value and locality still counts. Outputs are mapped back to the series' units.

Hyper-parameters by evidence maximisation, batched. For fixed (l, r) the evidence is maximised
over s2 in closed form (s2 = z^T (C_l + r I)^{-1} z / n), so only the (log l, log r) plane is
searched, for every series at once in a compiled kernel (:mod:`reclaim.forecast._gp_kernels`):
a grid of l falling by factors of 4 from the top of ``length_scales`` (6 levels, 0.05 to 51.2,
by default) times ``noise_grid`` log-spaced r in ``noise_ratios``, then ``refine`` rounds of
compass search at halving steps (down to 1/4 octave in l and 1/8 of the r grid step). It is
deterministic and runs on numba's threads (NUMBA_NUM_THREADS). On real windows it comes within
0.04 nats of a 41-point-per-axis search for 99 % of series (exp; 0.1 for rbf).
Online (``keys``), a series' (l, r) is re-searched when its key is new or every ``refresh`` calls;
in between the stored (l, r) are reused and s2 is re-profiled (a by-product of the factorisation).
A refresh searches the whole grid again: a local search from the previous optimum (warm start)
was tried and lost more than 0.5 nats on 12 % of real windows, the evidence having several modes.

Short series. A series with fewer than h + 2 observations (under 2 patterns) is answered by
:func:`reclaim.forecast.naive.naive_forecast` (window h) and flagged in ``Forecast.fallback``;
between h + 2 and h + N observations the model uses the patterns the series has.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Self

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.forecast import _gp_kernels
from reclaim.forecast._copies import first_copies
from reclaim.forecast.base import (
    Forecast,
    Forecaster,
    ForecastError,
    KeyedState,
    check_horizon,
    check_keys,
    validate_series,
)
from reclaim.forecast.naive import naive_forecast
from reclaim.registry import register

KERNELS = ("exp", "rbf")
#: Fewer series than this go through a kernel on one thread. Speed trick: waking numba's other
#: threads costs some 0.1 ms per kernel call on an idle machine and whole milliseconds on a busy
#: one (the last thread to be scheduled holds up the call), more than a few hundred series take;
#: the simulator asks once per tick with mostly small batches (benchmarks/bench_shaping.py).
#: Series are independent, so the results are the same bits on any number of threads.
PARALLEL_FROM = 2048


@contextlib.contextmanager
def _threads_for(count: NDArray[np.int64]):
    """numba's threads for a kernel call over the series with ``count`` >= 2: one below
    :data:`PARALLEL_FROM` such series, else as many as the caller set (restored after)."""
    before = numba.get_num_threads()
    if before == 1 or np.count_nonzero(count >= 2) >= PARALLEL_FROM:
        yield
        return
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


@dataclass(frozen=True, slots=True)
class Patterns:
    """A batch's standardised windows, from which the patterns (eq. 5) are read.

    Z: (S, h+N) each series' last h + N observations standardised, right-aligned (empty slots 0);
    count: (S,) int64, real patterns per series, min(length - h, N) and at least 0, the last
    ``count`` of the N slots; loc, scale: (S,) the window's mean and standard deviation in the
    series' units (y = loc + scale * z; scale 1 for a constant window); h: values per pattern;
    dt: one step in units of the time coordinate.
    """

    Z: NDArray[np.float64]
    count: NDArray[np.int64]
    loc: NDArray[np.float64]
    scale: NDArray[np.float64]
    h: int
    dt: float

    def series(self, s: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray]:
        """Series ``s``'s regression problem as a GP code sees it: training patterns (n, h+1)
        [t, z_{t-h}, ..., z_{t-1}] with t counted from the forecast origin, their targets (n,),
        and the next step's query pattern (h+1,) at t = 0, all standardised."""
        N = self.Z.shape[1] - self.h
        X, target = _gp_kernels.patterns_reference(self.Z[s : s + 1], self.h, self.dt)
        n = int(self.count[s])
        query = np.concatenate([[0.0], self.Z[s, N:]])
        return X[0, N - n :], target[0, N - n :], query


def history_patterns(
    y: GroupedArray, history: int, patterns: int, time_unit: float | None = None
) -> Patterns:
    """The standardised windows of the last ``history + patterns`` observations of each series.

    y: S series, validated (finite, non-empty); ``time_unit`` in steps, None = ``patterns``.
    """
    h, N = int(history), int(patterns)
    data = np.asarray(y.data, dtype=np.float64)
    Z, length, loc, scale = _gp_kernels.standardise(data, y.indptr.astype(np.int64), h + N)
    count = np.clip(length - h, 0, N)
    dt = 1.0 / (N if time_unit is None else float(time_unit))
    return Patterns(Z, count, loc, scale, h, dt)


def _tails(y: GroupedArray, rows: NDArray[np.int64], window: int) -> GroupedArray:
    """``y.tails(window).take(rows)``: the last ``window`` observations of the series ``rows``."""
    ends = y.indptr[1:][rows]
    starts = np.maximum(ends - window, y.indptr[:-1][rows])
    lengths = ends - starts
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    index = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
    return GroupedArray(y.data[index], indptr)


@register("forecaster", "gp")
class GaussianProcess(Forecaster):
    """GP regression on history patterns, batched across series.

    kernel: "exp" (Matern 1/2) or "rbf"; history: h, values per pattern; patterns: N, latest
    patterns trained on (None = h); refresh: with keys, calls between hyper-parameter searches of a
    series (without keys every call searches); length_scales: (low, high) box for l, searched on a
    grid from ``high`` down by factors of 4 (the box's bottom moves down to the grid's last point);
    noise_ratios: (low, high) box for r = sigma^2 / s2, searched on ``noise_grid`` log-spaced
    points; refine: compass-search rounds after the grid; time_unit: steps per unit of the time
    coordinate (None = N). Length scales are in standardised units.

    Multi-step forecasts iterate the mean: step k's pattern holds the predicted means of steps
    before it as history, and its std is the GP's at that pattern. That std ignores the uncertainty
    of the fed-back values (it treats them as observed), so beyond one step it is optimistic.

    Learned (per series, NaN where unused): ``length_scale_``, ``noise_ratio_``, ``signal_var_``
    (s2, standardised units), ``log_evidence_`` (of the standardised window); ``searched_`` (S,)
    bool, the series whose (l, r) this call searched; ``fallback_`` (S,) bool; ``patterns_``
    (:class:`Patterns`); ``factor_`` and ``alpha_`` (S, N, N) and (S, N), the Cholesky factor of
    C + r I and (C + r I)^{-1} z, 8 * S * (N + 1) * N bytes; ``same_as_`` (S,) int64, the series
    whose fit each one copies (itself if fitted): series with the same standardised window and
    state are fitted once, and a copy's factors are its source's rows (its own are not written).
    """

    def __init__(
        self,
        kernel: str = "exp",
        history: int = 10,
        patterns: int | None = None,
        refresh: int = 10,
        length_scales: tuple[float, float] = (0.05, 51.2),
        noise_ratios: tuple[float, float] = (1e-4, 1e2),
        noise_grid: int = 5,
        refine: int = 3,
        time_unit: float | None = None,
    ) -> None:
        self.kernel = kernel
        self.history = history
        self.patterns = patterns
        self.refresh = refresh
        self.length_scales = length_scales
        self.noise_ratios = noise_ratios
        self.noise_grid = noise_grid
        self.refine = refine
        self.time_unit = time_unit

    def _settings(self) -> tuple[int, int, float, int, NDArray[np.float64]]:
        """h, N, log of the top length scale, levels of the l grid, the log r grid."""
        if self.kernel not in KERNELS:
            raise ForecastError(f"gp: kernel must be one of {KERNELS}, got {self.kernel!r}")
        h = int(self.history)
        N = h if self.patterns is None else int(self.patterns)
        if h < 1 or N < 2:
            raise ForecastError(
                f"gp: needs history >= 1 and at least 2 patterns (N, default h), got {h}, {N}"
            )
        if int(self.refresh) < 1:
            raise ForecastError(f"gp: refresh must be at least 1 call, got {self.refresh}")
        (l_lo, l_hi), (r_lo, r_hi) = self.length_scales, self.noise_ratios
        if not (0 < l_lo <= l_hi and 0 < r_lo <= r_hi and int(self.noise_grid) >= 1):
            raise ForecastError("gp: search boxes need 0 < low <= high and noise_grid >= 1")
        levels = 1 + int(np.ceil(np.log(l_hi / l_lo) / np.log(4.0) - 1e-9))
        log_r = np.linspace(np.log(r_lo), np.log(r_hi), int(self.noise_grid))
        return h, N, float(np.log(l_hi)), levels, log_r

    def fit(self, y: GroupedArray, keys: ArrayLike | None = None) -> Self:
        """Choose (l, r) per series (searched, or reused between online refreshes) and factorise.

        y: S series in their units; keys: (S,) integers naming them across calls, or None.
        """
        h, N, top, levels, log_r = self._settings()
        validate_series(y, "gp")
        keys = check_keys(keys, len(y))
        exp_kernel = self.kernel == "exp"
        pat = history_patterns(y, h, N, self.time_unit)
        fallback = pat.count < 2
        S = len(y)

        length, ratio = np.full(S, np.nan), np.full(S, np.nan)
        if keys is None:
            search = ~fallback
        else:
            if not hasattr(self, "state_"):
                self.state_ = KeyedState(length=np.nan, ratio=np.nan, age=0.0)
            stored, _ = self.state_.align(keys)
            length, ratio = stored["length"], stored["ratio"]
            known = ~np.isnan(length)
            search = (~known | (stored["age"] + 1 >= self.refresh)) & ~fallback

        # kernels write the rows of the series they are handed (count >= 2); a series is left
        # out of a call by handing it count 0, so no array is copied
        same = self._same_fit(pat, search, length, ratio)
        copy = same != np.arange(S)
        L, alpha = self._factor_buffers(S, N)
        s2, lml = np.full(S, np.nan), np.full(S, np.nan)
        if search.any():
            searched = np.where(search & ~copy, pat.count, 0)
            with _threads_for(searched):
                found = _gp_kernels.search(
                    pat.Z,
                    searched,
                    h,
                    pat.dt,
                    exp_kernel,
                    top,
                    levels,
                    log_r,
                    int(self.refine),
                    L,
                    alpha,
                )
            length, ratio = np.where(search, found[0], length), np.where(search, found[1], ratio)
            s2, lml = np.where(search, found[2], s2), np.where(search, found[3], lml)
        reuse = ~search & ~fallback
        if reuse.any():
            reused = np.where(reuse & ~copy, pat.count, 0)
            with _threads_for(reused):
                again = _gp_kernels.factor(
                    pat.Z, reused, h, pat.dt, exp_kernel, length, ratio, L, alpha
                )
            s2, lml = np.where(reuse, again[0], s2), np.where(reuse, again[1], lml)
        if copy.any():
            source = same[copy]
            for learned in (length, ratio, s2, lml):
                learned[copy] = learned[source]

        if keys is not None:
            age = np.where(search, 0.0, stored["age"] + 1)
            self.state_.store(keys, {"length": length, "ratio": ratio, "age": age})

        # no point of the search box factorised (never seen on real data): answer naively
        fallback |= np.isnan(s2)
        self.y_ = y
        self.patterns_ = pat
        self.fallback_ = fallback
        self.searched_ = search
        self.length_scale_ = np.where(fallback, np.nan, length)
        self.noise_ratio_ = np.where(fallback, np.nan, ratio)
        self.signal_var_ = s2
        self.log_evidence_ = lml
        self.factor_, self.alpha_ = L, alpha
        self.same_as_ = same
        return self

    @staticmethod
    def _same_fit(
        pat: Patterns, search: NDArray[np.bool_], length: NDArray, ratio: NDArray
    ) -> NDArray[np.int64]:
        """(S,) for each series the first one whose fit and forecast it shares, itself if none:
        the same standardised window, scale and pattern count, and either both searched or both
        reusing the same (l, r). Each series' numbers depend on these alone, so a copy has the
        bits its own fit would give.

        Speed trick (:mod:`reclaim.forecast._copies`; ``benchmarks/bench_pace.py --scale small
        --cells pessimistic/gp-exp``)."""
        reused = np.where(search, np.nan, 1.0)
        S, W = pat.Z.shape
        state = np.column_stack([pat.count, pat.loc, pat.scale, reused * length, reused * ratio])
        return first_copies(pat.Z.ravel(), np.arange(0, S * W + 1, W), state)

    def predict(self, h: int = 1) -> Forecast:
        """Predictive mean and std of the next ``h`` observations, (S, h) in the series' units."""
        steps = check_horizon(h)
        pat, fallback, same = self.patterns_, self.fallback_, self.same_as_
        copy = (same != np.arange(len(same))) & ~fallback
        modelled = np.where(fallback | copy, 0, pat.count)
        with _threads_for(modelled):
            mean, var = _gp_kernels.posterior(
                pat.Z,
                modelled,
                pat.h,
                pat.dt,
                self.kernel == "exp",
                self.length_scale_,
                self.noise_ratio_,
                self.signal_var_,
                self.factor_,
                self.alpha_,
                steps,
            )
        mean[copy], var[copy] = mean[same[copy]], var[same[copy]]
        mean = pat.loc[:, None] + pat.scale[:, None] * mean
        std = pat.scale[:, None] * np.sqrt(var)
        if fallback.any():
            # naive on the model's window is enough: it only looks at the last h changes; and
            # only on the series that fall back (each series' answer depends on it alone)
            rows = np.flatnonzero(fallback)
            tails = _tails(self.y_, rows, pat.Z.shape[1])
            naive = naive_forecast(tails, tails.data, pat.h, steps)
            mean[rows], std[rows] = naive.mean, naive.std
        return Forecast(mean, std, fallback=fallback)

    def _factor_buffers(self, S: int, N: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(S, N, N) and (S, N) arrays for a fit's factors, views of buffers kept from call to
        call (so ``factor_`` and ``alpha_`` are overwritten by the next fit). Speed trick: at
        paper scale they are 30 MB a tick, and fresh pages cost the kernel's zeroing each time
        (benchmarks/bench_shaping.py)."""
        buf = getattr(self, "_buffers", None)
        if buf is None or buf[0].shape[0] < S or buf[0].shape[1] != N:
            size = max(S, 2 * (0 if buf is None else buf[0].shape[0]))
            buf = self._buffers = (np.empty((size, N, N)), np.empty((size, N)))
        return buf[0][:S], buf[1][:S]


# the paper's two variants by name; the same class, only the kernel's default differs
gp_exp = register("forecaster", "gp-exp")(functools.partial(GaussianProcess, kernel="exp"))
gp_rbf = register("forecaster", "gp-rbf")(functools.partial(GaussianProcess, kernel="rbf"))
