"""Policies keep the units they learned from: trained settings record the quantisation, ``rl eval``
evaluates in it (the shipped policies: the auto scale), a policy, checkpoint or labeller saved
before it was recorded is read as the legacy one."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rl_sequences import SEQ, small_env

from reclaim.errors import ReclaimError
from reclaim.rl.evaluate import Learned, trained_scenario
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.reinforce import CHECKPOINT, TrainConfig, settings, train
from reclaim.tvw.evaluate import Policy
from reclaim.tvw.scenario import LEGACY_QUANTISATION, ScenarioSpec


def _legacy(path, env: str) -> str:
    """A policy file as they were saved before the quantisation (and the paper's MDP) were
    recorded in its settings."""
    rng = np.random.default_rng(0)
    weights = [rng.normal(size=s).astype(np.float32) for s in ((2, 3), (2,), (4, 2), (4,))]
    old = {"env": env, "machines": 10, "units": 8, "history": 20, "queue_slots": 5, "load": 0.5}
    return str(LinearPolicy(*weights, settings=old | {"iterations": 2000}).save(path))


def test_the_shipped_policies_learned_the_papers_mdp_at_the_auto_scale():
    tvw, deeprm = Learned("tvw-rl"), Learned("deeprm")
    assert tvw.quantisation == deeprm.quantisation == LEGACY_QUANTISATION | {"scale": "auto"}
    ours = LinearPolicy.load(tvw.policy_path).settings
    assert ours["hold"] and ours["queue_images"] and ours["trainer"] == "vector"
    theirs = LinearPolicy.load(deeprm.policy_path).settings
    assert theirs["slot_images"] and theirs["seed"] == ours["seed"] == 0
    assert all(len(s["curve"]) == s["iterations"] for s in (ours, theirs))
    spec = trained_scenario([tvw, deeprm, Policy.parse("best-fit")], ScenarioSpec(jobs=30))
    assert spec.scale == "auto" and spec.jobs == 30


def test_policies_from_before_the_quantisation_are_evaluated_at_the_legacy_peak_scale(tmp_path):
    old = [
        Learned("tvw-rl", _legacy(tmp_path / "tvw.npz", "PlacementEnv")),
        Learned("deeprm", _legacy(tmp_path / "deeprm.npz", "DeepRMEnv")),
    ]
    assert all(p.quantisation == LEGACY_QUANTISATION for p in old)
    spec = trained_scenario([*old, Policy.parse("best-fit")], ScenarioSpec(jobs=30))
    assert spec.scale == "peak" and spec.jobs == 30
    assert ScenarioSpec().scale == "auto"  # what new training uses
    assert trained_scenario([Policy.parse("tetris")], ScenarioSpec()).scale == "auto"


def test_a_trained_policy_records_its_quantisation_and_cannot_share_sequences_with_another(
    tmp_path,
):
    env = small_env()
    assert settings(env)["quantisation"] == env.spec.quantisation
    assert env.spec.quantisation == LEGACY_QUANTISATION | {"scale": "auto", "max_units": 4}
    rng = np.random.default_rng(0)
    shapes = ((4, env.obs_size), (4,), (env.actions, 4), (env.actions,))
    weights = [rng.normal(size=s).astype(np.float32) for s in shapes]
    path = LinearPolicy(*weights, settings=settings(env)).save(tmp_path / "p.npz")
    ours = Learned("tvw-rl", str(path))
    assert trained_scenario([ours], ScenarioSpec(scale="peak")).scale == "auto"
    with pytest.raises(ReclaimError, match="cannot share sequences"):
        trained_scenario(
            [ours, Learned("deeprm", _legacy(tmp_path / "old.npz", "DeepRMEnv"))], ScenarioSpec()
        )


def test_resuming_a_checkpoint_from_before_the_quantisation_reads_it_as_legacy(tmp_path):
    torch = pytest.importorskip("torch")
    # the spec every training had before the quantisation was recorded: ScenarioSpec's defaults
    legacy = replace(small_env(), spec=replace(ScenarioSpec(), machines=3, jobs=3, scale="peak"))
    one = TrainConfig(iterations=1, trajectories=2, sequences=1)
    train(legacy, one, tmp_path, sequences=[SEQ])
    old = torch.load(tmp_path / CHECKPOINT, weights_only=False)
    del old["settings"]["quantisation"]  # as checkpoints were saved before they recorded it
    torch.save(old, tmp_path / CHECKPOINT)
    two = TrainConfig(iterations=2, trajectories=2, sequences=1)
    with pytest.raises(ReclaimError, match=r"other settings \(quantisation.scale\); drop --resume"):
        train(
            replace(legacy, spec=replace(legacy.spec, scale="auto")),
            two,
            tmp_path,
            True,
            None,
            [SEQ],
        )
    policy = train(legacy, two, tmp_path, resume=True, sequences=[SEQ])
    assert policy.settings["iterations"] == 2
    assert policy.settings["quantisation"]["scale"] == "peak"


def test_a_labeller_saved_before_the_scale_rebuilds_on_legacy_units(monkeypatch):
    from reclaim.rl import running_classes

    seen = []

    def capture(stores, spec):
        seen.append(spec)
        raise RuntimeError("enough")

    monkeypatch.setattr(running_classes, "load_pools", capture)
    spec = {k: v for k, v in vars(ScenarioSpec()).items() if k != "scale"}
    saved = {"distance": "temporal", "stores": ["x"], "spec": spec}
    with pytest.raises(RuntimeError, match="enough"):
        running_classes.RunningClasses.rebuild(saved)
    assert seen[0].scale == "peak"
