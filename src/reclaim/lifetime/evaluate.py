"""Honest evaluation of a lifetime model (LAVA sections 3, 6.4, 6.5): split in time, censoring-aware
labels, precision/recall of "lives beyond 7 days", F1 versus uptime quantile (Figure 9) and
accuracy by week after training (Figure 10).

Split: VMs are ordered by arrival and the first ``train_fraction`` of the (not left-censored)
VMs train the model; VMs arriving at or after that cut are the test set. By default the training
table is censored at the cut (``censor_at_cut``): a training VM still alive at the cut counts as
right-censored there, because at training time nobody knows it will live on. The split is by
arrival count, not by window time, since real traces are far from uniform in time (99 % of the
openb pods arrive in the last 34 of its 149 days).

Labels (threshold ``threshold_s``, default 168 h): a test VM observed alive longer than the
threshold is positive whether or not it is censored; one that died before is negative; one
censored before the threshold has an unknown class and is excluded (``n_unknown``). Left-censored
VMs (unknown start) are never in the test set. A censored positive's lifetime (for the uptime
quantiles of Figure 9) is its observed lower bound.

Predictors compared: ``model`` (the fitted :class:`~reclaim.lifetime.model.LifetimeModel`),
``km`` (feature-blind Kaplan–Meier of the training lifetimes: what the uptime alone tells) and
``oracle`` (observed lifetime; perfect on these labels by construction, a check of the plumbing
and the upper bound).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.lifetime.censoring import KaplanMeierPredictor, kaplan_meier
from reclaim.lifetime.model import LifetimeModel, OraclePredictor
from reclaim.lifetime.vms import LifetimePredictor, VmTable

#: The paper's short/long cut: 7 days, in seconds.
SEVEN_DAYS = 7 * 86400.0
WEEK = 7 * 86400.0


@dataclass(frozen=True)
class LifetimeEval:
    """Result of :func:`evaluate_lifetime`. Times in s.

    * ``cut``: arrival time splitting train (before) from test; ``threshold_s``: class threshold.
    * counts: ``n_train`` (training VMs), ``n_train_censored`` (of them right-censored, imputed),
      ``n_left_censored`` (left out of both sets), ``n_test`` (test VMs with a known class),
      ``n_positive`` (of them longer than the threshold), ``n_unknown`` (censored before the
      threshold, excluded).
    * ``train_seconds``: wall time of ``fit``.
    * ``pr_curve``: the model's creation-time precision/recall, one row per score threshold
      (columns ``score_s``, ``precision``, ``recall``), score decreasing.
    * ``recall_at_precision``: best recall with precision >= ``target_precision`` (None if never).
    * ``at_threshold``: per predictor, precision/recall/F1/accuracy of "predicted lifetime >
      threshold" at creation time.
    * ``by_quantile``: per predictor and quantile q of n, uptime ``q/n`` x lifetime: n, precision,
      recall, f1, accuracy of "uptime + remaining > threshold" (Figure 9).
    * ``by_week``: per predictor and week after the cut (0 = first week) of arrival: the same
      metrics at creation time (Figure 10).
    * ``creation``: one row per test VM: row, arrival, observed, censored, label, score_s (model's
      predicted lifetime at creation).
    """

    cut: float
    threshold_s: float
    target_precision: float
    n_train: int
    n_train_censored: int
    n_left_censored: int
    n_test: int
    n_positive: int
    n_unknown: int
    train_seconds: float
    recall_at_precision: float | None
    pr_curve: pl.DataFrame
    at_threshold: pl.DataFrame
    by_quantile: pl.DataFrame
    by_week: pl.DataFrame
    creation: pl.DataFrame


def censor_at(vms: VmTable, cut: float) -> VmTable:
    """The table as seen at time ``cut`` s: exits after it become right-censored, window ends
    there. Rows are unchanged (VMs arriving later get a negative observed time; mask them)."""
    late = vms.exit > cut
    return dataclasses.replace(
        vms,
        exit=np.where(late, np.inf, vms.exit),
        right_censored=vms.right_censored | late,
        window=(vms.window[0], float(cut)),
    )


def training_cut(vms: VmTable, train_fraction: float) -> float:
    """The arrival time before which ``train_fraction`` of the VMs with a known start arrived."""
    arrivals = np.sort(vms.arrival[~vms.left_censored])
    if len(arrivals) < 2:
        raise ValueError("need at least two VMs with a known start")
    return float(arrivals[min(int(train_fraction * len(arrivals)), len(arrivals) - 1)])


def binary_metrics(predicted: NDArray[np.bool_], label: NDArray[np.bool_]) -> dict[str, float]:
    """precision, recall, f1, accuracy of boolean predictions (n,) against labels (n,); NaN where
    undefined (no predicted or no true positives)."""
    tp = float(np.sum(predicted & label))
    pp = float(np.sum(predicted))
    p = float(np.sum(label))
    n = len(label)
    precision = tp / pp if pp else float("nan")
    recall = tp / p if p else float("nan")
    f1 = 2 * tp / (pp + p) if pp + p else float("nan")
    accuracy = float(np.mean(predicted == label)) if n else float("nan")
    return {"precision": precision, "recall": recall, "f1": f1, "accuracy": accuracy}


def pr_curve(score: NDArray[np.float64], label: NDArray[np.bool_]) -> pl.DataFrame:
    """Precision and recall of "score >= s" for every distinct score s (decreasing)."""
    order = np.argsort(-score, kind="stable")
    s = score[order]
    tp = np.cumsum(label[order])
    k = np.arange(1, len(s) + 1)
    last = np.r_[s[1:] != s[:-1], True]  # one point per distinct score, after all its ties
    total = max(int(label.sum()), 1)
    return pl.DataFrame(
        {"score_s": s[last], "precision": tp[last] / k[last], "recall": tp[last] / total}
    )


def recall_at_precision(curve: pl.DataFrame, target: float) -> float | None:
    """Largest recall of a PR curve with precision >= target, None if none reaches it."""
    ok = curve.filter(pl.col("precision") >= target)
    return None if ok.is_empty() else float(ok["recall"].max())


def evaluate_lifetime(
    vms: VmTable,
    model: LifetimeModel | None = None,
    train_fraction: float = 0.6,
    threshold_s: float = SEVEN_DAYS,
    n_quantiles: int = 20,
    target_precision: float = 0.99,
    censor_at_cut: bool = True,
) -> LifetimeEval:
    """Fit ``model`` (default ``LifetimeModel()``) on the first ``train_fraction`` of arrivals of
    ``vms`` and evaluate it on the rest; see the module docstring for the protocol."""
    model = LifetimeModel() if model is None else model
    usable = ~vms.left_censored
    cut = training_cut(vms, train_fraction)
    train_mask = usable & (vms.arrival < cut)
    train_table = censor_at(vms, cut) if censor_at_cut else vms

    start = time.perf_counter()
    model.fit(train_table, train_mask)
    train_seconds = time.perf_counter() - start
    rows_tr = np.flatnonzero(train_mask)
    km = kaplan_meier(train_table.observed[rows_tr], ~train_table.right_censored[rows_tr])

    candidates = np.flatnonzero(usable & (vms.arrival >= cut))
    observed = vms.observed[candidates]
    censored = vms.right_censored[candidates]
    positive = observed > threshold_s
    known = positive | ~censored
    test = candidates[known]
    label = positive[known]
    life = observed[known]

    predictors: dict[str, LifetimePredictor] = {
        "model": model.predictor(vms),
        "km": KaplanMeierPredictor(km),
        "oracle": OraclePredictor(vms),
    }
    zero = np.zeros(len(test))
    score = {name: p.remaining(test, zero) for name, p in predictors.items()}

    curve = pr_curve(score["model"], label)
    at_threshold = pl.DataFrame(
        [{"predictor": n, **binary_metrics(s > threshold_s, label)} for n, s in score.items()]
    )
    by_quantile = _by_quantile(predictors, test, life, label, threshold_s, n_quantiles)
    week = np.floor((vms.arrival[test] - cut) / WEEK).astype(np.int64)
    by_week = _by_group(score, label, week, threshold_s, "week")

    return LifetimeEval(
        cut=cut,
        threshold_s=threshold_s,
        target_precision=target_precision,
        n_train=int(model.n_train_),
        n_train_censored=int(model.n_right_censored_),
        n_left_censored=int(vms.left_censored.sum()),
        n_test=len(test),
        n_positive=int(label.sum()),
        n_unknown=int((~known).sum()),
        train_seconds=train_seconds,
        recall_at_precision=recall_at_precision(curve, target_precision) if label.any() else None,
        pr_curve=curve,
        at_threshold=at_threshold,
        by_quantile=by_quantile,
        by_week=by_week,
        creation=pl.DataFrame(
            {
                "row": test,
                "arrival": vms.arrival[test],
                "observed": life,
                "censored": vms.right_censored[test],
                "label": label,
                "score_s": score["model"],
            }
        ),
    )


def _by_quantile(
    predictors: dict[str, LifetimePredictor],
    test: NDArray[np.int64],
    life: NDArray[np.float64],
    label: NDArray[np.bool_],
    threshold_s: float,
    n_quantiles: int,
) -> pl.DataFrame:
    rows = []
    for name, p in predictors.items():
        for q in range(n_quantiles):
            uptime = life * (q / n_quantiles)
            predicted = uptime + p.remaining(test, uptime) > threshold_s
            m = binary_metrics(predicted, label)
            rows.append({"predictor": name, "q": q, "n": len(test), **m})
    return pl.DataFrame(rows, schema_overrides={"q": pl.Int64, "n": pl.Int64})


def _by_group(
    score: dict[str, NDArray[np.float64]],
    label: NDArray[np.bool_],
    group: NDArray[np.int64],
    threshold_s: float,
    name: str,
) -> pl.DataFrame:
    rows = []
    for pred_name, s in score.items():
        for g in np.unique(group):
            m = group == g
            rows.append(
                {
                    "predictor": pred_name,
                    name: int(g),
                    "n": int(m.sum()),
                    "n_positive": int(label[m].sum()),
                    **binary_metrics(s[m] > threshold_s, label[m]),
                }
            )
    schema = {"predictor": pl.String, name: pl.Int64, "n": pl.Int64, "n_positive": pl.Int64}
    schema |= {k: pl.Float64 for k in ("precision", "recall", "f1", "accuracy")}
    return pl.DataFrame(rows, schema=schema)
