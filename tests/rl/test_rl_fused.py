"""The compact observation and the fused first layer: the levels stand for the dense
observation exactly, and the forward pass and gradients agree with the dense ones (torch)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from reclaim.errors import ReclaimError
from reclaim.rl import fused
from reclaim.rl.env import PlacementEnv
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.reinforce import TrainConfig, training_set
from reclaim.rl.vector import VectorEnv, act
from reclaim.tvw.scenario import ScenarioSpec


def _policy(env, seed=0) -> LinearPolicy:
    rng = np.random.default_rng(seed)
    shapes = ((20, env.obs_size), (20,), (env.actions, 20), (env.actions,))
    return LinearPolicy(*(rng.normal(size=s).astype(np.float32) for s in shapes), settings={})


@pytest.fixture(scope="module", params=[0, 3], ids=["quiet", "background noise"])
def setting(bitbrains, request):
    spec = replace(ScenarioSpec(), jobs=30, background=request.param)
    env = PlacementEnv([bitbrains], spec=spec, load=0.8)
    return env, training_set(env, TrainConfig(sequences=2, seed=2))


def test_compact_levels_are_the_dense_observation(setting):
    env, sequences = setting
    assign = np.array([0, 1, 0])
    dense_env, compact_env = (
        VectorEnv(env, sequences, assign),
        VectorEnv(env, sequences, assign, compact=True),
    )
    obs, mask = dense_env.reset()
    compact_env.reset()
    rng, policy, steps = np.random.default_rng(0), _policy(env), 0
    while not dense_env.ended.all():
        rebuilt = fused.dense(compact_env.levels, compact_env.tail, 1.0, env.spec.units)
        live = ~dense_env.ended
        assert rebuilt[live].tobytes() == obs[live].tobytes()
        a = act(policy, obs, mask, rng)
        obs, reward, *_, mask = dense_env.step(a)
        _, compact_reward, *_ = compact_env.step(a)
        assert reward.tobytes() == compact_reward.tobytes()
        steps += 1
    assert steps > 30


def test_forward_and_gradients_agree_with_the_dense_network(setting):
    torch = pytest.importorskip("torch")
    env, sequences = setting
    vec = VectorEnv(env, sequences, np.array([0, 1]), compact=True)
    vec.reset()
    for _ in range(40):  # a state with residents and a queue
        vec.step(np.zeros(2, np.int64))
    policy = _policy(env, 1)
    rows = vec.levels.shape[1]
    table = fused.prefix(policy, rows, env.spec.units)
    pre, logits = fused.forward(policy, table, vec.levels, vec.tail, 1.0)
    x = fused.dense(vec.levels, vec.tail, 1.0, env.spec.units)
    assert np.allclose(logits, policy.logits(x), rtol=1e-4, atol=1e-3)
    # gradients of sum(c * logits) against torch's autograd on the dense observation
    c = np.random.default_rng(3).normal(size=logits.shape)
    grads = fused.gradients(policy, vec.levels, vec.tail, 1.0, pre, c, env.spec.units)
    params = {k: torch.tensor(getattr(policy, k), dtype=torch.float64, requires_grad=True)
              for k in ("w1", "b1", "w2", "b2")}  # fmt: skip
    xt = torch.tensor(x, dtype=torch.float64)
    out = torch.relu(xt @ params["w1"].T + params["b1"]) @ params["w2"].T + params["b2"]
    (out * torch.tensor(c)).sum().backward()
    for k, g in grads.items():
        assert np.allclose(g, params[k].grad.numpy(), rtol=1e-4, atol=1e-3), k


def test_compact_needs_one_label_and_queue_images(setting):
    env, sequences = setting
    with pytest.raises(ReclaimError, match="one label"):
        VectorEnv(replace(env, queue_images=False), sequences, compact=True)
    labelled = replace(env, labeler=lambda s: 1 + np.arange(len(s)) % 2, classes=2)
    with pytest.raises(ReclaimError, match="one label"):
        VectorEnv(labelled, sequences, compact=True)
