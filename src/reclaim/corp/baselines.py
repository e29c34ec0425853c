"""CORP's three baselines as :class:`~reclaim.corp.provisioning.Provisioner`\\ s: RCCR, CloudScale
and DRA, each run the way section IV of the CORP paper (Liu, Shen and Chen) ran it.

Every method answers the same question for a batch of S running jobs and one resource: how much of
each job's allocation ``request`` (S,) may be lent to other jobs for the next ``horizon`` slots,
given the job's usage so far. All amounts are in the resource's units (cores, GiB, percent); the
answer is always clipped to [0, request], and a job whose history is too short for the method lends
nothing (0) rather than a guess.

* :class:`Rccr` (``rccr``; Carvalho et al., SoCC 2014, "Long-term SLOs for reclaimed cloud
  computing resources"): exponential smoothing (statsforecast AutoETS, form chosen by AICc) of the
  *unused* amount ``request - usage``; the lendable amount is the lower end of the ``confidence``
  interval, at its lowest over the window.
* :class:`CloudScale` (``cloudscale``; Shen et al., SoCC 2011): PRESS's FFT signature when the
  history repeats, a discrete-time Markov chain over 40 usage levels otherwise, then padding: the
  larger of a burst padding (high-frequency part of the recent usage) and an adaptive padding
  (recent under-estimation errors).
* :class:`Dra` (``dra``; Shanmuganathan et al., SIGMETRICS 2013): demand = mean usage over the last
  ``window`` slots, no fluctuation handling, no confidence bound. :func:`redistribute` is DRA's
  weighted max-min split of a bulk capacity among VMs by shares and demands, and
  :func:`assign_shares` the static 4:2:1 high/medium/low share mix the paper gives VMs.

None of the three learns across jobs, so ``fit`` only checks its input and returns self; all the
work happens per call on each job's own history. Nothing here is random: the same histories give
the same answer bit for bit (:func:`assign_shares` takes an explicit seed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reclaim.core.capabilities import ControllerCapabilities, ProvisionerCapabilities
from reclaim.core.component import Component
from reclaim.core.grouped import GroupedArray
from reclaim.core.types import Decisions
from reclaim.corp.provisioning import UnusedEstimate
from reclaim.errors import ReclaimError
from reclaim.forecast.base import ForecastError
from reclaim.forecast.corp import confidence_z
from reclaim.forecast.ets import AutoEts
from reclaim.registry import register

# --------------------------------------------------------------------------------------------
# shared input checks


def _check(
    history: GroupedArray, request: ArrayLike, who: str
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(data (N,) float64, request (S,) float64) after checking shapes and values.

    Empty series are allowed (a job that has just started: it lends nothing); non-finite usage, a
    request of the wrong length, or a negative or non-finite request are errors.
    """
    data = np.asarray(history.data)
    if data.ndim != 1:
        raise ForecastError(f"{who}: expects one resource (1-D data), got shape {data.shape}")
    data = data.astype(np.float64, copy=False)
    if not np.isfinite(data).all():
        raise ForecastError(f"{who}: usage holds NaN or infinite values")
    req = np.asarray(request, dtype=np.float64).reshape(-1)
    if len(req) != len(history):
        raise ForecastError(f"{who}: {len(history)} series but {len(req)} requests")
    if not (np.isfinite(req).all() and (req >= 0).all()):
        raise ForecastError(f"{who}: requests must be finite and non-negative")
    return data, req


def _estimate(point, lower, valid, req) -> UnusedEstimate:
    """Both amounts clipped to [0, request], 0 where there is no prediction."""
    valid = np.asarray(valid, bool)
    return UnusedEstimate(
        np.where(valid, np.clip(point, 0.0, req), 0.0),
        np.where(valid, np.clip(lower, 0.0, req), 0.0),
        valid,
    )


def _check_horizon(horizon: int) -> int:
    if int(horizon) != horizon or horizon < 1:
        raise ForecastError(f"horizon must be a positive whole number of slots, got {horizon}")
    return int(horizon)


