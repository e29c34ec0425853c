"""The vectorised env: every episode exactly the single env's (observations, masks, rewards,
ends, placements) under the same actions, and the batched policy."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rl_sequences import SEQ, small_env

from reclaim.errors import ReclaimError
from reclaim.rl.env import PlacementEnv
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.reinforce import TrainConfig, training_set
from reclaim.rl.rewards import Weights
from reclaim.rl.vector import VectorEnv, act
from reclaim.tvw.scenario import ScenarioSpec


def _lockstep(env, sequences, assign, seed, explore=0.3):
    """Step a VectorEnv and one single env per episode with the same random actions; assert
    every output equal, bit for bit."""
    rng = np.random.default_rng(seed)
    vec = VectorEnv(env, sequences, assign)
    singles = [replace(env) for _ in assign]
    obs, mask = vec.reset()
    infos = []
    for b, (single, s) in enumerate(zip(singles, assign, strict=True)):
        o, info = single.reset(rng, sequences[s])
        assert o.tobytes() == obs[b].tobytes() and info["action_mask"].tolist() == mask[b].tolist()
        infos.append(info)
    ended = np.zeros(len(assign), bool)
    steps = 0
    while not ended.all():
        actions = np.zeros(len(assign), np.int64)
        for b in range(len(assign)):
            if ended[b]:
                continue
            if rng.random() < explore:
                actions[b] = rng.integers(env.actions)
            else:
                actions[b] = rng.choice(np.flatnonzero(infos[b]["action_mask"]))
        obs, reward, done, truncated, mask = vec.step(actions)
        for b, single in enumerate(singles):
            if ended[b]:
                assert reward[b] == 0.0
                continue
            o, r, d, t, info = single.step(int(actions[b]))
            assert o.tobytes() == obs[b].tobytes(), (b, steps)
            assert info["action_mask"].tolist() == mask[b].tolist()
            assert np.float64(r).tobytes() == np.float64(reward[b]).tobytes(), (r, reward[b])
            assert (d, t) == (bool(done[b]), bool(truncated[b]))
            infos[b] = info
            ended[b] = d or t
        steps += 1
    for b, single in enumerate(singles):
        assert vec.host(b).tolist() == single.replay.host_.tolist()
        assert vec.start(b).tolist() == single.replay.start_.tolist()
    return steps


CASES = {
    "default": {},
    "high load": {"load": 0.9},
    "demand slots, no hold": {"hold": False, "queue_images": False},
    "classes by age": {
        "labeler": lambda seq: 1 + (np.arange(len(seq))[:, None] + np.arange(4)) % 3,
        "classes": 3,
    },
    "few holds, short history": {"hold_limit": 2, "history": 7, "queue_slots": 3},
    "noise": {"spec": ScenarioSpec(jobs=40, background=3, jitter=1)},
    "noise, classes by age": {
        "spec": ScenarioSpec(jobs=40, background=2),
        "labeler": lambda seq: 1 + (np.arange(len(seq))[:, None] + np.arange(4)) % 3,
        "classes": 3,
    },
    "noise, one label not 1": {
        "spec": ScenarioSpec(jobs=40, background=2),
        "labeler": lambda seq: np.full(len(seq), 2),
        "classes": 3,
    },
}


@pytest.mark.parametrize("case", CASES)
def test_vector_episodes_are_the_single_envs_bit_for_bit(bitbrains, case):
    env = PlacementEnv([bitbrains], **{"spec": replace(ScenarioSpec(), jobs=40)} | CASES[case])
    sequences = training_set(env, TrainConfig(sequences=2, seed=5))
    assert _lockstep(env, sequences, np.array([0, 1, 1, 0]), seed=3) > 40


def test_hand_sequence_with_penalties():
    env = small_env(weights=Weights(contention=1.0, underuse=1.0, overshoot=100.0, wait=10.0))
    _lockstep(env, [SEQ], np.array([0, 0, 0]), seed=1, explore=0.5)


def _random_policy(env, seed: int, scale: float = 1.0) -> LinearPolicy:
    """A policy of normal random weights (times ``scale``) shaped for ``env``."""
    rng = np.random.default_rng(seed)
    shapes = ((20, env.obs_size), (20,), (env.actions, 20), (env.actions,))
    return LinearPolicy(
        *(rng.normal(size=s).astype(np.float32) * scale for s in shapes), settings={}
    )


def _rollout(vec, policy) -> list:
    """Observations, rewards and masks of ``vec``'s episodes under ``policy`` (sampling seeded)."""
    rng = np.random.default_rng(7)
    obs, mask = vec.reset()
    out = [obs.copy(), mask.copy()]
    while not vec.ended.all():
        obs, reward, _, _, mask = vec.step(act(policy, obs, mask, rng))
        out += [obs.copy(), reward.copy(), mask.copy()]
    return out


