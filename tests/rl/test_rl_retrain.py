"""A policy trains again from what it records: the same weights bit for bit, a shorter run the
same first returns; a run that could not reproduce it is refused before it trains."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from cli_runner import reclaim
from reclaim.errors import ReclaimError
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.reinforce import POLICY, TrainConfig
from reclaim.rl.retrain import retrain
from reclaim.rl.training import run_training
from reclaim.traces.store import sample_path

pytest.importorskip("torch")

CONFIG = TrainConfig(iterations=3, trajectories=2, sequences=2, seed=3)


def _trained(folder, agent="tvw-rl", vectorised=False, noise=0):
    stores = [sample_path("bitbrains")]
    run_training(
        stores, 0.5, 8, CONFIG, folder, agent=agent, vectorised=vectorised,
        background=noise, jitter=noise,
    )  # fmt: skip
    return folder / POLICY


@pytest.mark.parametrize(
    ("agent", "vectorised", "noise"),
    [("tvw-rl", False, 0), ("tvw-rl", True, 0), ("deeprm", False, 0), ("tvw-rl", True, 1)],
)
def test_every_trainer_retrains_bit_for_bit(tmp_path, agent, vectorised, noise):
    path = _trained(tmp_path / "a", agent, vectorised, noise)
    assert LinearPolicy.load(path).settings["background"] == noise
    full = retrain(path, tmp_path / "b")
    assert full.same_weights and full.same_curve and full.reproduced
    assert full.iterations == full.recorded == 3
    short = retrain(path, tmp_path / "c", iterations=2)
    assert short.same_curve and short.same_weights is None and short.reproduced
    assert short.policy.settings["curve"] == LinearPolicy.load(path).settings["curve"][:2]


def test_other_weights_are_found_out(tmp_path):
    path = _trained(tmp_path / "a")
    policy = LinearPolicy.load(path)
    replace(policy, b2=policy.b2 + np.float32(1e-3)).save(path)
    found = retrain(path, tmp_path / "b")
    assert found.same_curve and found.same_weights is False and not found.reproduced


def _edited(path, edit):
    policy = LinearPolicy.load(path)
    saved = json.loads(json.dumps(policy.settings))
    edit(saved)
    replace(policy, settings=saved).save(path)
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda s: s["stores"][0].update(digest="0" * 16),
            "differ from the recorded one in stores",
        ),
        (lambda s: s["quantisation"].update(max_units=5), "quantisation.max_units"),
        (lambda s: s.pop("stores"), "records no stores"),
        (lambda s: s["stores"][0].update(name="mine"), "'mine', no shipped sample"),
        (lambda s: s["config"].update(warmup=1), "unknown training settings warmup"),
        (lambda s: s.pop("config"), "records no training run"),
        (lambda s: s.update(hold=False), "differ from the recorded one in hold"),
    ],
)
def test_a_run_that_could_not_reproduce_is_refused_before_training(tmp_path, edit, message):
    path = _edited(_trained(tmp_path / "a"), edit)
    with pytest.raises(ReclaimError, match=message):
        retrain(path, tmp_path / "b")
    assert not (tmp_path / "b").exists()


def test_other_data_is_refused_even_when_given(tmp_path):
    path = _trained(tmp_path / "a")
    with pytest.raises(ReclaimError, match="in stores"):
        retrain(path, tmp_path / "b", stores=[sample_path("google2011-derived")])


def test_cli_says_whether_it_reproduced(tmp_path):
    path = _trained(tmp_path / "a")
    done = reclaim("rl", "retrain", str(path), "-o", str(tmp_path / "b"))
    assert done.returncode == 0, done.stderr
    assert "weights identical bit for bit" in done.stdout
    policy = LinearPolicy.load(path)
    replace(policy, w1=policy.w1 * np.float32(2)).save(path)
    done = reclaim("rl", "retrain", str(path), "-o", str(tmp_path / "c"))
    assert done.returncode == 1 and "NOT identical" in done.stdout
    assert "did not reproduce" in done.stderr and "Traceback" not in done.stderr