class _Baseline(Component):
    """Settings by name (scikit-learn convention) and a ``fit`` that only checks its input."""

    name = ""
    __capabilities__ = ProvisionerCapabilities()

    def fit(self, usage: GroupedArray, request: ArrayLike) -> Self:
        """Nothing to learn across jobs: check the input, record how many series, return self."""
        _check(usage, request, self.name)
        self.n_fit_ = len(usage)
        return self


# --------------------------------------------------------------------------------------------
# RCCR


@register("provisioner", "rccr")
class Rccr(_Baseline):
    """RCCR as CORP ran it: ETS on each job's unused amount, lower confidence bound over the window.

    Per job, ``unused = request - usage`` (negative where the job exceeded its request) over the
    last ``window`` slots goes to :class:`reclaim.forecast.ets.AutoEts` (statsforecast AutoETS,
    non-seasonal form chosen by AICc, ``model`` to fix one), which gives the mean and standard
    deviation of each of the next ``horizon`` slots. The lendable amount is
    ``min_k (mean_k - z * std_k)``, with ``z = Phi^-1(1 - (1 - confidence) / 2)`` as in CORP's eq.
    18-19 (:func:`reclaim.forecast.corp.confidence_z`), clipped to [0, request]: the lower end of the
    interval must hold at every slot of the window, so the lowest one is lent.

    Settings: window (slots of history fed to ETS; 40, AutoEts's default), confidence (eta; 0.95,
    CORP's default, see :mod:`reclaim.forecast.corp`), min_length (fewer slots and the job lends 0;
    10, AutoEts's minimum for a fit), model (statsforecast's three letters; "ZZN" selects).
    Jobs whose ETS fit fails (AutoEts answers them with its naive fallback) also lend 0.

    Cost: one AutoETS selection per job per call, about 6 ms per job at window 40 ("ANN" instead
    of "ZZN" is ten times cheaper).
    """

    name = "rccr"

    def __init__(
        self,
        window: int = 40,
        confidence: float = 0.95,
        min_length: int = 10,
        model: str = "ZZN",
    ) -> None:
        self.window = window
        self.confidence = confidence
        self.min_length = min_length
        self.model = model

    def bounds(
        self, history: GroupedArray, request: ArrayLike, horizon: int
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
        """(mean (S, h), lower (S, h), usable (S,)): ETS mean and eq. 19 lower bound of the unused
        amount per slot, in the resource's units; ``usable`` False where the job lends 0."""
        data, req = _check(history, request, self.name)
        h = _check_horizon(horizon)
        n = len(history)
        mean, lower = np.zeros((n, h)), np.zeros((n, h))
        usable = history.lengths >= self.min_length
        rows = np.flatnonzero(usable)
        if len(rows):
            owner = np.repeat(np.arange(n), history.lengths)
            unused = GroupedArray(req[owner] - data, history.indptr).take(rows)
            ets = AutoEts(
                window=self.window,
                reselect=1,
                min_length=max(7, min(self.min_length, self.window)),  # statsforecast's floor
                model=self.model,
            )
            fc = ets.forecast(unused, h)
            z = confidence_z(self.confidence)
            mean[rows] = fc.mean
            lower[rows] = fc.mean - z * fc.std
            usable[rows] = ~fc.fallback
        return mean, lower, usable

    def lendable(
        self, history: GroupedArray, request: ArrayLike, horizon: int
    ) -> NDArray[np.float64]:
        """(S,) lowest lower bound of the unused amount over the window, clipped to [0, request];
        0 for histories shorter than ``min_length`` or without an ETS fit."""
        return self.estimate(history, request, horizon).lower

    def estimate(self, history: GroupedArray, request: ArrayLike, horizon: int) -> UnusedEstimate:
        """Point = the ETS mean of the unused amount averaged over the window, lower = its lowest
        lower bound there; no prediction below ``min_length`` slots or without an ETS fit."""
        mean, lower, usable = self.bounds(history, request, horizon)
        req = np.asarray(request, np.float64).reshape(-1)
        return _estimate(mean.mean(axis=1), lower.min(axis=1), usable, req)


# --------------------------------------------------------------------------------------------
# CloudScale: pure functions on one series, then the batched provisioner


def find_signature(
    x: ArrayLike, min_corr: float = 0.85, mean_tol: float = 0.1, min_periods: int = 3
) -> tuple[int, NDArray[np.float64]] | None:
    """PRESS's repeating-pattern test: (period Z in slots, signature (Z,)) or None.

    x: (n,) usage history, oldest first. As PRESS (Gong et al., CNSM 2010) does it: the dominant
    frequency of the FFT of the demeaned series (the DC term excluded) gives a candidate period
    ``Z = round(n / f)``; the last ``Q * Z`` slots (Q = n // Z) are cut into Q pattern windows; the
    pattern repeats when every window varies, the mean pairwise Pearson correlation of the windows
    is at least ``min_corr`` and their means differ by at most ``mean_tol`` times the series' range.
    The signature is the position-wise mean of the windows; slot ``j`` of the series (counted from
    its start) is then predicted by ``signature[(j - (n - Q * Z)) % Z]``, so the slot right after
    the history is ``signature[0]``.

    Thresholds (the CloudScale/PRESS papers give the test, not all the numbers): 0.85 for the
    correlation, 10 % of the range for the means, and at least ``min_periods`` = 3 repetitions in
    the history (two windows correlate by chance too easily).
    """
    x = np.asarray(x, np.float64)
    n = len(x)
    if n < 2 * min_periods or np.ptp(x) == 0:
        return None
    power = np.abs(np.fft.rfft(x - x.mean())) ** 2
    f = int(np.argmax(power[1:])) + 1
    period = int(round(n / f))
    q = n // period if period >= 2 else 0
    if period < 2 or q < min_periods:
        return None
    win = x[n - q * period :].reshape(q, period)
    if (np.ptp(win, axis=1) == 0).any():
        return None
    corr = np.corrcoef(win)[np.triu_indices(q, 1)]
    means = win.mean(axis=1)
    if corr.mean() < min_corr or np.ptp(means) > mean_tol * np.ptp(x):
        return None
    return period, win.mean(axis=0)


def signature_predict(
    n: int, period: int, signature: NDArray[np.float64], origins: ArrayLike, h: int
) -> NDArray[np.float64]:
    """(k, h) signature predictions of slots ``t .. t + h - 1`` for each origin t (k,) of a
    history of ``n`` slots whose signature was found by :func:`find_signature`."""
    start = n - (n // period) * period
    slots = np.asarray(origins, np.int64)[:, None] + np.arange(h)
    return signature[(slots - start) % period]


def markov_chain(
    x: ArrayLike, n_bins: int = 40
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64]]:
    """Discrete-time Markov chain over ``n_bins`` equal-width usage levels of one history.

    x: (n,) usage. Returns (state per slot (n,) int64, transition matrix P (M, M), value per state
    (M,)). The levels split [min, max] of the history (PRESS and CloudScale use 40); P counts
    consecutive pairs; a state never left (only seen at the end) stays put. A state's value is the
    mean of the history's values that fell in it, exact for series with a few discrete levels
    (the bin midpoint for unvisited states, which the forecast never picks: P only leads to
    visited states).
    """
    x = np.asarray(x, np.float64)
    m = int(n_bins)
    lo, span = float(x.min()), float(np.ptp(x))
    if span > 0:
        state = np.minimum((x - lo) / span * m, m - 1).astype(np.int64)
    else:
        state = np.zeros(len(x), np.int64)
    counts = np.bincount(state[:-1] * m + state[1:], minlength=m * m).reshape(m, m).astype(float)
    out = counts.sum(axis=1)
    counts[out == 0, :] = 0.0
    counts[out == 0, np.flatnonzero(out == 0)] = 1.0
    p = counts / counts.sum(axis=1, keepdims=True)
    mid = lo + (np.arange(m) + 0.5) * (span / m)
    visits = np.bincount(state, minlength=m)
    sums = np.bincount(state, weights=x, minlength=m)
    value = np.where(visits > 0, sums / np.maximum(visits, 1), mid)
    return state, p, value


def markov_predict(
    state: NDArray[np.int64],
    p: NDArray[np.float64],
    value: NDArray[np.float64],
    origins: ArrayLike,
    h: int,
) -> NDArray[np.float64]:
    """(k, h) multi-step Markov predictions of slots ``t .. t + h - 1`` for each origin t (k,).

    From the state of slot ``t - 1``, step k's distribution is row ``state`` of ``P^k``; the
    prediction is the value of its most probable state (PRESS; ties go to the lower level).
    """
    o = np.asarray(origins, np.int64)
    powers = np.empty((h, *p.shape))
    powers[0] = p
    for k in range(1, h):
        powers[k] = powers[k - 1] @ p
    rows = powers[:, state[o - 1], :]  # (h, k, M)
    return value[np.argmax(rows, axis=2)].T


def burst_padding(x: ArrayLike, fraction: float = 0.8) -> float:
    """CloudScale's burst-based padding of one recent usage window x (n,), in its units.

    CloudScale extracts the burst pattern with an FFT: the high-frequency components of the recent
    usage are what a smooth prediction misses. We keep the highest ``fraction`` of the rfft bins
    (the lowest ones, always including the DC term, are zeroed), transform back, and pad by the
    largest positive excursion of that burst signal. A flat or slowly varying window pads ~0; a
    recent spike pads about its height above the local level.
    """
    x = np.asarray(x, np.float64)
    if len(x) < 2:
        return 0.0
    spec = np.fft.rfft(x)
    cut = max(1, math.ceil((1.0 - fraction) * len(spec)))
    spec[:cut] = 0.0
    burst = np.fft.irfft(spec, n=len(x))
    return max(float(burst.max()), 0.0)


@register("provisioner", "cloudscale")
class CloudScale(_Baseline):
    """CloudScale as CORP ran it: PRESS/Markov usage prediction plus burst and adaptive padding.

    Per job, on the last ``window`` slots of usage:

    1. **Prediction** of the next ``horizon`` slots: the FFT signature when the history repeats
       (:func:`find_signature`), else the multi-step discrete-time Markov chain over ``n_bins``
       levels (:func:`markov_chain`, :func:`markov_predict`).
    2. **Burst padding** (:func:`burst_padding`) of the last ``burst_window`` slots.
    3. **Adaptive padding**: the same predictor is backtested at the last ``error_origins`` origins
       of the history whose window ``(t, t + horizon]`` is observed (in-sample: the model is the one
       fitted on the whole history); an origin's under-estimation is
       ``max(0, max actual - max predicted)`` over its window and the padding is their mean.
       CloudScale pads by the larger of the two paddings.

    Lendable = ``request - (max predicted usage over the window + padding)``, clipped to
    [0, request]; histories shorter than ``min_length`` lend 0.

    Settings: window (144 slots), min_length (12), n_bins (40, PRESS/CloudScale), min_corr (0.85),
    mean_tol (0.1), min_periods (3), burst_window (32 slots), burst_fraction (0.8), error_origins
    (12). Everything except n_bins and the shape of the method is our choice; see the functions.

    Cost: a per-job loop over small arrays (40 x 40 chains, one FFT), about 0.5 ms per job.
    Learned by :meth:`lendable` (diagnostics of the last call): ``periodic_`` (S,) bool (signature
    used), ``predicted_`` (S, h) predicted usage, ``burst_pad_`` and ``error_pad_`` (S,).
    """

    name = "cloudscale"

    def __init__(
        self,
        window: int = 144,
        min_length: int = 12,
        n_bins: int = 40,
        min_corr: float = 0.85,
        mean_tol: float = 0.1,
        min_periods: int = 3,
        burst_window: int = 32,
        burst_fraction: float = 0.8,
        error_origins: int = 12,
    ) -> None:
        self.window = window
        self.min_length = min_length
        self.n_bins = n_bins
        self.min_corr = min_corr
        self.mean_tol = mean_tol
        self.min_periods = min_periods
        self.burst_window = burst_window
        self.burst_fraction = burst_fraction
        self.error_origins = error_origins

    def _one(self, x: NDArray[np.float64], h: int) -> tuple[bool, NDArray, float, float]:
        """(periodic, predicted (h,), burst padding, adaptive padding) of one history x (n,)."""
        n = len(x)
        found = find_signature(x, self.min_corr, self.mean_tol, self.min_periods)
        origins = np.arange(max(1, n - h - int(self.error_origins) + 1), n - h + 1)
        at = np.concatenate([origins, [n]])
        if found is not None:
            pred = signature_predict(n, found[0], found[1], at, h)
        else:
            state, p, value = markov_chain(x, self.n_bins)
            pred = markov_predict(state, p, value, at, h)
        burst = burst_padding(x[-int(self.burst_window) :], self.burst_fraction)
        adaptive = 0.0
        if len(origins):
            actual = x[origins[:, None] + np.arange(h)]
            under = np.maximum(actual.max(axis=1) - pred[:-1].max(axis=1), 0.0)
            adaptive = float(under.mean())
        return found is not None, pred[-1], burst, adaptive

    def lendable(
        self, history: GroupedArray, request: ArrayLike, horizon: int
    ) -> NDArray[np.float64]:
        """(S,) ``request - (max predicted usage + padding)`` over the window, clipped to
        [0, request]; 0 for histories shorter than ``min_length``."""
        return self.estimate(history, request, horizon).lower

    def estimate(self, history: GroupedArray, request: ArrayLike, horizon: int) -> UnusedEstimate:
        """Point = ``request - mean predicted usage`` over the window (the prediction before
        padding), lower = ``request - (max predicted usage + padding)``, what CloudScale would
        lend; no prediction below ``min_length`` slots."""
        data, req = _check(history, request, self.name)
        h = _check_horizon(horizon)
        if self.n_bins < 1 or self.window < 2:
            raise ReclaimError("cloudscale: n_bins must be >= 1 and window >= 2")
        n = len(history)
        tails = GroupedArray(data, history.indptr).tails(int(self.window))
        usable = tails.lengths >= max(int(self.min_length), 2)
        self.periodic_ = np.zeros(n, bool)
        self.predicted_ = np.zeros((n, h))
        self.burst_pad_ = np.zeros(n)
        self.error_pad_ = np.zeros(n)
        for i in np.flatnonzero(usable):
            out = self._one(tails[i], h)
            self.periodic_[i], self.predicted_[i], self.burst_pad_[i], self.error_pad_[i] = out
        demand = self.predicted_.max(axis=1) + np.maximum(self.burst_pad_, self.error_pad_)
        return _estimate(req - self.predicted_.mean(axis=1), req - demand, usable, req)


# --------------------------------------------------------------------------------------------
# DRA


def redistribute(capacity: float, shares: ArrayLike, demand: ArrayLike) -> NDArray[np.float64]:
    """DRA's split of a bulk ``capacity`` among n VMs: weighted max-min fairness, (n,) amounts.

    shares: (n,) >= 0, the VMs' weights (4:2:1 for high/medium/low). demand: (n,) >= 0, in the
    capacity's units. No VM gets more than its demand; the capacity is water-filled in proportion
    to the shares among the VMs still wanting more: a level ``lam`` gives VM i
    ``min(demand_i, lam * share_i)``, with ``lam`` the smallest level that hands out the whole
    capacity (or every demand, when the demands sum to less: the rest stays unallocated). A VM with
    share 0 gets nothing unless every VM with a share is satisfied (it then gets nothing either:
    shares are what entitles a VM to capacity). Exact up to float rounding, O(n log n).

    Example: capacity 10, shares (4, 2, 1), demands (2, 10, 10) -> (2, 16/3, 8/3).
    """
    w = np.asarray(shares, np.float64).reshape(-1)
    d = np.asarray(demand, np.float64).reshape(-1)
    if w.shape != d.shape:
        raise ReclaimError(f"redistribute: {len(w)} shares but {len(d)} demands")
    if not (np.isfinite(w).all() and np.isfinite(d).all()) or (w < 0).any() or (d < 0).any():
        raise ReclaimError("redistribute: shares and demands must be finite and non-negative")
    if not math.isfinite(capacity) or capacity < 0:
        raise ReclaimError(f"redistribute: capacity must be finite and >= 0, got {capacity}")
    if d.sum() <= capacity:
        return d.copy()
    out = np.zeros_like(d)
    has = w > 0
    if not has.any():
        return out
    idx = np.flatnonzero(has)
    ratio = d[idx] / w[idx]  # the level at which each VM is satisfied
    order = np.argsort(ratio, kind="stable")
    r, dd, ww = ratio[order], d[idx][order], w[idx][order]
    # level if the first k VMs (by ratio) are satisfied and the rest share what remains
    given = np.concatenate([[0.0], np.cumsum(dd)[:-1]])
    weight_left = np.cumsum(ww[::-1])[::-1]
    lam = (capacity - given) / weight_left
    # the first k whose own ratio exceeds the level it would get is the first unsatisfied one
    k = int(np.argmax(r > lam)) if (r > lam).any() else len(r)
    level = lam[k] if k < len(r) else r[-1]
    out[idx] = np.minimum(d[idx], level * w[idx])
    return out


def assign_shares(n_vms: int, seed: int) -> NDArray[np.float64]:
    """(n_vms,) static shares, a seeded shuffle of equal thirds of high, medium and low (4, 2, 1).

    The paper sets each VM's share at its creation "so that the VMs had a mix of high, medium and
    low shares that correspond to a ratio of 4:2:1"; we tile (4, 2, 1) (counts differ by at most
    one) and permute it with ``np.random.default_rng(seed)``.
    """
    if n_vms < 0:
        raise ReclaimError(f"assign_shares: n_vms must be >= 0, got {n_vms}")
    tiled = np.resize(np.array([4.0, 2.0, 1.0]), int(n_vms))
    return np.random.default_rng(seed).permutation(tiled)


@register("provisioner", "dra")
class Dra(_Baseline):
    """DRA as CORP ran it: demand = mean usage over the last ``window`` slots.

    DRA's run-time software "periodically estimates" each VM's demand; the CORP paper stresses that
    it has neither fluctuation handling nor a confidence bound, so the estimate is the plain mean
    of the last ``window`` slots (12, CORP's input window Delta).

    ``mode="published"`` (default): DRA lends nothing (:meth:`lendable` is 0; the paper: it "does
    not utilize the allocated but unused resource and reallocate it to other jobs"). The simulator
    instead splits the purchased capacity (every VM's) among the VMs every window by
    :func:`redistribute` over the static 4:2:1 shares of :func:`assign_shares` and each VM's
    demand (the sum of its jobs' :meth:`demand`), and places new jobs on what is left unallocated
    at a random VM (its capabilities' ``redistributes`` tells it to; see
    :mod:`reclaim.corp.simulator`).
    ``mode="lend"``: the earlier reading, kept for comparison: lendable = ``request - demand``,
    clipped to [0, request], lent to new jobs like the other methods' offers.
    """

    name = "dra"

    def __init__(self, window: int = 12, mode: str = "published") -> None:
        self.window = window
        self.mode = mode

    @property
    def __capabilities__(self) -> ProvisionerCapabilities:  # type: ignore[override]
        """``redistributes`` when the simulator must run DRA's VM-level redistribution
        (``mode="published"``)."""
        if self.mode not in ("published", "lend"):
            raise ReclaimError(f"dra: mode must be 'published' or 'lend', got {self.mode!r}")
        return ProvisionerCapabilities(redistributes=self.mode == "published")

    def demand(self, history: GroupedArray) -> NDArray[np.float64]:
        """(S,) mean usage over each job's last ``window`` slots (0 for an empty history)."""
        data, _ = _check(history, np.zeros(len(history)), self.name)
        if int(self.window) != self.window or self.window < 1:
            raise ReclaimError("dra: window must be a positive integer")
        tails = GroupedArray(data, history.indptr).tails(int(self.window))
        lengths = tails.lengths
        owner = np.repeat(np.arange(len(history)), lengths)
        sums = np.bincount(owner, weights=tails.data, minlength=len(history))
        return np.where(lengths > 0, sums / np.maximum(lengths, 1), 0.0)

    def lendable(
        self, history: GroupedArray, request: ArrayLike, horizon: int
    ) -> NDArray[np.float64]:
        """(S,) ``request - mean recent usage``, clipped to [0, request]; 0 for empty histories
        and always 0 in ``mode="published"`` (DRA lends nothing)."""
        if self.__capabilities__.redistributes:
            _check(history, request, self.name)
            _check_horizon(horizon)
            return np.zeros(len(history))
        return self.estimate(history, request, horizon).point

    def estimate(self, history: GroupedArray, request: ArrayLike, horizon: int) -> UnusedEstimate:
        """Point = lower = ``request - mean recent usage`` (DRA has no confidence bound), in either
        mode: what DRA's run-time estimate says stays unused; no prediction without history."""
        _, req = _check(history, request, self.name)
        _check_horizon(horizon)
        point = req - self.demand(history)
        return _estimate(point, point, history.lengths > 0, req)


@dataclass(frozen=True, slots=True)
class EntitlementView:
    """What :class:`DraPlacement` reads: ``running``, the waiting jobs in queue order (rows of
    the simulator's job table), ``request`` (N, R) of every job and ``entitlement`` (V, R), the
    capacity each VM is entitled to now."""

    now: float
    running: NDArray[np.int64]
    request: NDArray[np.float64]
    entitlement: NDArray[np.float64]


@dataclass(frozen=True)
class DraPlacement:
    """DRA's placement (section IV) as a policy on the control step: each waiting job, in order,
    out of the purchased capacity ``total`` (R,) no VM is entitled to, on a VM drawn by ``rng``
    among those whose PM (``vm_pm`` (V,) of PMs of ``pm_capacity`` (P, R)) still has room; the
    VM's entitlement grows by the request. A job that fits nowhere is left out (it waits)."""

    total: NDArray[np.float64]
    pm_capacity: NDArray[np.float64]
    vm_pm: NDArray[np.int64]
    rng: np.random.Generator
    __capabilities__ = ControllerCapabilities(needs_forecast=False)

    def decide(self, view: EntitlementView, forecast: object = None) -> Decisions:
        ent = view.entitlement.copy()  # as the binds before each job will have left it
        pm_used = np.zeros_like(self.pm_capacity)
        np.add.at(pm_used, self.vm_pm, ent)
        jobs, vms = [], []
        for job in view.running.tolist():
            req = view.request[job]
            pool = self.total - ent.sum(axis=0)
            fits = bool((req <= pool + 1e-9).all())
            room = (pm_used[self.vm_pm] + req <= self.pm_capacity[self.vm_pm] + 1e-9).all(axis=1)
            if not fits or not room.any():
                continue
            vm = int(self.rng.choice(np.flatnonzero(room)))
            ent[vm] += req
            pm_used[self.vm_pm[vm]] += req
            jobs.append(job)
            vms.append(vm)
        return Decisions(bind_rows=np.array(jobs, np.int64), bind_hosts=np.array(vms, np.int64))
