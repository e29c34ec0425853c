"""Paired comparisons on the same sequences, against Best-Fit or another policy (no torch)."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

from reclaim.rl.evaluate import paired_against


def _runs(overshoot: list[float], machines: float) -> pl.DataFrame:
    n = len(overshoot)
    base = {"store": ["s"] * n, "load": [0.5] * n, "sequence": list(range(n))}
    return pl.concat(
        pl.DataFrame(base | {"policy": [p] * n, "overshoot_pct": o}).with_columns(
            machines_used=pl.lit(m)
        )
        for p, o, m in (
            ("best-fit@current", [float(k) for k in range(1, n + 1)], 8.0),
            ("tvw-rl", overshoot, machines),
        )
    )


@pytest.mark.parametrize("shift", [0.0, 0.1])
def test_a_difference_the_same_on_every_sequence_is_taken_as_it_is_without_a_warning(shift):
    # 0.1 added in floats is not the same in every bit: the same difference to rounding
    runs = _runs([k + shift for k in (1.0, 2.0, 3.0, 4.0)], 9.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (row,) = paired_against(runs).iter_rows(named=True)
    assert row["machines_used_diff"] == 1 and row["machines_used_p"] == 0.0
    assert row["overshoot_pct_diff"] == pytest.approx(shift)
    assert row["overshoot_pct_p"] == (1.0 if shift == 0 else 0.0)


def test_tagged_policies_pair_against_one_another_and_best_fit():
    runs = _runs([1.5, 2.5, 3.5, 4.5], 9.0)
    tagged = runs.filter(pl.col("policy") == "tvw-rl").with_columns(
        policy=pl.lit("tvw-rl:noise3"), overshoot_pct=pl.col("overshoot_pct") - 0.5
    )
    runs = pl.concat([runs, tagged])
    against_best = paired_against(runs)
    assert against_best["tvw_rl"].to_list() == ["tvw-rl", "tvw-rl:noise3"]
    (row,) = paired_against(runs, "tvw-rl").iter_rows(named=True)
    assert (row["tvw_rl"], row["against"]) == ("tvw-rl:noise3", "tvw-rl")
    assert row["overshoot_pct_diff"] == pytest.approx(-0.5) and row["machines_used_diff"] == 0
