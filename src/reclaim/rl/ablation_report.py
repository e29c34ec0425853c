"""Reports of TVW-RL's penalty ablation (``reclaim.rl.ablation``): a table per axis beside the
paper's figures, whether each trend goes the paper's way, and a chart of machines used and
overshoot against each coefficient."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display is needed or assumed

import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402
from rich.table import Table  # noqa: E402

from reclaim.rl.ablation import PAPER, VALUES  # noqa: E402
from reclaim.tvw.report import PANELS  # noqa: E402

DIRECTION = {1: "rises", -1: "falls", 0: "stays"}


def coefficient(axis: str) -> str:
    """``k_u`` -> ``K_u``, as the paper writes it."""
    return "K" + axis[1:]


def axis_table(frame: pl.DataFrame, axis: str) -> Table:
    """One row per store and value of ``axis``; a metric the paper gives reads "ours / paper"."""
    paper = PAPER[axis]
    table = Table(title=f"{coefficient(axis)} varied, the other penalties at the paper's defaults")
    table.add_column("store")
    table.add_column(coefficient(axis), justify="right")
    for col, head, _ in PANELS:
        table.add_column(f"{head}\nours / paper" if col in paper else head, justify="right")
    for row in frame.filter(pl.col("axis") == axis).iter_rows(named=True):
        k = VALUES[axis].index(row["value"])
        cells = []
        for col, _, fmt in PANELS:
            theirs = paper.get(col, (None,) * len(VALUES[axis]))[k]
            cell = fmt.format(row[col])
            cells.append(cell if theirs is None else f"{cell} / {fmt.format(theirs)}")
        table.add_row(row["store"], f"{row['value']:g}", *cells)
    return table


def trend_lines(trends: list[dict]) -> list[str]:
    """One line per trend: the paper's direction, and whether ours goes the same way."""
    heads = {col: head for col, head, _ in PANELS}
    return [
        f"{t['store']}: {heads[t['metric']]} {DIRECTION[t['paper']]} as "
        f"{coefficient(t['axis'])} rises: ours {'yes' if t['ours'] == t['paper'] else 'no'} "
        f"({DIRECTION[t['ours']]})"
        for t in trends
    ]


def plot_ablation(frame: pl.DataFrame, path: Path) -> Path:
    """Machines used (top) and % overshoot (bottom) against each coefficient, a line per store
    with its 95 % intervals over the test sequences (where the frame has them) and the paper's
    figures where it gives them; coefficients evenly spaced (K_c spans 0 to 10)."""
    axes_shown = frame["axis"].unique(maintain_order=True).to_list()
    fig, grid = plt.subplots(2, len(axes_shown), figsize=(5 * len(axes_shown), 6.5), squeeze=False)
    rows = [("machines_used", "machines used"), ("overshoot_pct", "% overshoot")]
    for j, axis in enumerate(axes_shown):
        sub = frame.filter(pl.col("axis") == axis)
        values = VALUES[axis]
        for i, (col, head) in enumerate(rows):
            ax = grid[i, j]
            for (store,), group in sub.group_by("store", maintain_order=True):
                group = group.sort("value")
                x = [values.index(v) for v in group["value"]]
                half = group[f"{col}_half"].to_numpy() if f"{col}_half" in group.columns else None
                ax.errorbar(x, group[col].to_numpy(), yerr=half, marker="o", capsize=3, label=store)
            paper = PAPER[axis].get(col, ())
            theirs = [(k, v) for k, v in enumerate(paper) if v is not None]
            if theirs:  # a line only through a full series: the text gives some ends alone
                style = "k--x" if len(theirs) == len(values) else "kx"
                ax.plot(*zip(*theirs, strict=True), style, label="paper")
            ax.set_xticks(range(len(values)), [f"{v:g}" for v in values])
            ax.set_xlabel(coefficient(axis))
            ax.set_title(head, fontsize=10)
    grid[0, 0].legend(fontsize=8)
    fig.suptitle("TVW-RL penalty ablation: one coefficient varied at a time", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
