"""95 % Student-t intervals of means over seeds or sequences, for every report and evaluation."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy import stats

#: Confidence level of every interval reported.
LEVEL = 0.95


@dataclass(frozen=True)
class Interval:
    """A mean over ``n`` seeds and its 95 % Student-t interval (``lo``/``hi`` None below two)."""

    mean: float | None
    lo: float | None
    hi: float | None
    n: int


def t_half_width(std: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Half-width of the ``LEVEL`` t-interval of a mean: t(n - 1) x std / sqrt(n), NaN where
    ``n`` < 2; ``std`` is the sample standard deviation (n - 1 in the denominator)."""
    n = np.asarray(n, dtype=np.float64)
    std = np.asarray(std, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = stats.t.ppf(0.5 + LEVEL / 2, np.where(n >= 2, n - 1, np.nan))
        return np.where(n >= 2, t * std / np.sqrt(n), np.nan)


def t_interval(
    values: Iterable[float | None], bounds: tuple[float, float] = (-math.inf, math.inf)
) -> Interval:
    """Mean and 95 % t-interval of per-seed ``values`` (None and NaN dropped), cut at
    ``bounds``."""
    x = np.array([v for v in values if v is not None and not math.isnan(v)], dtype=np.float64)
    if not len(x):
        return Interval(None, None, None, 0)
    mean = float(x.mean())
    if len(x) < 2:
        return Interval(mean, None, None, 1)
    half = float(t_half_width(np.array(x.std(ddof=1)), np.array(len(x))))
    return Interval(mean, max(mean - half, bounds[0]), min(mean + half, bounds[1]), len(x))
