"""The CORP report's sensitivity table and the lines ``experiment run`` prints, on made-up runs."""

from __future__ import annotations

import json

import polars as pl

from reclaim.corp.report import cells, headline, sensitivity_rows

METHODS = ("corp", "rccr", "cloudscale", "dra")


def _runs(good_slots: str = "calibrated") -> pl.DataFrame:
    """Two slot constructions x two seeds; under ``good_slots`` CORP is best everywhere and the
    methods are far apart; under the other DRA is best and CORP and RCCR overlap."""
    rows = []
    for slots in ("calibrated", "window-hold"):
        for seed in (0, 1):
            for rank, method in enumerate(METHODS):
                good = slots == good_slots
                level = rank if good else (3 - rank if method in ("cloudscale", "dra") else 2)
                jitter = 0.002 * seed if good else (0.2 * seed if method == "corp" else 0.0)
                value = 0.1 + 0.2 * level + jitter
                label = method if slots == "calibrated" else f"{method} resample={slots}"
                rows.append(
                    {
                        "run_id": f"{method}-{slots}-{seed}",
                        "label": label,
                        "provisioner": method,
                        "params": json.dumps({}),
                        "n_jobs": 300,
                        "seed": seed,
                        "slots": slots,
                        "epsilon": 0.1,
                        # lower is better for error and SLO, higher for utilisation
                        **{
                            f"prediction_error_rate{s}_eps{e}": value
                            for s in ("", "_lower")
                            for e in ("05", "10", "20")
                        },
                        "prediction_error_rate": value,
                        "prediction_error_rate_lower": value,
                        "util_cpu": 1 - value,
                        "util_mem": 1 - value,
                        "util": 1 - value,
                        "slo_violation_rate": value,
                        "scored_jobs": 100.0,
                        "young_jobs": 200.0,
                        "borrowers": 3.0 * rank,
                        "lent_cpu": 0.01 * rank,
                    }
                )
    return pl.DataFrame(rows)


def test_the_sensitivity_table_orders_the_methods_per_choice_with_their_intervals():
    (head, summary), (_, detail) = sensitivity_rows(cells(_runs()))
    assert head[:3] == ["slots", "eps", "Table II"] and len(summary) == 2
    calibrated, held = summary
    assert calibrated[:3] == ["calibrated", "0.1", "eta 0.95, P_th 0.95"]
    assert calibrated[3] == "CORP < RCCR < CS < DRA *"  # the paper's order, gaps beyond the CIs
    assert calibrated[5] == "CORP > RCCR > CS > DRA *"  # Fig. 7: higher is better
    # DRA best; CORP's seeds differ by 0.2: its interval overlaps RCCR's
    assert held[3].startswith("DRA < CS <") and "~" in held[3] and "*" not in held[3]
    assert len(detail) == 2 * 6 and all("±" in row[-1] for row in detail)


def test_without_a_sweep_there_is_no_sensitivity_table():
    one = cells(_runs().filter(pl.col("slots") == "calibrated"))
    assert sensitivity_rows(one)[0][1] == []


def test_experiment_run_prints_fig6_per_method_with_young_jobs_apart():
    lines = headline(_runs())
    assert lines[0].startswith("Fig. 6, CPU predictions")
    assert len(lines) == 1 + 4  # the default cells only (label = method)
    assert "300 jobs, corp: point 0.101, bound 0.101; 100 jobs scored, 200 too young" in lines[1]
