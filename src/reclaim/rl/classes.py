"""Equivalence classes of workloads (TVW-RL, "Workload Equivalence-Class Mapping"): the labels
of the state's pixels, so that the policy learns per kind of usage shape, not per workload.

Three distances, as the paper's Table 1 compares them:

- temporal: tsfresh's features computed directly per resource (autocorrelation at lag 1, linear
  trend slope, aggregated linear trend: the slope of chunk means, mean, mean absolute change, std),
  each normalised to [0, 1], Euclidean, K-Means (k-means++);
- dtw: dynamic time warping per resource, each normalised by its largest distance and averaged,
  K-Medoids (alternating, random initial medoids);
- aggregate (the baseline, after Zhang et al. 2011): total and mean CPU and memory, duration, and
  the mean, std and normalised std of the memory-to-CPU ratio, normalised, K-Means.

k is chosen by the mean silhouette over ``ks`` (3..15), the best of ``n_init`` initialisations
(the paper's 50).
:func:`effective_gain` is the paper's EG proxy; :func:`classifier` labels a running workload from
its partial usage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.errors import ReclaimError

KS = range(3, 16)
INITIALISATIONS = 50  # per k, as the paper's EC creation
CHUNK = 10  # steps per chunk of the aggregated linear trend (tsfresh's chunk_len)


@dataclass(frozen=True)
class Classes:
    """labels: (n,) in 0..k-1; k; silhouette: {k: mean silhouette} over the ks tried."""

    labels: NDArray[np.int64]
    k: int
    silhouette: dict[int, float]


# ------------------------------------------------------------------ features
def _slope(y: NDArray) -> float:
    if len(y) < 2:
        return 0.0
    x = np.arange(len(y), dtype=np.float64)
    x -= x.mean()
    return float((x * (y - y.mean())).sum() / (x * x).sum())


def _series_features(y: NDArray) -> list[float]:
    y = y.astype(np.float64)
    std = y.std()
    lag1 = float(np.mean((y[:-1] - y.mean()) * (y[1:] - y.mean())) / std**2) if std > 0 else 0.0
    chunks = [y[i : i + CHUNK].mean() for i in range(0, len(y), CHUNK)]
    change = float(np.abs(np.diff(y)).mean()) if len(y) > 1 else 0.0
    return [lag1, _slope(y), _slope(np.array(chunks)), float(y.mean()), change, float(std)]


def normalise(features: NDArray) -> NDArray[np.float64]:
    """Each column min-max scaled to [0, 1] (a constant column becomes 0)."""
    lo, hi = features.min(axis=0), features.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return (features - lo) / span


def temporal_features(series: GroupedArray) -> NDArray[np.float64]:
    """(n, 6R) the temporal features of each series (module docstring), normalised."""
    rows = [
        sum((_series_features(s[:, r]) for r in range(s.shape[1])), [])
        for s in (series[i] for i in range(len(series)))
    ]
    return normalise(np.array(rows))


def aggregate_features(series: GroupedArray) -> NDArray[np.float64]:
    """(n, 8) the aggregate baseline's job characteristics (module docstring), normalised."""
    rows = []
    for i in range(len(series)):
        s = series[i].astype(np.float64)
        ratio = s[:, 1] / np.maximum(s[:, 0], 1e-9)
        mean_ratio = ratio.mean()
        rows.append(
            [s[:, 0].sum(), s[:, 0].mean(), s[:, 1].sum(), s[:, 1].mean(), len(s), mean_ratio]
            + [ratio.std(), ratio.std() / mean_ratio if mean_ratio > 0 else 0.0]
        )
    return normalise(np.array(rows))


# ------------------------------------------------------------------ DTW
@numba.njit(cache=True)
def dtw(a, b):
    """DTW distance of 1-D series ``a`` and ``b``: the cheapest monotone alignment, |a_i - b_j|
    per matched pair."""
    n, m = len(a), len(b)
    prev = np.full(m + 1, np.inf)
    prev[0] = 0.0
    cur = np.empty(m + 1)
    for i in range(1, n + 1):
        cur[0] = np.inf
        for j in range(1, m + 1):
            best = min(prev[j], cur[j - 1], prev[j - 1])
            cur[j] = abs(a[i - 1] - b[j - 1]) + best
        prev, cur = cur, prev
    return prev[m]


