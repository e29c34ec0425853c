"""The compiled env step against its plain-numpy reference, bit for bit: kernels on random
windows, whole seeded episodes (observations, rewards, masks, penalties, the replay) and a short
seeded training run of TVW-RL's and DeepRM's envs (returns and trained weights)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rl_sequences import episode, sequence, small_env

from reclaim.placement.framework import FIT_TOLERANCE, CycleState, fits
from reclaim.rl import _kernels, rewards
from reclaim.rl.deeprm import DeepRMEnv, ReferenceDeepRMEnv
from reclaim.rl.env import PlacementEnv, ReferencePlacementEnv
from reclaim.rl.reinforce import TrainConfig, train, training_set
from reclaim.rl.rewards import Weights
from reclaim.tvw.scenario import ScenarioSpec


@pytest.mark.parametrize("seed", range(5))
def test_charge_window_counts_what_the_reward_references_sum(seed):
    rng = np.random.default_rng(seed)
    steps, hosts, res, units, n, first = 6, 4, 2, 8, 12, 10
    total = rng.integers(0, 12, (steps, hosts, res)).astype(np.int32)
    residents = rng.integers(0, 3, (steps, hosts)).astype(np.int32)
    squares = rng.integers(0, 20, (steps, hosts, res)) * 2 + (total.astype(np.int64) ** 2 % 2)
    host = rng.integers(-1, hosts, n).astype(np.int32)
    start = np.where(host >= 0, rng.integers(0, 20, n), -1).astype(np.int64)
    length = rng.integers(1, 8, n).astype(np.int64)
    arrival = np.sort(np.where(start >= 0, start - rng.integers(0, 3, n), rng.integers(0, 20, n)))
    start = np.where(start >= 0, np.maximum(start, arrival), -1)
    seen = rng.random((n, res)) < 0.3
    seen_ref = seen.copy()
    cost = np.arange(units + 1, dtype=np.float64) ** 3.0
    pairs, underuse, overs, waiting = _kernels.charge_window(
        total, residents, squares, first, units, host, start, length, seen, arrival, cost
    )
    end = start + length
    assert 0.1 * float(pairs // 2) == rewards.contention(total, squares, 0.1)
    assert underuse == rewards.under_utilisation(total, residents, units, 3.0)
    assert overs == rewards.first_overshoots(total, units, first, host, start, end, seen_ref)
    assert np.array_equal(seen, seen_ref)
    assert waiting == rewards.waiting(arrival, start, first, first + steps)


def test_fit_mask_is_fits_for_one_request():
    rng = np.random.default_rng(0)
    free = rng.integers(-2, 8, (6, 2)).astype(np.float64) - rng.choice([0.0, 1e-7], (6, 2))
    up = rng.random(6) < 0.8
    request = np.array([3, 2], np.float32)
    out = np.zeros(6, bool)
    _kernels.fit_mask(free, up, request, FIT_TOLERANCE, out)
    expect = fits(CycleState(np.full((6, 2), 8.0), free, up, request[None, :]))[0]
    assert out.tolist() == expect.tolist()


CASES = {
    "default": {},
    "high load": {"load": 0.9},
    "peak view": {"view": "peak", "load": 0.7},
    "classes": {"labeler": lambda seq: 1 + np.arange(len(seq)) % 3, "classes": 3},
    "fractional K_u": {"weights": Weights(underuse=2.5), "history": 7, "queue_slots": 3},
    "no hold, demand slots": {"hold": False, "queue_images": False, "load": 0.9},
    "few holds": {"hold_limit": 3, "load": 0.9},
    "noise": {"spec": ScenarioSpec(jobs=60, background=3, jitter=1), "load": 0.7},
    "noise, classes": {
        "spec": ScenarioSpec(jobs=60, background=2),
        "labeler": lambda seq: 1 + np.arange(len(seq)) % 3,
        "classes": 3,
    },
}


@pytest.mark.parametrize("case", CASES)
def test_env_steps_exactly_as_the_reference(bitbrains, case):
    params = {"spec": replace(ScenarioSpec(), jobs=60)} | CASES[case]
    fast = PlacementEnv([bitbrains], **params)
    reference = ReferencePlacementEnv([bitbrains], **params)
    for k, drawn in enumerate(training_set(fast, TrainConfig(sequences=2, seed=7))):
        assert episode(fast, drawn, k) == episode(reference, drawn, k)


@pytest.mark.parametrize(
    "kinds", [(PlacementEnv, ReferencePlacementEnv), (DeepRMEnv, ReferenceDeepRMEnv)]
)
def test_training_gives_the_references_weights_bit_for_bit(bitbrains, tmp_path, kinds):
    pytest.importorskip("torch")
    spec = replace(ScenarioSpec(), jobs=40)
    config = TrainConfig(iterations=3, trajectories=4, sequences=2, seed=3)
    runs = []
    for kind in kinds:
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


def test_observation_sorts_residents_bound_out_of_queue_order():
    # The env binds in queue order (the kernel's fast path); a replay bound otherwise must still
    # stack residents by (start, index), as the reference does.
    seq = sequence([[[1, 1]] * 4, [[2, 1]] * 4, [[1, 2]] * 4, [[2, 2]] * 3], [0, 0, 0, 1])
    labeler = {"labeler": lambda s: np.array([1, 2, 3, 2]), "classes": 3}
    spec = small_env(machines=2).spec
    envs = [kind(spec=spec, history=4, **labeler) for kind in (PlacementEnv, ReferencePlacementEnv)]
    for env in envs:
        env.reset(np.random.default_rng(0), seq)
        env.replay.bind(2, 0)
        env.replay.bind(0, 0)
        env.replay.advance()
        env.replay.bind(3, 0)
        env.replay.bind(1, 0)
    fast, reference = (env.observe() for env in envs)
    assert fast.tobytes() == reference.tobytes()
