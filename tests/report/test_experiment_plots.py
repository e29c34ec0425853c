"""Figure-3, Figure-4 and coverage plots: the numbers they draw and the files they write."""

from __future__ import annotations

import shutil

import numpy as np
import polars as pl
import pytest

from reclaim.report import experiment_plots as plots
from reclaim.report.experiment_data import aggregate, load_results


@pytest.fixture(scope="module")
def fig4_cells(fig4_store):
    return aggregate(load_results(fig4_store).runs)


def test_heatmap_cells_hold_each_grid_points_mean(fig4_cells):
    assert plots.grid_labels(fig4_cells) == ["pessimistic/gp-exp"]
    k1s, k2s, values = plots.grid(fig4_cells, "pessimistic/gp-exp", "failure_rate")
    assert (k1s, k2s) == ([0.0, 0.05], [0.0, 3.0])
    for k1, k2, rate in fig4_cells.drop_nulls("k1").select("k1", "k2", "failure_rate").iter_rows():
        # rows are K2, columns K1, as drawn
        assert values[k2s.index(k2), k1s.index(k1)] == pytest.approx(rate)


def test_a_missing_grid_point_is_nan_not_a_crash(fig4_cells, tmp_path):
    partial = fig4_cells.filter(~((pl.col("k1") == 0.05) & (pl.col("k2") == 0.0)))
    _, _, values = plots.grid(partial, "pessimistic/gp-exp", "turnaround_ratio")
    assert np.isnan(values[0, 1]) and np.isfinite(values).sum() == 3
    assert plots.plot_figure4(partial, tmp_path / "h.png").stat().st_size > 10_000


def test_figure3_takes_a_sweep_only_at_the_deployed_parameters(fig4_cells):
    chosen = plots.figure3_cells(fig4_cells)
    assert chosen.select("label", "k1", "k2").rows() == [
        ("reservation", None, None),
        ("pessimistic/gp-exp", 0.05, 3.0),
    ]


def test_figure3_uses_per_application_slack_else_the_timeline(fig3_store, tmp_path):
    store = load_results(fig3_store)
    cells = aggregate(store.runs)
    path, source = plots.plot_figure3(store, cells, tmp_path / "a.png")
    assert source == "per application" and path.stat().st_size > 10_000

    old = tmp_path / "old"
    shutil.copytree(fig3_store, old)
    for apps in old.glob("runs/*/apps.parquet"):
        pl.read_parquet(apps).drop("slack_cpu", "slack_mem").write_parquet(apps)
    old_store = load_results(old)
    path, source = plots.plot_figure3(old_store, aggregate(old_store.runs), tmp_path / "b.png")
    assert source == "per tick, cluster" and path.exists()


def test_plots_without_their_kind_of_run_return_none(fig3_store, tmp_path):
    store = load_results(fig3_store)
    cells = aggregate(store.runs)
    assert plots.plot_figure4(cells, tmp_path / "h.png") is None
    assert plots.plot_conformal(cells, tmp_path / "c.png") is None
    one = cells.filter(pl.col("controller") == "reservation")
    assert plots.plot_figure3(store, one, tmp_path / "b.png") is None
    assert not list(tmp_path.iterdir())


def test_conformal_plot(conformal_store, tmp_path):
    cells = aggregate(load_results(conformal_store).runs)
    assert plots.plot_conformal(cells, tmp_path / "c.png").stat().st_size > 10_000


def test_error_bars_reach_from_the_mean_to_the_interval():
    cells = pl.DataFrame(
        {
            "failure_rate": [0.1, 0.2],
            "failure_rate_lo": [0.05, None],
            "failure_rate_hi": [0.2, None],
        }
    )
    mean, err = plots.interval_errors(cells, "failure_rate")
    assert mean.tolist() == [0.1, 0.2]
    # one seed: no interval, no bar
    assert err[:, 0] == pytest.approx([0.05, 0.1]) and err[:, 1].tolist() == [0.0, 0.0]


def test_heatmap_intervals_come_from_the_same_grid(fig4_cells, tmp_path):
    with_ci = fig4_cells.with_columns(
        turnaround_ratio_lo=pl.col("turnaround_ratio") * 0.5,
        turnaround_ratio_hi=pl.col("turnaround_ratio") * 2,
    )
    _, _, values = plots.grid(with_ci, "pessimistic/gp-exp", "turnaround_ratio")
    _, _, lows = plots.grid(with_ci, "pessimistic/gp-exp", "turnaround_ratio_lo")
    assert np.allclose(lows, values * 0.5)
    assert plots.plot_figure4(with_ci, tmp_path / "h.png").stat().st_size > 10_000
