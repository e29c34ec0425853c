"""Rows of text shared by the console and the page."""

from __future__ import annotations

import polars as pl
from rich.console import Console

from reclaim.metrics.intervals import Interval
from reclaim.report.experiment_tables import (
    FittedTable,
    cell_rows,
    cluster_rows,
    failure_rows,
    fmt,
    paper_rows,
    rich_table,
)
from reclaim.report.paper import PAPER, Comparison


def test_formats_by_kind():
    assert fmt("turnaround_mean_s", 7200.0) == "2.0 h"
    assert fmt("turnaround_ratio", 10.6) == "10.60x"
    assert fmt("failure_rate", 0.3767) == "37.7%"
    assert fmt("failure_rate", None) == "-" and fmt("slack_mem", float("nan")) == "-"
    # the interval on its own line, in the value's unit
    assert fmt("turnaround_mean_s", 7200.0, 5400.0, 9000.0) == "2.0 h\n[1.5, 2.5] h"
    assert fmt("slack_mem", 0.752, 0.737, 0.767) == "75.2%\n[73.7, 76.7]%"
    assert fmt("turnaround_ratio", 2.0, None, None) == "2.00x"


BASE = {"label": "a", "controller": "c", "forecaster": None, "k1": None, "k2": None}


def test_interval_only_where_a_cell_has_several_seeds():
    several = {"turnaround_ratio": 2.0, "turnaround_ratio_lo": 1.5, "turnaround_ratio_hi": 2.5}
    one = {"turnaround_ratio": 2.0, "turnaround_ratio_lo": None, "turnaround_ratio_hi": None}
    frame = pl.DataFrame(
        [BASE | several | {"runs": 3, "seeds": 3}, BASE | one | {"runs": 1, "seeds": 1}]
    )
    header, rows = cell_rows(frame)
    col = header.index("ratio over baseline")
    assert rows[0][col] == "2.00x\n[1.50, 2.50]x" and rows[1][col] == "2.00x"
    assert rows[0][header.index("memory slack")] == "-"  # absent metric, not a crash


def test_main_and_failure_tables_fit_a_160_column_console():
    metrics = {
        "apps_done": 1234.0,
        "turnaround_mean_s": 45000.0,
        "turnaround_p50_s": 45000.0,
        "turnaround_ratio": 10.61,
        "slack_cpu": 0.555,
        "slack_mem": 0.207,
        "failure_rate": 0.067,
        "core_oom_rate": 0.05,
        "preempted_rate": 0.1,
        "elastic_loss_rate": 0.3,
        "resubmissions": 1234.0,
        "work_lost_core_h": 1234.5,
        "work_lost_gib_h": 12345.6,
    }
    wide = BASE | {"label": "pessimistic/gp-exp", "k1": 0.25, "k2": 3.0, "runs": 10, "seeds": 10}
    for m, v in metrics.items():
        wide |= {m: v, f"{m}_lo": v * 0.9, f"{m}_hi": v * 1.1}
    for header, body in (cell_rows(pl.DataFrame([wide])), failure_rows(pl.DataFrame([wide]))):
        console = Console(width=160, record=True)
        console.print(rich_table("t", (header, body)))
        text = console.export_text()
        # every number and interval on one line of its own: nothing wrapped inside a value
        assert all(line in text for value in body[0] for line in value.split("\n"))
        assert max(len(line) for line in text.splitlines()) <= 160


def test_an_80_column_terminal_gets_each_row_as_a_block_with_nothing_folded():
    metrics = {"turnaround_ratio": 10.61, "slack_mem": 0.207, "failure_rate": 0.067}
    row = BASE | {"label": "pessimistic/gp-exp", "k1": 0.05, "k2": 3.0, "runs": 5, "seeds": 5}
    for m, v in metrics.items():
        row |= {m: v, f"{m}_lo": v * 0.9, f"{m}_hi": v * 1.1}
    header, body = cell_rows(pl.DataFrame([row]))
    for width, stacked in ((80, True), (200, False)):
        console = Console(width=width, record=True)
        console.print(FittedTable("t", (header, body)))
        text = console.export_text()
        assert max(len(line) for line in text.splitlines()) <= width
        assert all(line in text for value in body[0] for line in value.split("\n"))
        assert ("ratio over baseline" in text.replace("\n", " ")) and (
            any(line.strip().startswith("ratio over baseline") for line in text.splitlines())
            == stacked
        )


def test_failure_table_shows_component_hours_only_for_an_older_store():
    new = BASE | {"runs": 1, "seeds": 1, "work_lost_core_h": 2.0, "work_lost_gib_h": 8.0}
    old = BASE | {"runs": 1, "seeds": 1, "work_lost_core_h": None, "work_lost_component_h": 5.0}
    header, _ = failure_rows(pl.DataFrame([new | {"work_lost_component_h": 5.0}]))
    assert "lost core-h" in header and "lost component-h" not in header
    header, rows = failure_rows(pl.DataFrame([old]))
    assert header[-1] == "lost component-h" and rows[0][-1] == "5.0"


def test_cluster_table_only_with_something_to_show():
    assert cluster_rows(pl.DataFrame([BASE | {"runs": 1, "seeds": 1}])) is None
    frame = pl.DataFrame([BASE | {"runs": 1, "seeds": 1, "adapted_k2": 2.345}])
    header, rows = cluster_rows(frame)
    assert header[2:] == ["adapted K2"] and rows[0][2] == "2.35"


def test_paper_rows_say_when_our_store_lacks_the_setting():
    header, rows = paper_rows([Comparison(PAPER[0], None)])
    assert rows[0][header.index("paper value")] == "10.6x"
    assert rows[0][header.index("ours [95% CI]")] == "not in this result store"
    assert rows[0][header.index("claimed direction")] == "faster than the baseline"
    table = rich_table("t", (header, rows))
    assert [c.header for c in table.columns] == header


def test_paper_rows_show_ours_with_its_interval_seeds_and_verdict():
    cell = BASE | {"label": "pessimistic/oracle", "k1": 0.05, "coverage": None}
    cell |= {"experiment": "pace-fig3"}  # reclaim's scenario: its reason shows
    pessimistic = next(h for h in PAPER if h.setting == "oracle pessimistic")
    comparison = Comparison(
        pessimistic, cell, Interval(0.01, 0.0, 0.04, 3), Interval(-0.3, -0.4, -0.2, 3), "yes"
    )
    header, (row,) = paper_rows([comparison])
    assert row[0] == "Fig. 3: oracle pessimistic\nours: pessimistic/oracle K1=5%"
    assert row[header.index("ours [95% CI]")] == "1.0%\n[0.0, 4.0]%"
    assert row[header.index("seeds")] == "3"
    assert row[header.index("direction reproduced?")] == "yes\nΔ -30.0% [-40.0, -20.0]%"
    assert row[header.index("why")] == pessimistic.why != ""
