"""``reclaim rl ablate``: the paper's grid, a tiny run end to end, resuming without retraining,
and one-line errors."""

from __future__ import annotations

import shutil
from dataclasses import asdict, fields

import polars as pl
import pytest
from rich.console import Console
from rl_sequences import SEQ, small_env

from cli_runner import reclaim
from reclaim.errors import ReclaimError
from reclaim.rl import ablation
from reclaim.rl.ablation import grid, run_ablation
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.reinforce import POLICY, TrainConfig, train
from reclaim.rl.rewards import Weights
from reclaim.traces.store import sample_path
from reclaim.tvw.evaluate import METRICS

pytest.importorskip("torch")

TINY = TrainConfig(iterations=2)
QUIET = Console(quiet=True)


def _args(out, config=TINY, jobs=8):
    """run_ablation's arguments for what ``_tiny_cli`` ran."""
    stores = [sample_path("bitbrains")]
    return stores, 0.5, jobs, config, grid(["k_u"]), 1, 1, out, QUIET


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """One tiny ablation of K_u through the command line, two settings at a time in worker
    processes: (its output folder, the run)."""
    out = tmp_path_factory.mktemp("ablation")
    done = reclaim(
        "rl", "ablate", "--only", "k_u", "--iterations", "2", "--jobs", "8", "--sequences", "1",
        "--workers", "2", "--store", str(sample_path("bitbrains")), "-o", str(out),
    )  # fmt: skip
    return out, done


def test_grid_is_the_papers_one_coefficient_off_default_at_a_time():
    points = grid()
    assert len(points) == 12 and {p.axis for p in points} == {"k_u", "k_o", "k_c"}
    settings = {p.name: p.weights for p in points}
    assert len(settings) == len(set(settings.values())) == 10
    default = asdict(Weights())
    for name, weights in settings.items():
        off = [f.name for f in fields(Weights) if getattr(weights, f.name) != default[f.name]]
        assert len(off) == (0 if name == "default" else 1), name
    assert settings["k_o=15000"] == Weights(overshoot=15000.0)
    assert "k_u=3" not in settings and "k_c=0.1" not in settings  # both are the default
    assert [p.value for p in grid(["k_c"])] == [0.0, 0.1, 1.0, 10.0]


def test_tiny_ablation_writes_one_row_per_setting(tiny):
    out, done = tiny
    assert done.returncode == 0, done.stderr
    frame = pl.read_parquet(out / "ablation.parquet")
    assert frame["axis"].to_list() == ["k_u"] * 4
    assert frame["value"].to_list() == [0.0, 1.0, 2.0, 3.0]
    assert frame["setting"].to_list() == ["k_u=0", "k_u=1", "k_u=2", "default"]
    assert set(frame["store"]) == {"bitbrains"} and set(frame["load"]) == {0.5}
    assert frame.select(METRICS).null_count().sum_horizontal().item() == 0
    assert (frame["machines_used_half"] >= 0).all()  # the intervals the chart draws
    for setting, k_u in zip(frame["setting"], frame["value"], strict=True):
        trained = LinearPolicy.load(out / setting / POLICY).settings
        assert trained["iterations"] == 2 and trained["weights"]["underuse"] == k_u
    assert (out / "ablation.png").stat().st_size > 0
    assert "machines used falls as K_u rises: ours" in done.stdout
    assert "ours / paper" in done.stdout and "/ 0.103" in done.stdout  # paper's CPU util, K_u=0
    assert "K_o" not in done.stdout  # --only k_u
    assert all(f"{s}: trained" in done.stderr for s in frame["setting"])  # by the workers


def test_second_run_keeps_trained_settings(tiny, monkeypatch):
    out, _ = tiny
    stamps = {p: p.stat().st_mtime_ns for p in out.glob(f"*/{POLICY}")}
    assert len(stamps) == 4

    def no_training(*args, **kwargs):
        raise AssertionError("retrained a finished setting")

    monkeypatch.setattr(ablation, "run_training", no_training)
    before = pl.read_parquet(out / "ablation.parquet")
    frame = run_ablation(*_args(out))
    assert {p: p.stat().st_mtime_ns for p in out.glob(f"*/{POLICY}")} == stamps
    assert frame.equals(before)  # the same policies on the same test sequences


