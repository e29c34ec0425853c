"""REINFORCE on the vectorised env: seeded runs repeat bit for bit, a resumed run equals an
uninterrupted one, and the rollout's returns are the env's."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from reclaim.errors import ReclaimError
from reclaim.rl.env import PlacementEnv
from reclaim.rl.evaluate import Learned
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.reinforce import TrainConfig, training_set
from reclaim.rl.vector_train import VectorConfig, rollout, train_vectorised
from reclaim.tvw.scenario import ScenarioSpec

pytest.importorskip("torch")


def _env(bitbrains) -> PlacementEnv:
    return PlacementEnv([bitbrains], spec=replace(ScenarioSpec(), jobs=20))


CONFIG = VectorConfig(iterations=3, trajectories=3, sequences=3, batch_sequences=2, seed=4)


def _weights(policy: LinearPolicy) -> list[bytes]:
    return [getattr(policy, k).tobytes() for k in ("w1", "b1", "w2", "b2")]


def test_seeded_runs_repeat_and_resume_exactly(bitbrains, tmp_path):
    env = _env(bitbrains)
    curves = [[], []]
    one = train_vectorised(
        env, CONFIG, tmp_path / "a", on_iteration=lambda i, r: curves[0].append(r)
    )
    two = train_vectorised(
        env, CONFIG, tmp_path / "b", on_iteration=lambda i, r: curves[1].append(r)
    )
    assert _weights(one) == _weights(two) and curves[0] == curves[1] and len(curves[0]) == 3
    assert (
        one.settings["curve"] == curves[0]
        and one.settings["history"] == env.history
        and one.settings["seed"] == 4
    )
    assert one.w2.shape[0] == env.actions  # machines and hold
    short = replace(CONFIG, iterations=2, checkpoint_every=1)
    train_vectorised(env, short, tmp_path / "c")
    resumed = train_vectorised(env, replace(CONFIG, checkpoint_every=1), tmp_path / "c", True)
    assert _weights(resumed) == _weights(one)
    with pytest.raises(ReclaimError, match="other settings"):
        train_vectorised(env, replace(CONFIG, lr=0.01), tmp_path / "c", resume=True)
    # the saved policy evaluates as any other (its settings rebuild its environment)
    drawn = training_set(env, TrainConfig(sequences=1, seed=9))[0]
    result = Learned("tvw-rl", str(tmp_path / "a" / "policy.npz")).run(drawn, env.spec)
    assert (result.host >= 0).all()


def test_rollout_returns_are_the_single_envs(bitbrains):
    env = _env(bitbrains)
    sequences = training_set(env, TrainConfig(sequences=2, seed=1))
    rng = np.random.default_rng(0)
    shapes = ((20, env.obs_size), (20,), (env.actions, 20), (env.actions,))
    policy = LinearPolicy(*(rng.normal(size=s).astype(np.float32) for s in shapes), settings={})
    obs, masks, actions, rewards, alive = rollout(env, sequences, 2, policy, rng)
    assert obs.shape[1:] == (4, env.obs_size) and alive[0].all()
    for b in range(4):
        single = replace(env)
        single.reset(rng, sequences[b // 2])
        steps = np.flatnonzero(alive[:, b])
        got = [single.step(int(actions[t, b]))[1] for t in steps]
        assert single.replay.done and got == rewards[steps, b].tolist()


def test_bad_settings_fail_in_one_line():
    with pytest.raises(ReclaimError, match="per_iteration"):
        VectorConfig(sequences=3, per_iteration=4).check()
    with pytest.raises(ReclaimError, match="batch_sequences"):
        VectorConfig(batch_sequences=0).check()


def test_fused_gradient_is_the_dense_loss_gradient(bitbrains):
    torch = pytest.importorskip("torch")
    from reclaim.rl import fused
    from reclaim.rl.policy import network
    from reclaim.rl.reinforce import loss_of
    from reclaim.rl.vector_train import dlogits_of, rollout_compact

    env = _env(bitbrains)
    sequences = training_set(env, TrainConfig(sequences=1, seed=6))
    torch.manual_seed(0)
    net = network(env.obs_size, env.actions).double()
    policy = LinearPolicy.from_network(net, {})
    levels, tails, pres, masks, actions, rewards, alive, value = rollout_compact(
        env, sequences, 4, policy, np.random.default_rng(0)
    )
    steps, batch, rows = levels.shape
    obs = fused.dense(levels.reshape(-1, rows), tails.reshape(-1), value, env.spec.units)
    obs = torch.from_numpy(obs.astype(np.float64)).reshape(steps, batch, -1)
    tensors = (torch.from_numpy(x) for x in (masks, actions, rewards, alive))
    loss_of(net, obs, *tensors).backward()
    logits = np.maximum(pres, 0.0) @ policy.w2.T + policy.b2
    dl = dlogits_of(logits, masks, actions, rewards, alive)
    grads = fused.gradients(
        policy, levels.reshape(-1, rows), tails.reshape(-1), value, pres.reshape(-1, 20),
        dl.reshape(-1, env.actions), env.spec.units,
    )  # fmt: skip
    layers = {"w1": net[0].weight, "b1": net[0].bias, "w2": net[2].weight, "b2": net[2].bias}
    for name, param in layers.items():
        expect = param.grad.numpy()
        assert np.allclose(grads[name], expect, rtol=1e-3, atol=1e-6 * abs(expect).max()), name


def test_fused_training_repeats_and_resumes(bitbrains, tmp_path):
    env = _env(bitbrains)
    config = replace(CONFIG, fused=True)
    one = train_vectorised(env, config, tmp_path / "a")
    two = train_vectorised(env, config, tmp_path / "b")
    assert _weights(one) == _weights(two)
    train_vectorised(env, replace(config, iterations=2, checkpoint_every=1), tmp_path / "c")
    resumed = train_vectorised(env, replace(config, checkpoint_every=1), tmp_path / "c", True)
    assert _weights(resumed) == _weights(one)
    assert _weights(one) != _weights(train_vectorised(env, CONFIG, tmp_path / "d"))
    # the numba threads share the episodes and the first layer's rows: the same weights
    for threads in (1, 2):
        spread = train_vectorised(env, config, tmp_path / f"t{threads}", threads=threads)
        assert _weights(spread) == _weights(one)
