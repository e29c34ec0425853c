"""DeepRM's compiled env step against its numpy reference (``deeprm_reference.py``), bit for bit:
numpy's summation order, whole seeded episodes on the shipped sample (observations, masks,
rewards, termination, the replay) and a short seeded training run (returns and weights)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from deeprm_reference import ReferenceDeepRMEnv
from rl_sequences import SEQ

from reclaim.rl._deeprm_kernels import pairwise_sum
from reclaim.rl.deeprm import DeepRMEnv
from reclaim.rl.reinforce import TrainConfig, train, training_set
from reclaim.tvw.scenario import ScenarioSpec


@pytest.mark.parametrize("seed", range(3))
def test_pairwise_sum_adds_in_numpys_order(seed):
    rng = np.random.default_rng(seed)
    for size in [*range(20), 127, 128, 129, 1000, 8191, 8193, 40_000, *rng.integers(1, 9000, 20)]:
        a = rng.random(size) / rng.integers(1, 300, size)
        assert pairwise_sum(a, 0, size) == a.sum()


def _episode(env, sequence, seed):
    """Everything an episode shows, with random actions (30 % of them possibly masked or hold)."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(rng, sequence)
    seen = [obs.tobytes(), info["action_mask"].tobytes()]
    done = False
    while not done:
        if rng.random() < 0.3:
            action = int(rng.integers(env.actions))
        else:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
        seen += [obs.tobytes(), info["action_mask"].tobytes(), reward, terminated, truncated]
        done = terminated or truncated
    seen += [env.replay.host_.tolist(), env.replay.start_.tolist(), env.replay.now]
    return seen


CASES = {
    "default": {},
    "high load": {"load": 0.9},
    "low load, short history": {"load": 0.3, "history": 7, "queue_slots": 3, "underuse": 2.5},
    "cut off": {"max_decisions": 1},
}


@pytest.mark.parametrize("case", CASES)
def test_env_steps_exactly_as_the_reference(bitbrains, case):
    fast = DeepRMEnv([bitbrains], **CASES[case])
    reference = ReferenceDeepRMEnv([bitbrains], **CASES[case])
    for k, drawn in enumerate(training_set(fast, TrainConfig(sequences=2, seed=7))):
        assert _episode(fast, drawn, k) == _episode(reference, drawn, k)


def test_hand_sequence_steps_exactly_as_the_reference():
    spec = replace(ScenarioSpec(), machines=2, units=4, jobs=3, max_units=4)
    envs = [kind(spec=spec, history=3, queue_slots=2) for kind in (DeepRMEnv, ReferenceDeepRMEnv)]
    for seed in range(5):
        fast, reference = (_episode(env, SEQ, seed) for env in envs)
        assert fast == reference


def test_training_gives_the_references_weights_bit_for_bit(bitbrains, tmp_path):
    pytest.importorskip("torch")
    spec = replace(ScenarioSpec(), jobs=40)
    config = TrainConfig(iterations=2, trajectories=4, sequences=2, seed=3)
    runs = []
    for kind in (DeepRMEnv, ReferenceDeepRMEnv):
        returns = []
        policy = train(
            kind([bitbrains], spec=spec),
            config,
            tmp_path / kind.__name__,
            on_iteration=lambda i, r, returns=returns: returns.append(r),
        )
        runs.append((returns, policy))
    (fast, fast_policy), (ref, ref_policy) = runs
    assert fast == ref
    for name in ("w1", "b1", "w2", "b2"):
        assert getattr(fast_policy, name).tobytes() == getattr(ref_policy, name).tobytes()
