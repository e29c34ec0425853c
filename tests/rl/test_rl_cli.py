"""``reclaim rl train`` and ``reclaim rl eval`` as a user meets them: tiny runs end to end."""

from __future__ import annotations

import shutil

import numpy as np
import polars as pl
import pytest

from cli_runner import reclaim
from reclaim.rl.deeprm import DeepRMEnv
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.reinforce import settings

pytest.importorskip("torch")

TINY = ["--iterations", "1", "--trajectories", "2", "--sequences", "1", "--jobs", "8"]


def test_train_then_eval_end_to_end(tmp_path):
    tvw = tmp_path / "tvw"
    done = reclaim("rl", "train", *TINY, "--store", _bitbrains(), "-o", str(tvw))
    assert done.returncode == 0, done.stderr
    assert (tvw / "policy.npz").is_file() and (tvw / "checkpoint.pt").is_file()
    assert (tvw / "curve.png").stat().st_size > 10_000  # the training curve, drawn
    # A DeepRM selector of the default scenario's shape (training it is tested in test_reinforce).
    env = DeepRMEnv()
    rng = np.random.default_rng(0)
    shapes = ((20, env.obs_size), (20,), (env.actions, 20), (env.actions,))
    weights = [rng.normal(size=s).astype(np.float32) for s in shapes]
    drm = LinearPolicy(*weights, settings=settings(env)).save(tmp_path / "drm.npz")
    out = tmp_path / "eval"
    done = reclaim(
        "rl", "eval", "--store", _bitbrains(), "--load", "50", "--sequences", "1", "--jobs", "8",
        "--policy", str(tvw / "policy.npz"), "--deeprm", str(drm), "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = pl.read_parquet(out / "summary.parquet")
    assert {"tvw-rl", "deeprm", "tetris@peak", "best-fit@current"} == set(summary["policy"])
    assert "paper's claimed range" in done.stdout
    # several TVW-RL policies: each labelled by its folder, paired against the first
    (tmp_path / "copy").mkdir()
    shutil.copy(tvw / "policy.npz", tmp_path / "copy" / "policy.npz")
    two = ["--policy", str(tvw / "policy.npz"), "--policy", str(tmp_path / "copy" / "policy.npz")]
    done = reclaim(
        "rl", "eval", "--store", _bitbrains(), "--load", "50", "--sequences", "2", "--jobs", "8",
        *two, "--deeprm", str(drm), "-o", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    paired = pl.read_parquet(out / "paired.parquet")
    same = paired.filter(pl.col("against") == "tvw-rl:tvw")
    assert same["tvw_rl"].to_list() == ["tvw-rl:copy"] and same["overshoot_pct_diff"][0] == 0
    assert "minus tvw-rl:tvw" in done.stdout


def test_vectorised_training_repeats_bit_for_bit_from_its_settings(tmp_path):
    runs = []
    for name in ("a", "b"):
        done = reclaim(
            "rl", "train", "--vectorised", *TINY, "--store", _bitbrains(), "-o", str(tmp_path / name)
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        runs.append(LinearPolicy.load(tmp_path / name / "policy.npz"))
    a, b = runs
    assert a.settings["trainer"] == "vector" and len(a.settings["curve"]) == 1
    assert a.settings["hold"] and a.settings == b.settings
    for x, y in ((a.w1, b.w1), (a.b1, b.b1), (a.w2, b.w2), (a.b2, b.b2)):
        assert np.array_equal(x, y)
    assert a.w2.shape[0] == a.settings["machines"] + 1  # the hold action


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["rl", "train", *TINY, "--agent", "nope"], "agent must be tvw-rl or deeprm"),
        (["rl", "eval", "--load", "x"], "--load: expected a finite number > 0"),
        (["rl", "eval", "--policy", "missing.npz", "--load", "50"], "no trained policy"),
        (["rl", "eval", "--background", "9", "--load", "50"], "background must be in"),
        (["rl", "train", *TINY, "--jitter", "6"], "jitter must be in"),
        (
            ["rl", "eval", "--policy", "a/policy.npz", "--policy", "a/other.npz", "--load", "50"],
            "give each policy its own folder",
        ),
        (["rl", "retrain", "missing.npz"], "no trained policy"),
    ],
)
def test_bad_input_is_one_line(tmp_path, args, message):
    done = reclaim(*args, "-o", str(tmp_path / "o"))
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def _bitbrains() -> str:
    from reclaim.traces.store import sample_path

    return str(sample_path("bitbrains"))


def test_paired_comparison_against_best_fit_on_the_same_sequences():
    from reclaim.rl.evaluate import paired_against

    rng = np.random.default_rng(0)
    n = 30
    base = {"store": ["s"] * n, "load": [0.5] * n, "sequence": list(range(n))}
    bf_over = rng.uniform(2, 6, n)
    runs = pl.concat(
        [
            pl.DataFrame(
                base
                | {"policy": ["best-fit@current"] * n, "overshoot_pct": bf_over}
                | {"machines_used": np.full(n, 8.0)}
            ),
            pl.DataFrame(
                base
                | {"policy": ["tvw-rl"] * n, "overshoot_pct": bf_over - 1 + rng.normal(0, 0.1, n)}
                | {"machines_used": np.full(n, 8.0)}
            ),
        ]
    )
    (row,) = paired_against(runs).iter_rows(named=True)
    assert row["sequences"] == n
    assert row["overshoot_pct_diff_lo"] < row["overshoot_pct_diff"] < row["overshoot_pct_diff_hi"]
    assert -1.1 < row["overshoot_pct_diff"] < -0.9 and row["overshoot_pct_p"] < 1e-10
    assert row["machines_used_diff"] == 0 and row["machines_used_p"] == 1.0


def test_eval_on_google2019_runs_the_shipped_policies_on_the_units_they_learned():
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        done = reclaim(
            "rl", "eval", "--store", "google2019-usage", "--load", "50", "--sequences", "1",
            "--jobs", "8", "-o", tmp,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        runs = pl.read_parquet(f"{tmp}/runs.parquet")
    assert set(runs["store"]) == {"google2019-usage"} and len(runs) == 4
    assert "own limit" in done.stdout  # the shipped policies learned the auto scale: own limits


def test_eval_under_the_papers_noise_costs_every_placer(tmp_path):
    args = ("rl", "eval", "--store", _bitbrains(), "--load", "50", "--sequences", "2",
            "--jobs", "20")  # fmt: skip
    quiet = reclaim(*args, "-o", str(tmp_path / "quiet"))
    noisy = reclaim(*args, "--background", "3", "--jitter", "1", "-o", str(tmp_path / "noisy"))
    assert quiet.returncode == 0 and noisy.returncode == 0, noisy.stderr
    a, b = (
        pl.read_parquet(tmp_path / k / "summary.parquet").sort("policy") for k in ("quiet", "noisy")
    )
    assert a["policy"].to_list() == b["policy"].to_list()
    # the background is usage every machine carries: utilisation rises for every placer
    assert (b["util_cpu"] > a["util_cpu"]).all()


def test_an_empty_policy_file_is_named_not_aborted(tmp_path):
    """Issue 33: an empty --deeprm file printed only "Aborted." (numpy's EOFError)."""
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    done = reclaim("rl", "eval", "--deeprm", str(empty), "--load", "50", "-o", str(tmp_path / "o"))
    assert done.returncode == 2
    assert (
        done.stderr
        == f"error: {empty}: not a policy saved by reclaim rl train (No data left in file)\n"
    )
