"""The ladder: per world the numbers behind the paper's claims, each over its own baseline."""

from __future__ import annotations

import polars as pl

from reclaim.report.experiment_data import aggregate, derive
from reclaim.report.ladder import is_ladder, ladder_rows, plot_ladder, worlds
from reclaim.report.paper import rigid_admission_note


def ladder_runs() -> pl.DataFrame:
    """Two worlds x (reservation, optimistic and pessimistic with the oracle) x 2 seeds."""
    rows = []
    for world, base, opt, pes, opt_oom in (("paper", 100.0, 110.0, 10.0, 0.5), ("+07 soft", 50.0, 40.0, 45.0, 0.0)):  # fmt: skip
        for seed in (0, 1):
            scale = 1.0 + 0.1 * seed
            rows += [
                (world, "reservation", None, seed, base * scale, 0.0, 0.0),
                (world, "optimistic", "oracle", seed, opt * scale, opt_oom, opt_oom + 0.1),
                (world, "pessimistic", "oracle", seed, pes * scale, 0.0, 0.3),
            ]
    frame = pl.DataFrame(
        rows,
        schema=[
            "world",
            "controller",
            "forecaster",
            "seed",
            "turnaround_mean_s",
            "core_oom_rate",
            "failure_rate",
        ],  # fmt: skip
        orient="row",
    )
    label = pl.concat_str([pl.col("controller"), pl.col("forecaster")], separator="/", ignore_nulls=True)  # fmt: skip
    return derive(
        frame.with_row_index("run_id").with_columns(
            pl.col("run_id").cast(pl.String),
            label=label,
            experiment=pl.lit("pace-ladder"),
            scale=pl.lit("small"),
            apps_failed=pl.col("failure_rate") * 100,
        )
    )


def test_each_world_is_a_row_with_ratios_over_its_own_baseline(tmp_path):
    cells = aggregate(ladder_runs())
    assert is_ladder(cells) and worlds(cells) == ["paper", "+07 soft"]
    header, rows = ladder_rows(cells)
    paper, soft = rows
    assert paper[0] == "paper" and soft[0] == "+07 soft"
    ratio = header.index("pessimistic: turnaround ratio")
    # pessimistic 10x faster than the paper world's baseline, 50/45 in the soft world's
    assert paper[ratio].startswith("10.00x") and soft[ratio].startswith("1.11x")
    oom = header.index("optimistic: failed (paper: core OOM)")
    assert paper[oom].startswith("50.0%") and soft[oom].startswith("0.0%")
    assert header.index("GP K1=5% K2=3: turnaround ratio") and soft[-1] == ""  # no GP cell
    assert plot_ladder(cells, tmp_path / "ladder.png").stat().st_size > 0


def test_one_world_is_no_ladder():
    cells = aggregate(ladder_runs().filter(pl.col("world") == "paper"))
    assert not is_ladder(cells)


def test_rigid_admission_is_reported_as_a_ratio_of_baselines():
    runs = ladder_runs().filter(pl.col("controller") == "reservation")
    assert rigid_admission_note(runs) == ""  # no rigid baseline
    rigid = runs.with_columns(world=pl.when(pl.col("world") == "paper").then(pl.lit("")).otherwise(pl.lit("rigid-admission")))  # fmt: skip
    note = rigid_admission_note(rigid)
    assert "0.50x" in note and "2 seed(s)" in note  # 50 / 100 on both seeds
