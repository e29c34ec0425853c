"""The environment: Gymnasium's checks, masks, observation and penalties on a hand sequence."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rl_sequences import SEQ, sequence, small_env

from reclaim.errors import ReclaimError
from reclaim.rl.env import PlacementEnv, machine_images, make_env
from reclaim.rl.rewards import Weights
from reclaim.tvw._kernels import background_units
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
    assert list(env.mask()) == [False, True, True]  # machines, then the hold action
    env.step(0)  # masked: workload 2 waits a step
    assert env.totals_["wait"] > 0 and not env.replay.done


def test_hold_advances_the_clock_and_charges_k_w_per_waiting_workload():
    weights = Weights(contention=0.0, underuse=0.0, overshoot=0.0, wait=10.0)
    env = small_env(weights=weights)
    assert env.actions == 4
    env.reset(np.random.default_rng(0), SEQ)
    assert env.mask()[-1] and env.replay.now == 0 and len(env.replay.queue) == 2
    _, reward, done, truncated, info = env.step(env.actions - 1)  # hold: 0 and 1 wait step 0
    assert env.replay.now == 1 and not done and not truncated
    assert reward == -20.0 and info["wait"] == 20.0
    assert env.replay.host_.tolist() == [-1, -1, -1]
    _, reward, *_ = env.step(env.actions - 1)  # step 1: workloads 0, 1 and 2 wait
    assert reward == -30.0 and env.totals_["wait"] == 50.0


def test_holds_are_limited_and_masked_once_spent():
    env = small_env(hold_limit=1)
    env.reset(np.random.default_rng(0), SEQ)
    env.step(env.actions - 1)
    assert not env.mask()[-1] and env.mask()[:-1].any()
    *_, truncated, _ = env.step(env.actions - 1)  # a masked hold past the limit: cut off
    assert truncated


def test_subject_is_the_first_waiting_workload_that_fits():
    # Workload 0 (4, 4) runs three steps on the single machine of 5 units; 1 (4, 4) cannot start
    # beside it, 2 (1, 1) arriving with 1 can: it is the subject, passing 1 (the queue
    # discipline of every placer).
    seq = sequence([[[4, 4]] * 3, [[4, 4]] * 2, [[1, 1]]], [0, 1, 1])
    env = small_env(machines=1, units=5)
    env.reset(np.random.default_rng(0), seq)
    assert env.subject() == 0
    env.step(0)
    assert env.replay.now == 1 and env.replay.queue == [1, 2]
    assert env.subject() == 2 and env.slots() == [2, 1]
    env.step(0)
    assert env.replay.host_.tolist() == [0, -1, 0]


def test_queue_slots_show_each_workloads_usage_profile():
    env = small_env()  # h = 4
    obs, _ = env.reset(np.random.default_rng(0), SEQ)
    images = env.spec.machines * 2 * 4 * 8
    slots = obs[images:-1].reshape(env.queue_slots, 2, 4, 8)
    # slot 0: workload 0, cpu 2 then 3 units, mem 1 then 1; slot 1: workload 1, (1, 1) one step
    assert slots[0, 0].sum(axis=1).tolist() == [2, 3, 0, 0]
    assert slots[0, 1].sum(axis=1).tolist() == [1, 1, 0, 0]
    assert slots[1, 0].sum(axis=1).tolist() == [1, 0, 0, 0]
    assert not slots[2:].any()
    legacy = small_env(hold=False, queue_images=False)
    assert legacy.actions == 3 and legacy.obs_size == images + env.queue_slots * 3 + 1


def test_bad_labels_fail_in_one_line():
    env = small_env(labeler=lambda seq: np.full(len(seq), 3), classes=2)
    with pytest.raises(ReclaimError, match="1..2"):
        env.reset(np.random.default_rng(0), SEQ)


def test_images_stack_residents_in_start_order():
    data = np.array([[2, 1], [1, 3]], np.int16)
    indptr = np.array([0, 1, 2])
    out = np.zeros((1, 2, 1, 4), np.int64)
    placed = (np.array([0, 0]), np.array([0, 0]), np.array([1, 2]), np.array([0, 1]))
    machine_images(data, indptr, *placed, 0, 0, 0, out)
    assert out[0, 0, 0].tolist() == [1, 1, 2, 0]
    assert out[0, 1, 0].tolist() == [1, 2, 2, 2]
    # a background process lies below the residents, as class 1
    out[:] = 0
    machine_images(data, indptr, *placed, 0, 7, 3, out)
    below = [background_units(7, 0, 0, r, 3) for r in range(2)]
    assert out[0, 0, 0].tolist() == ([1] * below[0] + [1, 1, 2, 0])[:4]
    assert out[0, 1, 0].tolist() == ([1] * below[1] + [1, 2, 2, 2])[:4]


def test_env_defaults_are_the_papers():
    env = PlacementEnv()
    assert (env.spec.machines, env.spec.units, env.history) == (10, 8, 20)
    assert env.weights == Weights(0.1, 3.0, 30000.0, 50.0)
    assert ScenarioSpec().jobs == 200
