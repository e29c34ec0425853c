"""The lava report's gains with 95 % intervals over pools and seeds (reclaim.lifetime.report)."""

from __future__ import annotations

import polars as pl

from reclaim.lifetime.report import cells, gain_table, paper_table


def _runs(pools: int, above: str = "") -> pl.DataFrame:
    """Runs of best-fit and LAS, every placer under the scores ``above`` ("stranding>", ...)."""
    rows = []
    for p in range(pools):
        for seed in (0, 1):
            for placement, lifetimes, defrag, gain in (
                ("best-fit", "none", "none", 0.0),
                ("las>best-fit", "oracle", "none", 2.0 + p + seed),
                ("las>best-fit", "oracle", "lars", 1.0),
            ):
                placement = above + placement
                label = placement if lifetimes == "none" else f"{placement} ({lifetimes})"
                if defrag != "none":
                    label += f" defrag={defrag}"
                rows.append(
                    {
                        "run_id": f"{p}-{seed}-{label}",
                        "label": label,
                        "pool": f"p{p:02d}",
                        "placement": placement,
                        "lifetimes": lifetimes,
                        "defrag": defrag,
                        "seed": seed,
                        "empty_hosts_pct": 20.0 + gain,
                        "empty_gain_pp": gain,
                        "rejected": 0.0,
                        "lars_reduction_pct": 10.0 + seed if defrag == "lars" else None,
                    }
                )
    return pl.DataFrame(rows)


def test_gain_table_gives_the_student_t_interval_over_pools_and_seeds():
    header, rows = gain_table(_runs(4))
    assert header[1].startswith("empty hosts vs best-fit")
    las = next(r for r in rows if r[0] == "las>best-fit (oracle)")
    # gains 2..6 over 4 pools x 2 seeds: mean 4.0, s = 1.309, t(7) = 2.365 -> half 1.09
    assert las[1] == "+4.0 pp [+2.9, +5.1] (n=8)" and las[2] == "4 of 4"
    assert rows[0][:2] == ["best-fit", "baseline"]


def test_paper_table_keeps_per_pool_rows_for_few_pools_only():
    runs = _runs(4)
    _, rows = paper_table(cells(runs), runs)
    las = [r for r in rows if r[1].startswith("las>best-fit (oracle)")]
    assert [r[3] for r in las] == ["all 4 pools"]  # more than 3 pools: the interval row only
    lars = [r for r in rows if r[0] == "Table 2"]
    assert len(lars) == 1 and lars[0][4].startswith("10.5% [")
    few = _runs(2)
    _, rows = paper_table(cells(few), few)
    las = [r[3] for r in rows if r[1].startswith("las>best-fit (oracle)")]
    assert las == ["all 2 pools", "p00", "p01"]


def test_the_baseline_is_the_placer_without_lifetimes_under_the_same_scores():
    runs = _runs(2, above="stranding>")
    _, rows = gain_table(runs)
    assert rows[0][:2] == ["stranding>best-fit", "baseline"]
    assert [r[0] for r in rows[1:]] == [
        "stranding>las>best-fit (oracle)",
        "stranding>las>best-fit (oracle) defrag=lars",
    ]
    # the paper's LAS row matches LAS whatever ranks above it
    _, rows = paper_table(cells(runs), runs)
    las = [r for r in rows if r[1].startswith("las>best-fit (oracle)")]
    assert [r[3] for r in las] == ["all 2 pools", "p00", "p01"]
