from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from reclaim.metrics import summarize_timeline, timeline_table


def test_slack_and_utilisation_by_hand():
    # Two ticks: 10 cores allocated / 4 used, then 20 / 15; capacity 40 cores, 80 GiB.
    rows = np.array([[0, 3, 1, 10, 8, 4, 2], [300, 5, 0, 20, 16, 15, 4]], float)
    t = timeline_table(rows, np.array([[20.0, 40.0], [20.0, 40.0]]))
    assert t["slack_cpu"].to_list() == [0.6, 0.25]
    assert t["util_cpu"].to_list() == [0.1, 0.375]
    s = summarize_timeline(t)
    assert s["slack_cpu_mean"] == 0.425
    assert s["slack_cpu_weighted"] == pytest.approx(1 - 19 / 30)
    assert s["slack_mem_weighted"] == pytest.approx(1 - 6 / 24)


def test_nothing_allocated_has_no_slack_rather_than_a_division_by_zero():
    t = timeline_table(np.array([[0, 0, 0, 0, 0, 0, 0]], float), np.array([[1.0, 1.0]]))
    assert t["slack_cpu"].to_list() == [None]
    assert isinstance(t, pl.DataFrame)