def test_more_iterations_resume_every_setting(tiny, monkeypatch):
    out, _ = tiny
    calls = []
    monkeypatch.setattr(ablation, "run_training", lambda *args: calls.append(args))
    run_ablation(*_args(out, TrainConfig(iterations=3)))
    assert sorted(c[4].name for c in calls) == ["default", "k_u=0", "k_u=1", "k_u=2"]
    assert all(c[3].iterations == 3 and c[5] is True for c in calls)  # resume=True


def test_an_output_trained_otherwise_is_refused(tiny, monkeypatch):
    out, _ = tiny
    monkeypatch.setattr(ablation, "run_training", lambda *args: pytest.fail("trained"))
    with pytest.raises(ReclaimError, match="another jobs"):
        run_ablation(*_args(out, jobs=9))


def _no_training(monkeypatch):
    """Any training, in this process or in workers, fails the test."""
    monkeypatch.setattr(ablation, "run_training", lambda *args: pytest.fail("trained"))
    monkeypatch.setattr(ablation, "in_processes", lambda *args: pytest.fail("started workers"))


def test_a_checkpoint_beyond_the_iterations_fails_before_any_training(tiny, tmp_path, monkeypatch):
    out = tmp_path / "out"
    shutil.copytree(tiny[0], out)
    for folder in ("k_u=0", "k_u=1", "k_u=2"):  # untrained: would train first
        shutil.rmtree(out / folder)
    (out / "default" / POLICY).unlink()  # its checkpoint remains: 2 iterations
    _no_training(monkeypatch)
    config = TrainConfig(iterations=1)
    with pytest.raises(ReclaimError, match=r"default/checkpoint.pt: 2 iterations done, more than"):
        run_ablation(*_args(out, config)[:6], 2, out, QUIET)


def test_a_policy_trained_with_other_weights_is_refused(tiny, tmp_path, monkeypatch):
    out = tmp_path / "out"
    shutil.copytree(tiny[0], out)
    (out / "k_u=0").rename(out / "swap")
    (out / "k_u=1").rename(out / "k_u=0")
    _no_training(monkeypatch)
    with pytest.raises(ReclaimError, match=r"k_u=0: trained with another weights; use another"):
        run_ablation(*_args(out))
    assert ablation.is_trained(out / "default", 2, Weights(), 0.5, 8)
    with pytest.raises(ReclaimError, match=r"default: trained with another load, jobs"):
        ablation.is_trained(out / "default", 2, Weights(), 0.6, 9)


def test_a_corrupt_ablation_json_is_a_one_line_error(tmp_path):
    (tmp_path / "ablation.json").write_text('{"stores": [')
    with pytest.raises(ReclaimError, match=r"ablation.json: not the JSON an ablation writes"):
        ablation.claim_output(tmp_path, {"load": 0.5})


def test_resume_refuses_a_checkpoint_beyond_the_iterations(tmp_path):
    env = small_env()
    train(env, TrainConfig(iterations=2, trajectories=2, sequences=1), tmp_path, sequences=[SEQ])
    with pytest.raises(ReclaimError, match="2 iterations done, more than the 1"):
        train(env, TrainConfig(1, 2, 1), tmp_path, resume=True, sequences=[SEQ])


def test_unknown_axis_is_a_one_line_error(tmp_path):
    done = reclaim("rl", "ablate", "--only", "k_u,nope", "-o", str(tmp_path / "o"))
    assert done.returncode == 2
    assert "--only: axes are k_u, k_o, k_c; got k_u, nope" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "o").exists()
    for only in (["k_x"], []):
        with pytest.raises(ReclaimError, match="--only"):
            grid(only)
