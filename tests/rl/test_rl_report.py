"""Training curves from what a trained policy records."""

from __future__ import annotations

import numpy as np
import pytest

from cli_runner import reclaim
from reclaim.errors import ReclaimError
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.report import curve, plot_curves, rolling_mean


def _policy(path, **settings):
    rng = np.random.default_rng(0)
    shapes = ((3, 5), (3,), (2, 3), (2,))
    weights = [rng.normal(size=s).astype(np.float32) for s in shapes]
    base = {"env": "PlacementEnv", "load": 0.5, "seed": 7}
    return LinearPolicy(*weights, settings=base | settings).save(path)


def test_rolling_mean_averages_the_last_window_and_fewer_at_the_start():
    values = np.array([1.0, 3.0, 5.0, 7.0])
    assert rolling_mean(values, 2).tolist() == [1.0, 2.0, 4.0, 6.0]
    assert rolling_mean(values, 10).tolist() == [1.0, 2.0, 3.0, 4.0]


def test_the_window_is_one_pass_over_the_training_set(tmp_path):
    one = _policy(tmp_path / "a.npz", curve=[-3.0, -2.0], config={"sequences": 100})
    every = _policy(tmp_path / "b.npz", curve=[-3.0], trainer="vector", config={"sequences": 100})
    (title, returns, window), (_, _, every_window) = curve(one), curve(every)
    assert returns.tolist() == [-3.0, -2.0] and window == 100 and every_window == 20
    assert title == "TVW-RL, 50% load, one sequence per iteration, seed 7"
    assert plot_curves([one, every], tmp_path / "c.png").stat().st_size > 10_000


def test_a_policy_without_a_curve_is_a_one_line_error(tmp_path):
    old = _policy(tmp_path / "old.npz")
    with pytest.raises(ReclaimError, match="records no training curve"):
        curve(old)
    done = reclaim("rl", "curve", str(old), "-o", str(tmp_path / "c.png"))
    assert done.returncode != 0 and "records no training curve" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["c.pngx", "dir"])
def test_a_chart_path_that_cannot_be_a_chart_is_refused_in_one_line(tmp_path, name):
    (tmp_path / "dir").mkdir()
    policy = _policy(tmp_path / "p.npz", curve=[-1.0], config={"sequences": 1})
    done = reclaim("rl", "curve", str(policy), "-o", str(tmp_path / name))
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_an_unwritable_chart_is_a_one_line_error(tmp_path):
    policy = _policy(tmp_path / "p.npz", curve=[-1.0], config={"sequences": 1})
    (tmp_path / "file").write_text("")
    with pytest.raises(ReclaimError, match="cannot write the chart"):
        plot_curves([policy], tmp_path / "file" / "c.png")


def test_rl_curve_draws_the_shipped_policies_by_default(tmp_path):
    done = reclaim("rl", "curve", "-o", str(tmp_path / "c.png"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "c.png").stat().st_size > 10_000
