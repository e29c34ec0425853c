"""The paper's headlines find the cells that test them, with ours as an interval over seeds and
the claimed direction's verdict read from it (or from the paired per-seed difference)."""

from __future__ import annotations

import polars as pl
import pytest

from reclaim.metrics.intervals import Interval
from reclaim.report.experiment_data import derive
from reclaim.report.paper import PAPER, Direction, compare, context, reason, verdict


def runs(rows: list[tuple]) -> pl.DataFrame:
    """(controller, forecaster, k1, k2, seed, turnaround_mean_s, failure_rate) rows of one
    experiment, with the new runner's columns, as ``derive`` leaves them."""
    frame = pl.DataFrame(
        rows,
        schema={
            "controller": pl.String,
            "forecaster": pl.String,
            "k1": pl.Float64,
            "k2": pl.Float64,
            "seed": pl.Int64,
            "turnaround_mean_s": pl.Float64,
            "failure_rate": pl.Float64,
        },
        orient="row",
    )
    label = pl.concat_str(
        [pl.col("controller"), pl.col("forecaster")], separator="/", ignore_nulls=True
    )
    return derive(
        frame.with_row_index("run_id")
        .with_columns(
            pl.col("run_id").cast(pl.String),
            label=label,
            experiment=pl.lit("e"),
            scale=pl.lit("tiny"),
            coverage=pl.lit(None, pl.Float64),
            apps_failed=pl.col("failure_rate") * 40,
            shapeable_apps=pl.lit(0.25),
            shapeable_mem=pl.lit(0.5),
            app_slack_mem_mean=pl.lit(0.6),
            app_idle_mem_mean=pl.lit(0.7),
        )
        .with_columns(forecast_fallback_share=pl.when(pl.col("forecaster").is_not_null()).then(0.1))
    )


FIG3 = [
    row
    for seed, (base, opt, pess, opt_fail, pess_fail) in enumerate(
        [
            (1000.0, 800.0, 10.0, 0.40, 0.0),
            (2000.0, 900.0, 10.0, 0.35, 0.025),
            (1500.0, 700.0, 8.0, 0.38, 0.0),
        ]
    )
    for row in (
        ("reservation", None, None, None, seed, base, 0.0),
        ("optimistic", "oracle", 0.05, None, seed, opt, opt_fail),
        ("pessimistic", "oracle", 0.05, None, seed, pess, pess_fail),
    )
]


def found(comparisons, setting: str, metric: str):
    return [c for c in comparisons if c.headline.setting == setting and c.headline.metric == metric]


def test_pessimistic_oracle_fails_fewer_apps_paired_by_seed():
    comparisons = compare(runs(FIG3))
    (c,) = found(comparisons, "oracle pessimistic", "failure_rate")
    assert c.cell["label"] == "pessimistic/oracle" and c.headline.value == 0.0
    # ours: the pessimistic failure rate, mean and t-interval over seeds (cut at 0)
    assert c.ours.mean == pytest.approx(0.025 / 3) and c.ours.n == 3 and c.ours.lo == 0.0
    # the verdict is read from per-seed differences pessimistic - optimistic: -0.4, -0.325, -0.38
    assert c.test.mean == pytest.approx((-0.4 - 0.325 - 0.38) / 3)
    assert c.test.hi < 0 and c.verdict == "yes"


def test_optimistic_over_pessimistic_turnaround_is_a_per_seed_ratio():
    (c,) = found(compare(runs(FIG3)), "oracle pessimistic", "turnaround_mean_s")
    assert c.headline.value == 100.0 and c.headline.over.controller == "optimistic"
    # per-seed ratios 80, 90, 87.5: std 5.204, t(0.975, 2 dof) = 4.3027, half-width 12.928
    # (the ratio of mean turnarounds would be 800 / 9.33 = 85.7)
    assert c.ours.mean == pytest.approx((80 + 90 + 87.5) / 3)
    assert c.ours.lo == pytest.approx(72.905, abs=1e-3) and c.ours.hi == pytest.approx(
        98.762, abs=1e-3
    )
    assert c.verdict == "yes"


def test_a_direction_the_interval_straddles_is_inconclusive():
    rows = [r if r[0] != "optimistic" else (*r[:6], 0.0) for r in FIG3]
    rows[2] = ("pessimistic", "oracle", 0.05, None, 0, 10.0, 0.05)  # one seed fails more
    (c,) = found(compare(runs(rows)), "oracle pessimistic", "failure_rate")
    assert c.test.lo < 0 < c.test.hi and c.verdict == "inconclusive"


