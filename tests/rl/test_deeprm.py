"""DeepRM + Best-Fit: its environment on the hand sequence, masks, rewards and the placer."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rl_sequences import SEQ

from reclaim.errors import ReclaimError
from reclaim.placement.framework import Placer
from reclaim.rl.deeprm import DeepRMEnv, run_deeprm
from reclaim.rl.policy import LinearPolicy
from reclaim.tvw.scenario import ScenarioSpec


def _env(machines=2, units=4) -> DeepRMEnv:
    spec = replace(ScenarioSpec(), machines=machines, units=units, jobs=3, max_units=4)
    return DeepRMEnv(spec=spec, history=3, queue_slots=2)


def test_slots_are_masked_when_nothing_fits_and_hold_is_always_allowed():
    env = _env()
    obs, info = env.reset(np.random.default_rng(0), SEQ)
    assert obs.shape == (env.obs_size,) and list(info["action_mask"]) == [True, True, True]
    env.step(0)  # workload 0 (peak 3, 1) by Best-Fit
    obs, reward, done, truncated, info = env.step(0)  # workload 1 (1, 1) joins it
    assert (env.replay.host_[:2] == 0).all()
    # Workload 2 (peak 4, 4) arrives at step 1: the clock ran to it without a decision.
    assert env.replay.now == 1 and list(info["action_mask"]) == [True, False, True]
    assert reward < 0 and not done


def test_penalties_are_slowdown_and_unreserved_units():
    env = _env()
    env.reset(np.random.default_rng(0), SEQ)
    # Hold at step 0: the clock runs to step 1 (workload 2 arrives). Step 0 had workloads 0 and 1
    # (durations 2 and 1) waiting and all 8 units of each resource unreserved.
    _, reward, *_ = env.step(2)
    assert env.replay.now == 1
    assert reward == pytest.approx(-((1 / 2 + 1 / 1) + 1.0 * (8 / 8 + 8 / 8)))


def test_selector_never_picks_a_masked_slot_and_places_everything(tmp_path):
    env = _env()
    rng = np.random.default_rng(0)
    weights = [
        rng.normal(size=s).astype(np.float32)
        for s in ((20, env.obs_size), (20,), (env.actions, 20), (env.actions,))
    ]
    path = LinearPolicy(*weights, settings={}).save(tmp_path / "d.npz")
    placer = Placer.from_config([{"name": "deeprm", "params": {"path": str(path)}}])
    selector = placer.plugins[0].plugin
    chosen = []
    original = selector.select

    def checked(obs, mask):
        action = original(obs, mask)
        assert mask[action]
        chosen.append(action)
        return action

    selector.select = checked
    result = run_deeprm(SEQ, placer, env)
    assert (result.host >= 0).all() and chosen
    assert (result.usage <= 4).all()  # peaks as requests: never over-committed


def test_run_deeprm_needs_the_selector():
    with pytest.raises(ReclaimError, match="deeprm plugin"):
        run_deeprm(SEQ, Placer.from_config([{"name": "best-fit"}]), _env())


def test_job_slots_are_images_of_the_request_over_the_duration():
    env = _env()  # h = 3, 2 slots, 2 machines of 4 units
    obs, _ = env.reset(np.random.default_rng(0), SEQ)
    cluster = 2 * 3 * 2 * 4
    slots = obs[cluster:-1].reshape(2, 2, 3, 4)
    # slot 0: workload 0, peak (3, 1) for 2 steps; slot 1: workload 1, (1, 1) for 1 step
    assert slots[0, 0].sum(axis=1).tolist() == [3, 3, 0]
    assert slots[0, 1].sum(axis=1).tolist() == [1, 1, 0]
    assert slots[1, 0].sum(axis=1).tolist() == [1, 0, 0]
    assert replace(env, slot_images=False).obs_size == cluster + 2 * 3 + 1
