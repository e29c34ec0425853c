"""Rows of text shared by the console and the page."""

from __future__ import annotations

import polars as pl

from reclaim.report.experiment_tables import cell_rows, fmt, paper_rows, rich_table
from reclaim.report.paper import PAPER, Comparison


def test_formats_by_kind():
    assert fmt("turnaround_mean_s", 7200.0) == "2.0 h"
    assert fmt("turnaround_ratio", 10.6) == "10.60x"
    assert fmt("failure_rate", 0.3767) == "37.7%"
    assert fmt("failure_rate", None) == "-" and fmt("slack_mem", float("nan")) == "-"
    # the spread on its own line, in the value's unit
    assert fmt("turnaround_mean_s", 7200.0, 1800.0) == "2.0 h\n± 0.5 h"
    assert fmt("slack_mem", 0.752, 0.015) == "75.2%\n± 1.5%"


def test_spread_only_where_a_cell_has_several_seeds():
    base = {"label": "a", "controller": "c", "forecaster": None, "k1": None, "k2": None}
    metrics = {"turnaround_ratio": 2.0, "turnaround_ratio_std": 0.5}
    frame = pl.DataFrame(
        [base | metrics | {"runs": 3, "seeds": 3}, base | metrics | {"runs": 1, "seeds": 1}]
    )
    header, rows = cell_rows(frame)
    col = header.index("ratio over baseline")
    assert rows[0][col] == "2.00x\n± 0.50x" and rows[1][col] == "2.00x"
    assert rows[0][header.index("memory slack")] == "-"  # absent metric, not a crash


def test_paper_rows_say_when_our_store_lacks_the_setting():
    header, rows = paper_rows([Comparison(PAPER[0], None)])
    assert rows[0][header.index("paper value")] == "10.6x"
    assert rows[0][header.index("ours")] == "not in this result store"
    table = rich_table("t", (header, rows))
    assert [c.header for c in table.columns] == header
