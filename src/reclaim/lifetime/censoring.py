"""Censored lifetimes: Kaplan–Meier estimates and imputation of right-censored lifetimes.

A VM still alive when the trace window closed (right-censored at observed time ``c``) did not
die at ``c``; treating ``c`` as its lifetime would bias every long-lived population short. We
handle it by survival analysis: fit the Kaplan–Meier (KM) estimate ``S(t)`` of the lifetime
distribution on all usable VMs (deaths are events, censored VMs leave the risk set at ``c``),
optionally per stratum (e.g. per category) where the stratum holds enough VMs, and impute a
censored VM's lifetime by its conditional mean ``E[T | T > c]``.

Beyond the longest observed time ``tau`` the KM curve is unknown (it stays flat at the last value
when the longest time is censored), so the mean is the **restricted** mean
``E[min(T, tau) | T > c] = c + (1 / S(c)) * integral_c^tau S(u) du``. It is a lower bound of
the true conditional mean whenever ``S(tau) > 0``; the imputed lifetimes of VMs censored at the
longest times equal their observed times.

Left-censored VMs (alive when the window opened: start unknown, so their uptime and lifetime
are unknown) are left out of the fit and of training altogether; callers count them.

All functions are vectorised numpy; times are seconds (any unit works, it is carried through).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

F64 = NDArray[np.float64]


@dataclass(frozen=True)
class KaplanMeier:
    """A fitted KM curve: ``S(t) = survival[searchsorted(times, t, 'right') - 1]`` (1 before
    the first event). times: (K,) distinct event times, increasing; survival: (K,) S just after
    each; tau: longest observed time (event or censored), where the restricted mean stops;
    area: (K + 2,) cumulative integral of S at the knots ``[0, *times, tau]`` (times past tau
    are never used since tau bounds them)."""

    times: F64
    survival: F64
    tau: float
    knots: F64
    area: F64

    def __call__(self, t: ArrayLike) -> F64:
        """(n,) S(t) at times t (n,)."""
        i = np.searchsorted(self.times, np.asarray(t, np.float64), side="right") - 1
        s = np.concatenate(([1.0], self.survival))
        return s[i + 1]

    def integral(self, t: ArrayLike) -> F64:
        """(n,) integral_0^min(t, tau) S(u) du: piecewise linear between knots, so np.interp is
        exact."""
        return np.interp(np.minimum(np.asarray(t, np.float64), self.tau), self.knots, self.area)

    def conditional_mean(self, c: ArrayLike) -> F64:
        """(n,) restricted mean lifetime E[min(T, tau) | T > c] for VMs known to live past c
        (n,); c itself where c >= tau or S(c) = 0 (nothing is known beyond)."""
        c = np.asarray(c, np.float64)
        s = self(c)
        rest = self.integral(self.tau) - self.integral(c)
        with np.errstate(divide="ignore", invalid="ignore"):
            mean = c + np.where(s > 0, rest / s, 0.0)
        return np.where((c >= self.tau) | (s <= 0), c, mean)

    def remaining(self, uptime: ArrayLike) -> F64:
        """(n,) restricted mean remaining lifetime E[min(T, tau) - u | T > u] at uptimes u."""
        u = np.asarray(uptime, np.float64)
        return np.maximum(self.conditional_mean(u) - u, 0.0)


def kaplan_meier(observed: ArrayLike, event: ArrayLike) -> KaplanMeier:
    """Fit KM on observed times (n,) s with event (n,) bool (True = died at that time, False =
    right-censored there). A VM censored at the same time as a death counts as still at risk for
    that death (the usual convention)."""
    t = np.asarray(observed, np.float64)
    e = np.asarray(event, bool)
    if t.size == 0:
        raise ValueError("kaplan_meier needs at least one observation")
    times, inverse = np.unique(t, return_inverse=True)
    deaths = np.bincount(inverse, weights=e, minlength=len(times))
    total = np.bincount(inverse, minlength=len(times)).astype(np.float64)
    at_risk = total[::-1].cumsum()[::-1]  # number with time >= times[j]
    keep = deaths > 0
    ev_times = times[keep]
    surv = np.cumprod(1.0 - deaths[keep] / at_risk[keep])
    tau = float(times[-1])
    knots = np.concatenate(([0.0], ev_times, [tau]))
    # S on [knots[i], knots[i+1]) is 1 before the first event, then surv[i-1]
    level = np.concatenate(([1.0], surv))
    widths = np.diff(knots)
    area = np.concatenate(([0.0], np.cumsum(level * np.maximum(widths, 0.0))))
    return KaplanMeier(ev_times, surv, tau, knots, area)


def impute_censored(
    observed: ArrayLike,
    censored: ArrayLike,
    strata: ArrayLike | None = None,
    min_stratum: int = 50,
) -> F64:
    """(n,) lifetimes in s: ``observed`` (n,) where a VM died, the KM restricted conditional mean
    ``E[min(T, tau) | T > observed]`` where ``censored`` (n,) bool. ``strata`` (n,) labels fit one
    KM per stratum holding at least ``min_stratum`` VMs and one death; the others share the
    pooled KM. Callers drop left-censored VMs before calling."""
    t = np.asarray(observed, np.float64)
    cens = np.asarray(censored, bool)
    out = t.copy()
    if not cens.any():
        return out
    pooled = kaplan_meier(t, ~cens)
    todo = cens.copy()
    if strata is not None:
        labels = np.asarray(strata)
        for label in np.unique(labels[cens]):
            member = labels == label
            if member.sum() < min_stratum or not (member & ~cens).any():
                continue
            km = kaplan_meier(t[member], ~cens[member])
            rows = member & cens
            out[rows] = km.conditional_mean(t[rows])
            todo &= ~rows
    out[todo] = pooled.conditional_mean(t[todo])
    return out


class KaplanMeierPredictor:
    """Feature-blind baseline :class:`~reclaim.lifetime.vms.LifetimePredictor`: the population's
    restricted mean remaining lifetime ``E[min(T, tau) - u | T > u]`` from one KM curve."""

    def __init__(self, km: KaplanMeier) -> None:
        self.km = km

    def remaining(self, vms: NDArray[np.int64], uptime: F64) -> F64:
        """(n,) s for rows vms (n,) (ignored but for the shape) at uptime (n,) s."""
        return self.km.remaining(np.broadcast_to(np.asarray(uptime, np.float64), np.shape(vms)))
