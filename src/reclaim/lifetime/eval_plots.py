"""Plots of a lifetime-model evaluation (:class:`reclaim.lifetime.evaluate.LifetimeEval`): the
creation-time precision/recall curve of "lives beyond 7 days", F1 versus uptime quantile (LAVA
Figure 9) and accuracy/F1 by week of arrival after training (Figure 10)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")  # files only; no display is needed or assumed

import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

if TYPE_CHECKING:
    from reclaim.lifetime.evaluate import LifetimeEval

_STYLE = {"model": "C0", "km": "C2", "oracle": "0.5"}


def plot_lifetime_eval(result: LifetimeEval, out_dir: Path | str) -> list[Path]:
    """Write three PNGs into ``out_dir`` (created if needed): ``lifetime_pr.png``,
    ``lifetime_f1_uptime.png``, ``lifetime_weeks.png``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    days = result.threshold_s / 86400
    paths = []

    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot(result.pr_curve["recall"], result.pr_curve["precision"], color=_STYLE["model"])
    ax.axhline(result.target_precision, color="0.6", ls=":", lw=1)
    for row in result.at_threshold.iter_rows(named=True):
        if row["predictor"] == "model":
            ax.plot(row["recall"], row["precision"], "o", color=_STYLE["model"])
    r = result.recall_at_precision
    ax.set(
        xlabel="recall",
        ylabel="precision",
        xlim=(0, 1.02),
        ylim=(0, 1.02),
        title=f"lives > {days:g} d at creation (n={result.n_test}, pos={result.n_positive})\n"
        f"recall at {result.target_precision:.0%} precision: "
        + ("not reached" if r is None else f"{r:.2f}"),
    )
    paths.append(_save(fig, out / "lifetime_pr.png"))

    fig, ax = plt.subplots(figsize=(6, 4))
    n_q = int(result.by_quantile["q"].max()) + 1
    for name, sub in result.by_quantile.group_by("predictor", maintain_order=True):
        ax.plot(sub["q"], sub["f1"], "o-", ms=3, label=name[0], color=_STYLE.get(name[0]))
    ax.set(
        xlabel=f"uptime quantile q (uptime = q/{n_q} of lifetime)",
        ylabel=f"F1 of lifetime > {days:g} d",
        ylim=(0, 1.02),
    )
    ax.legend()
    paths.append(_save(fig, out / "lifetime_f1_uptime.png"))

    fig, ax = plt.subplots(figsize=(6, 4))
    weeks = result.by_week.filter(pl.col("predictor") != "oracle")
    for name, sub in weeks.group_by("predictor", maintain_order=True):
        color = _STYLE.get(name[0])
        ax.plot(sub["week"], sub["accuracy"], "o-", label=f"{name[0]} accuracy", color=color)
        ax.plot(sub["week"], sub["f1"], "s--", label=f"{name[0]} F1", color=color)
    ax.set(xlabel="weeks after training cut (arrival)", ylabel="score", ylim=(0, 1.02))
    ax.legend(fontsize=8)
    paths.append(_save(fig, out / "lifetime_weeks.png"))
    return paths


def _save(fig: plt.Figure, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