def test_verdicts():
    faster = Direction("faster", ">", 1.0)
    assert verdict(faster, Interval(3.0, 1.5, 4.5, 3)) == "yes"
    assert verdict(faster, Interval(0.8, 0.7, 0.9, 3)) == "no"
    assert verdict(faster, Interval(1.2, 0.9, 1.5, 3)) == "inconclusive"
    assert verdict(faster, Interval(3.0, None, None, 1)) == "inconclusive (one seed)"
    assert verdict(faster, None) == "no comparison cell"


def test_gp_headline_matches_gp_variants_at_its_parameters_and_pairs_within_the_variant():
    rows = [
        (c, f, k1, k2, seed, 100.0, rate)
        for seed in (0, 1)
        for c, f, k1, k2, rate in (
            ("reservation", None, None, None, 0.0),
            ("pessimistic", "gp-exp", 0.05, 3.0, 0.01),
            ("pessimistic", "gp-exp", 0.05, 0.0, 0.30),
            ("pessimistic", "gp-rbf", 0.05, 0.0, 0.0),
            ("pessimistic", "gp-exp", 0.05, 2.0, 0.1),
            ("optimistic", "gp-exp", 0.05, 3.0, 0.1),
            ("pessimistic", "gpx", 0.05, 3.0, 0.1),
        )
    ]
    gp = [c for c in compare(runs(rows)) if c.headline.setting.startswith("GP")]
    assert len(gp) == 3  # ratio, slack and failures, each matched by the one right cell
    assert {(c.cell["forecaster"], c.cell["k2"]) for c in gp} == {("gp-exp", 3.0)}
    (failures,) = [c for c in gp if c.headline.metric == "failure_rate"]
    # no number in the paper, only the direction; paired with gp-exp K2 = 0, not gp-rbf
    assert failures.headline.value is None
    assert failures.test.mean == pytest.approx(-0.29) and failures.verdict == "yes"


def test_absent_settings_come_back_without_a_cell():
    found_ = compare(runs([("reservation", None, None, None, 0, 100.0, 0.0)]))
    assert len(found_) == len(PAPER)
    assert all(c.cell is None and c.ours is None for c in found_)


def test_oracle_headlines_match_any_parameters():
    rows = [
        ("optimistic", "oracle", None, None, 0, 100.0, 0.3),
        ("optimistic", "oracle", 0.05, 3.0, 0, 100.0, 0.3),
    ]
    optimistic = found(compare(runs(rows)), "oracle optimistic", "failure_rate")
    assert len(optimistic) == 2 and optimistic[0].headline.value == 0.3767
    # no pessimistic cell to pair with: the direction cannot be read
    (pessimistic,) = found(compare(runs(rows)), "oracle pessimistic", "failure_rate")
    assert pessimistic.cell is None


def test_context_per_experiment():
    (ctx,) = context(runs(FIG3))
    assert (ctx.experiment, ctx.seeds) == ("e", 3)
    assert ctx.shapeable_apps.mean == 0.25 and ctx.shapeable_mem.mean == 0.5
    assert ctx.baseline_slack_mem.mean == 0.6 and ctx.baseline_slack_mem.n == 3
    assert [(label, i.mean) for label, i in ctx.fallback] == [
        ("optimistic/oracle", pytest.approx(0.1)),
        ("pessimistic/oracle", pytest.approx(0.1)),
    ]


def test_a_reason_is_shown_only_beside_cells_of_the_world_it_was_measured_in():
    gp = PAPER[0]  # Fig. 4b turnaround: reasons differ between the two worlds
    assert gp.why and gp.why_paper and gp.why != gp.why_paper
    assert reason(gp, {"experiment": "pace-fig4", "world": None}) == gp.why
    assert reason(gp, {"experiment": "pace-paper", "world": None}) == gp.why_paper
    assert reason(gp, {"experiment": "pace-ladder", "world": "paper"}) == gp.why_paper
    assert reason(gp, {"experiment": "mine", "world": None}) == ""


def test_compare_gives_each_cell_the_reason_of_its_world():
    frame = runs(FIG3)
    reasons = {
        (c.headline.setting, c.headline.metric): c.why
        for c in compare(frame.with_columns(experiment=pl.lit("pace-paper")))
        if c.cell is not None
    }
    optimistic = next(h for h in PAPER if h.setting == "oracle optimistic")
    assert reasons[(optimistic.setting, optimistic.metric)] == optimistic.why_paper != ""
    assert all(c.why == "" for c in compare(frame))  # experiment "e": no reason of ours


def test_headlines_state_only_the_papers_numbers():
    # every number is one section 4.2 states; reasons only where results explain a gap
    assert {h.value for h in PAPER} == {10.6, 0.22, 7.5, 0.30, 0.26, 0.0, 0.3767, 100.0, None}
    assert all(h.why for h in PAPER if h.where == "Fig. 3")
    assert any(h.why == "" for h in PAPER)  # gaps not yet measured keep no reason
