"""The environment: Gymnasium's checks, masks, observation and penalties on a hand sequence."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rl_sequences import SEQ, small_env

from reclaim.errors import ReclaimError
from reclaim.rl.env import PlacementEnv, machine_images, make_env
from reclaim.rl.rewards import Weights
from reclaim.tvw.scenario import ScenarioSpec


def test_passes_gymnasium_check_env(bitbrains):
    from gymnasium.utils.env_checker import check_env

    spec = replace(ScenarioSpec(), jobs=20)
    check_env(make_env(pools=[bitbrains], spec=spec), skip_render_check=True)


def test_episode_places_every_workload_and_totals_the_penalties():
    env = small_env()
    obs, info = env.reset(np.random.default_rng(0), SEQ)
    assert obs.shape == (env.obs_size,) and obs.dtype == np.float32
    total, steps, done = 0.0, 0, False
    while not done:
        obs, reward, done, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        total += reward
        steps += 1
        assert obs.min() >= 0.0 and obs.max() <= 1.0 and not truncated
    assert steps == len(SEQ)
    assert total == pytest.approx(-sum(env.totals_.values()))


def test_penalties_on_the_hand_sequence():
    # Workloads 0 (2,1),(3,1) and 1 (1,1) arrive at 0 and share machine 0; 2 (4,4)x2 at step 1
    # goes to machine 1. K_u = 1 keeps the arithmetic short.
    env = small_env(weights=Weights(contention=1.0, underuse=1.0, overshoot=100.0, wait=10.0))
    env.reset(np.random.default_rng(0), SEQ)
    for machine in (0, 0, 1):
        env.step(machine)
    t = env.totals_
    assert t["contention"] == 2 * 1 + 1 * 1  # step 0 only: cpu 2x1, mem 1x1
    # unused: step 0 m0 (8-3)+(8-2); step 1 m0 (8-3)+(8-1), m1 4+4; step 2 m1 4+4
    assert t["underuse"] == 11 + 12 + 8 + 8
    assert t["overshoot"] == 0 and t["wait"] == 0


def test_overshoot_and_wait_are_charged():
    env = small_env(
        units=4, weights=Weights(contention=0.0, underuse=0.0, overshoot=100.0, wait=10.0)
    )
    env.reset(np.random.default_rng(0), SEQ)
    env.step(0)
    env.step(0)  # 0 and 1 on machine 0: cpu 3 then 3; fine at capacity 4
    assert not env.mask()[0] and env.mask()[1]  # workload 2 needs (4, 4): only machine 1 fits
    env.step(1)
    assert env.totals_["overshoot"] == 0


def test_masked_action_holds_the_workload():
    env = small_env(machines=2, units=4)
    env.reset(np.random.default_rng(0), SEQ)
    env.step(0)
    env.step(0)
    assert list(env.mask()) == [False, True]
    env.step(0)  # masked: workload 2 waits a step
    assert env.totals_["wait"] > 0 and not env.replay.done


def test_bad_labels_fail_in_one_line():
    env = small_env(labeler=lambda seq: np.full(len(seq), 3), classes=2)
    with pytest.raises(ReclaimError, match="1..2"):
        env.reset(np.random.default_rng(0), SEQ)


def test_images_stack_residents_in_start_order():
    data = np.array([[2, 1], [1, 3]], np.int16)
    indptr = np.array([0, 1, 2])
    out = np.zeros((1, 2, 1, 4), np.int64)
    machine_images(
        data, indptr, np.array([0, 0]), np.array([0, 0]), np.array([1, 2]), np.array([0, 1]), 0, out
    )
    assert out[0, 0, 0].tolist() == [1, 1, 2, 0]
    assert out[0, 1, 0].tolist() == [1, 2, 2, 2]


def test_env_defaults_are_the_papers():
    env = PlacementEnv()
    assert (env.spec.machines, env.spec.units, env.history) == (10, 8, 20)
    assert env.weights == Weights(0.1, 3.0, 30000.0, 50.0)
    assert ScenarioSpec().jobs == 200
