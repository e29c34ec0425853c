"""REINFORCE on a small seeded scenario: it learns, is deterministic, resumes exactly, and refuses
to resume a checkpoint saved with other settings."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rl_sequences import sequence, small_env

from reclaim.errors import ReclaimError
from reclaim.rl.reinforce import (
    CHECKPOINT,
    POLICY,
    TrainConfig,
    checkpoint_iterations,
    evaluate_return,
    load_checkpoint,
    train,
)
from reclaim.rl.rewards import Weights

pytest.importorskip("torch")


def _scenario():
    rng = np.random.default_rng(1)
    series = [
        [[int(rng.integers(1, 3)), int(rng.integers(1, 3))]] * int(rng.integers(3, 8))
        for _ in range(8)
    ]
    return sequence(series, sorted(rng.integers(0, 4, 8))), small_env(machines=4)


def test_reinforce_improves_the_return(tmp_path):
    seq, env = _scenario()
    history = []
    config = TrainConfig(iterations=40, trajectories=8, sequences=1, lr=1e-2)
    policy = train(env, config, tmp_path, False, lambda i, r: history.append(r), [seq])
    assert np.mean(history[-10:]) > np.mean(history[:10]) * 0.6  # penalties fall by 40 %+
    assert evaluate_return(env, policy, seq) > np.mean(history[:10])


def test_same_seed_same_run_and_resume_continues_exactly(tmp_path):
    seq, env = _scenario()
    config = TrainConfig(iterations=6, trajectories=4, sequences=1, lr=1e-2, checkpoint_every=3)
    straight = []
    train(
        env, config, tmp_path / "a", on_iteration=lambda i, r: straight.append(r), sequences=[seq]
    )
    first = TrainConfig(iterations=3, trajectories=4, sequences=1, lr=1e-2, checkpoint_every=3)
    train(env, first, tmp_path / "b", sequences=[seq])
    assert (tmp_path / "b" / CHECKPOINT).is_file()
    resumed = []
    train(env, config, tmp_path / "b", True, lambda i, r: resumed.append(r), sequences=[seq])
    assert resumed == straight[3:]


def test_resume_refuses_other_settings(tmp_path):
    seq, env = _scenario()
    train(env, TrainConfig(iterations=1, trajectories=2, sequences=1), tmp_path, sequences=[seq])
    other = TrainConfig(iterations=2, trajectories=3, sequences=1)
    with pytest.raises(ReclaimError, match="other settings"):
        train(env, other, tmp_path, resume=True, sequences=[seq])


def test_checkpoint_without_settings_is_checked_against_its_policy(tmp_path):
    torch = pytest.importorskip("torch")
    seq, env = _scenario()
    train(env, TrainConfig(iterations=1, trajectories=2, sequences=1), tmp_path, sequences=[seq])
    old = torch.load(tmp_path / CHECKPOINT, weights_only=False)
    del old["settings"]  # as checkpoints were saved before they recorded the env's settings
    torch.save(old, tmp_path / CHECKPOINT)
    longer = TrainConfig(iterations=2, trajectories=2, sequences=1)
    other = replace(env, weights=Weights(underuse=1.0))
    with pytest.raises(ReclaimError, match=r"other settings \(weights.underuse\); drop --resume"):
        train(other, longer, tmp_path, resume=True, sequences=[seq])
    assert train(env, longer, tmp_path, resume=True, sequences=[seq]).settings["iterations"] == 2
    torch.save(old, tmp_path / CHECKPOINT)
    (tmp_path / POLICY).unlink()
    with pytest.raises(ReclaimError, match="checkpoint predates recorded settings; drop --resume"):
        train(env, longer, tmp_path, resume=True, sequences=[seq])


def test_deeprm_selector_trains_on_the_same_reinforce(tmp_path):
    from dataclasses import replace

    from reclaim.rl.deeprm import DeepRMEnv
    from reclaim.tvw.scenario import ScenarioSpec

    seq, _ = _scenario()
    spec = replace(ScenarioSpec(), machines=4, units=8, jobs=8, max_units=4)
    env = DeepRMEnv(spec=spec, history=4, queue_slots=3)
    config = TrainConfig(iterations=2, trajectories=3, sequences=1)
    policy = train(env, config, tmp_path, sequences=[seq])
    assert policy.w2.shape == (4, 20) and policy.settings["env"] == "DeepRMEnv"
    # the run it came from: seed, training settings and the mean return of every iteration
    assert policy.settings["seed"] == 0 and policy.settings["config"]["trajectories"] == 3
    assert len(policy.settings["curve"]) == 2 and np.isfinite(policy.settings["curve"]).all()
    assert np.isfinite(evaluate_return(env, policy, seq))


@pytest.mark.parametrize("content", [b"junk", b""])
def test_an_unreadable_checkpoint_is_a_one_line_error_and_stays_on_disk(tmp_path, content):
    (tmp_path / CHECKPOINT).write_bytes(content)
    with pytest.raises(ReclaimError, match="unreadable checkpoint .*delete it to start over"):
        checkpoint_iterations(tmp_path)
    assert (tmp_path / CHECKPOINT).read_bytes() == content


def test_a_foreign_pickle_is_not_taken_for_a_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"weights": 1}, tmp_path / CHECKPOINT)
    with pytest.raises(ReclaimError, match="not a checkpoint written by reclaim rl train"):
        load_checkpoint(tmp_path)


def test_resume_checks_the_data_where_the_checkpoint_records_it(tmp_path, bitbrains):
    torch = pytest.importorskip("torch")
    seq, env = _scenario()
    env = replace(env, pools=[bitbrains])
    config = TrainConfig(iterations=1, trajectories=2, sequences=1)
    assert train(env, config, tmp_path, sequences=[seq]).settings["stores"] == [
        {"name": "bitbrains", "digest": bitbrains.digest()}
    ]
    saved = torch.load(tmp_path / CHECKPOINT, weights_only=False)
    saved["settings"]["stores"][0]["digest"] = "0" * 16  # another store of the same name
    torch.save(saved, tmp_path / CHECKPOINT)
    longer = replace(config, iterations=2)
    with pytest.raises(ReclaimError, match=r"other settings \(stores\)"):
        train(env, longer, tmp_path, resume=True, sequences=[seq])
    del saved["settings"]["stores"]  # saved before the stores were recorded: not checked
    torch.save(saved, tmp_path / CHECKPOINT)
    assert train(env, longer, tmp_path, resume=True, sequences=[seq]).settings["iterations"] == 2
