"""The paper's headline numbers find the cells that reproduce their setting, and only those."""

from __future__ import annotations

import polars as pl

from reclaim.report.paper import PAPER, compare


def cells(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema={
            "controller": pl.String,
            "forecaster": pl.String,
            "k1": pl.Float64,
            "k2": pl.Float64,
        },
        orient="row",
    )


def test_gp_headline_matches_gp_variants_at_its_parameters_only():
    found = compare(
        cells(
            [
                ("pessimistic", "gp-exp", 0.05, 3.0),
                ("pessimistic", "gp-exp", 0.05, 2.0),
                ("optimistic", "gp-exp", 0.05, 3.0),
                ("pessimistic", "gpx", 0.05, 3.0),
            ]
        )
    )
    gp = [c for c in found if c.headline.setting.startswith("GP")]
    assert len(gp) == 2  # ratio and slack, each matched by the one right cell
    assert all(
        c.cell == {"controller": "pessimistic", "forecaster": "gp-exp", "k1": 0.05, "k2": 3.0}
        for c in gp
    )


def test_absent_settings_come_back_without_a_cell():
    found = compare(cells([("reservation", None, None, None)]))
    assert len(found) == len(PAPER)
    assert all(c.cell is None for c in found)


def test_oracle_headlines_match_any_parameters():
    found = compare(
        cells([("optimistic", "oracle", None, None), ("optimistic", "oracle", 0.05, 3.0)])
    )
    optimistic = [c for c in found if c.headline.setting == "oracle, optimistic"]
    assert len(optimistic) == 2 and optimistic[0].headline.value == 0.3767