def test_a_reset_replays_as_a_fresh_env(bitbrains):
    """reset clears only the steps an episode wrote: the second run equals a fresh env's."""
    env = PlacementEnv([bitbrains], spec=replace(ScenarioSpec(), jobs=40))
    sequences = training_set(env, TrainConfig(sequences=2, seed=5))
    policy = _random_policy(env, seed=0)
    used = VectorEnv(env, sequences, np.array([0, 1, 1]))
    runs = []
    for vec in (used, used, VectorEnv(env, sequences, np.array([0, 1, 1]))):
        runs.append(_rollout(vec, policy))
    for run in runs[1:]:
        assert len(run) == len(runs[0])
        assert all(np.array_equal(x, y) for x, y in zip(runs[0], run, strict=True))


def test_an_env_taking_over_a_spent_one_replays_as_a_fresh_env(bitbrains):
    """reuse: the arrays of an env done with (longer, other sequences) serve a new one, whose
    episodes are a fresh env's bit for bit."""
    env = PlacementEnv([bitbrains], spec=replace(ScenarioSpec(), jobs=40))
    sequences = training_set(env, TrainConfig(sequences=4, seed=5))
    policy = _random_policy(env, seed=0)

    def run(vec):
        return _rollout(vec, policy) + [vec.host(b) for b in range(vec.episodes)]

    spent = VectorEnv(env, sequences, np.array([0, 1, 3]))  # its steps: the longest of all four
    run(spent)
    taken = VectorEnv(env, sequences[2:], np.array([1, 0, 0]), reuse=spent)
    assert "_usage" not in spent.__dict__  # taken over
    fresh = VectorEnv(env, sequences[2:], np.array([1, 0, 0]))
    one, two = run(taken), run(fresh)
    assert len(one) == len(two)
    assert all(np.array_equal(x, y) for x, y in zip(one, two, strict=True))


@pytest.mark.parametrize("compact", [False, True])
def test_threads_step_the_same_episodes(bitbrains, compact):
    """Episodes shared among numba threads: the same observations, masks, rewards, ends and
    placements, bit for bit, as one thread's (and the fused first layer the same logits)."""
    from reclaim.rl import fused

    env = PlacementEnv([bitbrains], spec=replace(ScenarioSpec(), jobs=40), load=0.9)
    sequences = training_set(env, TrainConfig(sequences=3, seed=2))
    policy = _random_policy(env, seed=1, scale=0.1)
    runs = []
    for threads in (1, 2):
        vec = VectorEnv(
            env, sequences, np.repeat(np.arange(3), 5), compact=compact, threads=threads
        )
        rng = np.random.default_rng(4)
        obs, mask = vec.reset()
        out = [obs.copy(), mask.copy(), vec.levels.copy()]
        while not vec.ended.all():
            if compact:
                table = fused.prefix(policy, vec.levels.shape[1], env.spec.units)
                live = ~vec.ended
                pre, logits = fused.forward(policy, table, vec.levels, vec.tail, vec.value, live,
                                            threads)  # fmt: skip
                actions = np.where(live, logits.argmax(axis=1), 0)
                out.append(pre[live])
            else:
                actions = act(policy, obs, mask, rng)
            obs, reward, done, truncated, mask = vec.step(actions)
            out += [obs.copy(), reward.copy(), done.copy(), truncated.copy(), mask.copy()]
            out.append(vec.levels.copy())
        out += [vec.host(b) for b in range(vec.episodes)]
        runs.append(out)
    assert len(runs[0]) == len(runs[1])
    assert all(np.array_equal(x, y) for x, y in zip(*runs, strict=True))


def test_what_it_cannot_replay_fails_in_one_line(bitbrains):
    with pytest.raises(ReclaimError, match="current view"):
        VectorEnv(small_env(view="peak"), [SEQ])
    with pytest.raises(ReclaimError, match="integral K_u"):
        VectorEnv(small_env(weights=Weights(underuse=2.5)), [SEQ])
    with pytest.raises(ReclaimError, match="at most 64 machines"):
        VectorEnv(small_env(machines=65), [SEQ])
    vec = VectorEnv(small_env(), [SEQ])
    vec.reset()
    with pytest.raises(ReclaimError, match="need 1 actions"):
        vec.step(np.zeros(2, np.int64))


def test_batched_policy_acts_as_the_policy_row_by_row():
    rng = np.random.default_rng(0)
    shapes = ((20, 12), (20,), (5, 20), (5,))
    policy = LinearPolicy(*(rng.normal(size=s).astype(np.float32) for s in shapes), settings={})
    obs = rng.random((64, 12)).astype(np.float32)
    mask = rng.random((64, 5)) < 0.5
    mask[:, 2] |= ~mask.any(axis=1)
    greedy = act(policy, obs, mask)
    assert greedy.tolist() == policy.act(obs, mask).tolist()
    sampled = act(policy, obs, mask, np.random.default_rng(1))
    assert mask[np.arange(64), sampled].all()
