"""DeepRM's compiled env step against its numpy reference (``ReferenceDeepRMEnv``), bit for bit:
numpy's summation order and whole seeded episodes on the shipped sample (observations, masks,
rewards, termination, the replay); ``test_rl_kernels.py`` compares a seeded training run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rl_sequences import SEQ, episode

from reclaim.rl._deeprm_kernels import pairwise_sum
from reclaim.rl.deeprm import DeepRMEnv, ReferenceDeepRMEnv
from reclaim.rl.reinforce import TrainConfig, training_set
from reclaim.tvw.scenario import ScenarioSpec


@pytest.mark.parametrize("seed", range(3))
def test_pairwise_sum_adds_in_numpys_order(seed):
    rng = np.random.default_rng(seed)
    for size in [*range(20), 127, 128, 129, 1000, 8191, 8193, 40_000, *rng.integers(1, 9000, 20)]:
        a = rng.random(size) / rng.integers(1, 300, size)
        assert pairwise_sum(a, 0, size) == a.sum()


CASES = {
    "default": {},
    "high load": {"load": 0.9},
    "low load, short history": {"load": 0.3, "history": 7, "queue_slots": 3, "underuse": 2.5},
    "cut off": {"max_decisions": 1},
    "slots as numbers": {"slot_images": False, "load": 0.9},
}


@pytest.mark.parametrize("case", CASES)
def test_env_steps_exactly_as_the_reference(bitbrains, case):
    fast = DeepRMEnv([bitbrains], **CASES[case])
    reference = ReferenceDeepRMEnv([bitbrains], **CASES[case])
    for k, drawn in enumerate(training_set(fast, TrainConfig(sequences=2, seed=7))):
        assert episode(fast, drawn, k) == episode(reference, drawn, k)


def test_hand_sequence_steps_exactly_as_the_reference():
    spec = replace(ScenarioSpec(), machines=2, units=4, jobs=3, max_units=4)
    envs = [kind(spec=spec, history=3, queue_slots=2) for kind in (DeepRMEnv, ReferenceDeepRMEnv)]
    for seed in range(5):
        fast, reference = (episode(env, SEQ, seed) for env in envs)
        assert fast == reference