def dtw_reference(a, b) -> float:
    """Plain-Python :func:`dtw`, the full table (the tests compare the two)."""
    n, m = len(a), len(b)
    table = [[float("inf")] * (m + 1) for _ in range(n + 1)]
    table[0][0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            step = min(table[i - 1][j], table[i][j - 1], table[i - 1][j - 1])
            table[i][j] = abs(float(a[i - 1]) - float(b[j - 1])) + step
    return table[n][m]


@numba.njit(cache=True)
def _dtw_matrix(data, indptr, r):
    n = len(indptr) - 1
    out = np.zeros((n, n))
    for i in range(n):
        a = data[indptr[i] : indptr[i + 1], r].astype(np.float64)
        for j in range(i + 1, n):
            d = dtw(a, data[indptr[j] : indptr[j + 1], r].astype(np.float64))
            out[i, j] = d
            out[j, i] = d
    return out


def dtw_distances(series: GroupedArray) -> NDArray[np.float64]:
    """(n, n) DTW distances, per resource normalised by its largest, averaged over resources."""
    resources = series.data.shape[1]
    total = np.zeros((len(series), len(series)))
    for r in range(resources):
        d = _dtw_matrix(series.data, series.indptr, r)
        total += d / d.max() if d.max() > 0 else d
    return total / resources


# ------------------------------------------------------------------ clustering
def k_medoids(
    distances: NDArray, k: int, rng: np.random.Generator, iterations: int = 100
) -> tuple[NDArray[np.int64], float]:
    """Alternating K-Medoids from random medoids: (labels, total distance to the medoids)."""
    n = len(distances)
    medoids = rng.choice(n, k, replace=False)
    for _ in range(iterations):
        labels = distances[:, medoids].argmin(axis=1)
        new = medoids.copy()
        for c in range(k):
            members = np.flatnonzero(labels == c)
            if len(members):
                new[c] = members[distances[np.ix_(members, members)].sum(axis=1).argmin()]
        if np.array_equal(np.sort(new), np.sort(medoids)):
            break
        medoids = new
    labels = distances[:, medoids].argmin(axis=1)
    return labels.astype(np.int64), float(distances[np.arange(n), medoids[labels]].sum())


def select_k(
    points: NDArray | None,
    distances: NDArray | None,
    seed: int,
    ks=KS,
    n_init: int = INITIALISATIONS,
) -> Classes:
    """Cluster for each k of ``ks`` (K-Means on ``points``, or K-Medoids on ``distances``) and
    keep the k of the highest mean silhouette."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    n = len(points) if points is not None else len(distances)
    ks = [k for k in ks if 2 <= k < n]
    if not ks:
        raise ReclaimError(f"{n} workloads are too few to choose k among 3..15")
    scores, best = {}, None
    for k in ks:
        if points is not None:
            labels = KMeans(k, init="k-means++", n_init=n_init, random_state=seed).fit_predict(
                points
            )
            score = silhouette_score(points, labels)
        else:
            rng = np.random.default_rng([seed, k])
            runs = [k_medoids(distances, k, rng) for _ in range(n_init)]
            labels = min(runs, key=lambda run: run[1])[0]
            score = (
                silhouette_score(distances, labels, metric="precomputed")
                if len(np.unique(labels)) > 1
                else -1.0
            )
        scores[k] = float(score)
        if best is None or score > scores[best[0]]:
            best = (k, labels)
    return Classes(np.asarray(best[1], np.int64), best[0], scores)


def equivalence_classes(
    series: GroupedArray, distance: str, seed: int = 0, ks=KS, n_init: int = INITIALISATIONS
) -> Classes:
    """Classes of ``series`` under ``distance``: temporal, dtw or aggregate."""
    if distance == "temporal":
        return select_k(temporal_features(series), None, seed, ks, n_init)
    if distance == "aggregate":
        return select_k(aggregate_features(series), None, seed, ks, n_init)
    if distance == "dtw":
        return select_k(None, dtw_distances(series), seed, ks, n_init)
    raise ReclaimError(f"distance must be temporal, dtw or aggregate, not {distance!r}")


# ------------------------------------------------------------------ effective gain
def _lagged(series: GroupedArray, idx, lags: int, r: int):
    xs, ys = [], []
    for i in idx:
        y = series[i][:, r].astype(np.float64)
        if len(y) > lags:
            xs.append(np.lib.stride_tricks.sliding_window_view(y[:-1], lags))
            ys.append(y[lags:])
    if not xs:
        return np.empty((0, lags)), np.empty(0)
    return np.concatenate(xs), np.concatenate(ys)


def _fit_ar(x, y):
    design = np.column_stack([x, np.ones(len(x))])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    return coef


def _corr(coef, x, y) -> float:
    pred = np.column_stack([x, np.ones(len(x))]) @ coef
    if len(y) < 2 or pred.std() == 0 or y.std() == 0:
        return 0.0
    return float(np.corrcoef(pred, y)[0, 1])


def effective_gain(
    series: GroupedArray, labels: NDArray, lags: int = 6, train_share: float = 0.7
) -> tuple[float, float]:
    """The paper's EG and f: (1/n) sum_e max(0, G(e)) |e|, G(e) the % gain in correlation of
    predicted and actual usage (averaged over resources) of a model fitted on class e over one fitted
    on all workloads, both tested on e; f the share of workloads in classes with a gain.

    The model is a linear autoregression on ``lags`` steps (the paper used LSTNet); each series'
    first ``train_share`` trains, the rest tests.
    """
    cut = [int(len(series[i]) * train_share) for i in range(len(series))]
    head = GroupedArray.from_series([series[i][: cut[i]] for i in range(len(series))])
    tail = GroupedArray.from_series([series[i][cut[i] :] for i in range(len(series))])
    everyone = np.arange(len(series))
    resources = series.data.shape[1]
    gains, sizes = [], []
    global_coef = [_fit_ar(*_lagged(head, everyone, lags, r)) for r in range(resources)]
    for e in np.unique(labels):
        members = np.flatnonzero(labels == e)
        own, base = [], []
        for r in range(resources):
            x, y = _lagged(tail, members, lags, r)
            hx, hy = _lagged(head, members, lags, r)
            if len(y) < 2 or len(hy) <= lags:
                continue
            own.append(_corr(_fit_ar(hx, hy), x, y))
            base.append(_corr(global_coef[r], x, y))
        if own and np.mean(base) > 0:
            gains.append(100.0 * (np.mean(own) - np.mean(base)) / np.mean(base))
            sizes.append(len(members))
    gains, sizes = np.array(gains), np.array(sizes)
    eg = float((np.maximum(gains, 0) * sizes).sum() / len(series)) if len(gains) else 0.0
    f = float(sizes[gains > 0].sum() / len(series)) if len(gains) else 0.0
    return eg, f


# ------------------------------------------------------------------ running workloads
def features_by_age(series: GroupedArray, ages: int) -> NDArray[np.float64]:
    """(ages, n, R (ages + 2)) what is known of every series after 1..``ages`` steps: its first
    steps (zero-padded to ``ages``, so one classifier reads every age), their mean and peak.
    Series are non-empty."""
    n, resources = len(series), series.data.shape[1]
    # Vectorised over series and ages: the env labels a whole sequence at every age per reset.
    seen = np.minimum(series.lengths, np.arange(1, ages + 1)[:, None])  # (A, n) samples seen
    rows = np.minimum(series.indptr[:-1, None] + np.arange(ages), len(series.data) - 1)
    first = series.data[rows].astype(np.float64)  # (n, steps, R)
    first[np.arange(ages) >= series.lengths[:, None]] = 0.0  # past the end: padding
    out = np.zeros((ages, n, ages + 2, resources))
    out[:, :, :ages] = first * np.tri(ages)[:, None, :, None]  # age a sees steps < a
    last = (np.arange(n), seen - 1)  # (A, n) the last step seen
    out[:, :, ages] = first.cumsum(axis=1)[last] / seen[..., None]
    out[:, :, ages + 1] = np.maximum.accumulate(first, axis=1)[last]
    return out.reshape(ages, n, -1)


def classifier(features: NDArray, labels: NDArray, seed: int = 0, hidden: int = 32):
    """The EC classifier: two dense ReLU layers and a softmax, Adam on cross-entropy
    (scikit-learn's MLP) from a workload's features (``features_by_age(...)[-1]``) to its class."""
    from sklearn.neural_network import MLPClassifier

    model = MLPClassifier((hidden, hidden), activation="relu", solver="adam", random_state=seed)
    return model.set_params(max_iter=500).fit(features, labels)


def compare_distances(
    series: GroupedArray, seed: int = 0, ks=KS, n_init: int = INITIALISATIONS
) -> list[dict[str, float | int | str]]:
    """The paper's Table 1 on ``series``: per distance, the chosen k, its silhouette, f and EG."""
    rows = []
    for distance in ("aggregate", "temporal", "dtw"):
        found = equivalence_classes(series, distance, seed, ks, n_init)
        eg, f = effective_gain(series, found.labels)
        rows.append(
            {
                "distance": distance,
                "k": found.k,
                "silhouette": found.silhouette[found.k],
                "f": f,
                "eg_pct": eg,
            }
        )
    return rows


def sample_records(units: GroupedArray, n: int, steps: int, rng) -> GroupedArray:
    """Up to ``n`` records of at least ``steps`` steps, each cut to its first ``steps``."""
    long = np.flatnonzero(units.lengths >= steps)
    if len(long) < 4:
        raise ReclaimError(f"fewer than 4 records of {steps} steps to form classes from")
    picked = rng.choice(long, min(n, len(long)), replace=False)
    return GroupedArray.from_series([units[i][:steps] for i in np.sort(picked)])
