"""REINFORCE at the paper's volume on the vectorised environment (``rl.vector``).

Each iteration replays ``per_iteration`` training sequences (default: all of them, as DeepRM's
trainer does) with ``trajectories`` episodes each, in batches of ``batch_sequences`` sequences
stepped together by one :class:`~reclaim.rl.vector.VectorEnv`, the policy sampled for all of
their episodes with one batched product per step (``rl.vector.act``, numpy). Per sequence the loss
is ``rl.reinforce.loss_of``'s (DeepRM's time baseline over the sequence's trajectories, advantages
scaled by their standard deviation); the iteration's loss is the mean over its sequences, its
gradient accumulated batch by batch (a batch's observations are kept for the backward pass, about
19 MB per 1,000 decisions), then one Adam step. With ``fused`` (one class, queue images) the
rollout keeps compact observations (600 bytes a decision) and the gradient is computed in numpy
and numba (``rl.fused``, :func:`dlogits_of`: ``loss_of``'s gradient), torch's Adam applying it;
each batch's VectorEnv takes over the last one's arrays (``VectorEnv(reuse=)``), and ``threads``
numba threads step the environments and the first layer (the same results with any number).

Randomness: the network's initialisation from ``seed`` (torch), the actions of batch k of
iteration i from numpy's generator (seed, i, k); a resumed run continues exactly as an
uninterrupted one would. Checkpoints as ``rl.reinforce`` writes them, the settings marked
``trainer: vector`` (so neither trainer resumes the other's checkpoint).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from reclaim.errors import ReclaimError
from reclaim.rl import fused
from reclaim.rl.env import PlacementEnv, require
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.reinforce import (
    POLICY,
    TrainConfig,
    loss_of,
    run_record,
    save_checkpoint,
    settings,
    start_training,
    training_set,
)
from reclaim.rl.vector import VectorEnv, act, sample


@dataclass(frozen=True)
class VectorConfig:
    """``iterations`` of ``per_iteration`` sequences (None: all ``sequences``) x ``trajectories``
    episodes; ``batch_sequences`` sequences stepped together (memory); Adam's ``lr``."""

    iterations: int = 2000
    trajectories: int = 20
    sequences: int = 100
    per_iteration: int | None = None
    batch_sequences: int = 5
    lr: float = 1e-3
    seed: int = 0
    checkpoint_every: int = 10
    fused: bool = False  # the compact observation and fused first layer (rl.fused)

    def check(self) -> VectorConfig:
        for name in ("iterations", "trajectories", "sequences", "batch_sequences"):
            if getattr(self, name) < 1:
                raise ReclaimError(f"{name} must be at least 1")
        if self.checkpoint_every < 1:
            raise ReclaimError("checkpoint_every must be at least 1")
        if self.per_iteration is not None and not 1 <= self.per_iteration <= self.sequences:
            raise ReclaimError("per_iteration must lie in 1..sequences")
        if not self.lr > 0:
            raise ReclaimError("lr must be above 0")
        return self


def rollout(
    env: PlacementEnv, sequences: list, trajectories: int, policy: LinearPolicy, rng,
    threads: int = 1,
):  # fmt: skip
    """``trajectories`` episodes of each of ``sequences`` in one VectorEnv (stepped on
    ``threads`` threads), actions sampled from ``policy``; returns observations (T, B, D), masks
    (T, B, A), actions (T, B), rewards (T, B) and alive (T, B) as numpy arrays, episode b =
    sequence b // trajectories."""
    assign = np.repeat(np.arange(len(sequences)), trajectories)
    vec = VectorEnv(env, sequences, assign, threads=threads)
    obs, mask = vec.reset()
    observations, masks, actions, rewards, alive = [], [], [], [], []
    while not vec.ended.all():
        live = ~vec.ended
        a = act(policy, obs, mask, rng)
        observations.append(obs.copy())
        masks.append(np.where(live[:, None], mask, True))  # ended rows: any action, weight 0
        actions.append(a)
        alive.append(live)
        obs, reward, _, _, mask = vec.step(a)
        rewards.append(reward.copy())
    return tuple(np.stack(x) for x in (observations, masks, actions, rewards, alive))


def rollout_compact(
    env, sequences: list, trajectories: int, policy: LinearPolicy, rng, threads: int = 1,
    vec: VectorEnv | None = None,
):  # fmt: skip
    """:func:`rollout` on compact observations (``rl.fused``): returns levels (T, B, rows) int8,
    backlog (T, B), pre-activations (T, B, hidden), masks, actions, rewards and alive. The
    pre-activations of episodes already ended are not computed (``fused.forward``'s ``live``).
    ``vec``: the compact VectorEnv of these episodes to step (:func:`episodes`; default a new
    one)."""
    vec = episodes(env, sequences, trajectories, threads) if vec is None else vec
    _, mask = vec.reset()
    table = fused.prefix(policy, vec.levels.shape[1], env.spec.units)
    value = vec.value
    levels, tails, pres, masks, actions, rewards, alive = [], [], [], [], [], [], []
    while not vec.ended.all():
        live = ~vec.ended
        pre, logits = fused.forward(policy, table, vec.levels, vec.tail, value, live, threads)
        a = sample(logits, mask, rng)
        levels.append(vec.levels.copy())
        tails.append(vec.tail.copy())
        pres.append(pre)
        masks.append(np.where(live[:, None], mask, True))
        actions.append(a)
        alive.append(live)
        _, reward, _, _, mask = vec.step(a)
        rewards.append(reward.copy())
    arrays = (levels, tails, pres, masks, actions, rewards, alive)
    return (*(np.stack(x) for x in arrays), value)


def episodes(env, sequences: list, trajectories: int, threads: int = 1, reuse=None) -> VectorEnv:
    """The compact VectorEnv of ``trajectories`` episodes of each of ``sequences`` (episode b =
    sequence b // trajectories), taking over ``reuse``'s arrays when they fit."""
    assign = np.repeat(np.arange(len(sequences)), trajectories)
    return VectorEnv(env, sequences, assign, compact=True, threads=threads, reuse=reuse)


def dlogits_of(logits, masks, actions, rewards, alive) -> np.ndarray:
    """d loss / d logits (T, N, A) of ``rl.reinforce.loss_of``'s loss, in numpy (float64)."""
    returns = np.cumsum(rewards[::-1], axis=0)[::-1]
    advantage = returns - returns.mean(axis=1, keepdims=True)
    advantage = advantage / (advantage.std(ddof=1) + 1e-8)  # torch's std is unbiased
    weight = alive.astype(np.float64)
    z = np.where(masks, logits.astype(np.float64), -np.inf)
    z = np.exp(z - z.max(axis=2, keepdims=True))
    p = z / z.sum(axis=2, keepdims=True)
    onehot = np.zeros_like(p)
    np.put_along_axis(onehot, actions[..., None], 1.0, axis=2)
    scale = advantage * weight / weight.sum()
    return -scale[..., None] * (onehot - p)


def train_vectorised(
    env: PlacementEnv,
    config: VectorConfig,
    out: Path,
    resume: bool = False,
    on_iteration: Callable[[int, float], None] | None = None,
    sequences: list | None = None,
    threads: int | None = None,
) -> LinearPolicy:
    """Train (module docstring), checkpointing to ``out``; returns the policy (also
    out/policy.npz). ``on_iteration(i, mean_return)``: the mean episode return of the iteration.
    ``threads``: the numba threads stepping the environments and the fused first layer (None:
    numba's count, every core unless ``processes.share_cores`` set it); the same results with
    any number."""
    config.check()
    setup = settings(env) | {"trainer": "vector", "seed": config.seed}
    if sequences is None:
        base = TrainConfig(sequences=config.sequences, seed=config.seed)
        sequences = training_set(env, base)
    net, optimiser, start, history = start_training(env, config, out, resume, setup, False)
    per = config.per_iteration or len(sequences)
    threads = numba.get_num_threads() if threads is None else threads
    with threadpool_limits(1):  # one BLAS thread: the products are small, and runs repeat exactly
        for i in range(start, config.iterations):
            _iteration(i, env, config, net, optimiser, sequences, per, history, out, setup,
                       threads)  # fmt: skip
            if on_iteration is not None:
                on_iteration(i, history[-1])
    policy = LinearPolicy.from_network(net, setup | run_record(env, config, history))
    policy.save(out / POLICY)
    return policy


def _iteration(
    i, env, config, net, optimiser, sequences, per, history, out, setup, threads=1, spare=None
) -> None:
    """One update from ``per`` sequences x ``config.trajectories`` episodes; appends the mean
    return to ``history`` and checkpoints when due."""
    first = (i * per) % len(sequences)
    chosen = [sequences[(first + k) % len(sequences)] for k in range(per)]
    policy = LinearPolicy.from_network(net, {})
    optimiser.zero_grad()
    if config.fused:
        returns = _fused_gradients(env, config, net, policy, chosen, i, threads, spare)
    else:
        returns = _gradients(env, config, net, policy, chosen, i, threads)
    optimiser.step()
    history.append(float(np.mean(returns)))
    save_checkpoint(out, i, config, net, optimiser, history, setup)


def _gradients(env, config, net, policy, chosen, i, threads=1) -> list[float]:
    """Accumulate the network's gradients of the iteration's loss batch by batch (torch);
    returns the episodes' returns."""
    torch = require("torch")
    n, per = config.trajectories, len(chosen)
    returns = []
    for k in range(0, per, config.batch_sequences):
        batch = chosen[k : k + config.batch_sequences]
        rng = np.random.default_rng([config.seed, i, k])
        arrays = rollout(env, batch, n, policy, rng, threads)
        obs, masks, actions, rewards, alive = (torch.from_numpy(x) for x in arrays)
        returns.extend(rewards.sum(0).tolist())
        for g in range(len(batch)):
            cols = slice(g * n, (g + 1) * n)
            loss = loss_of(
                net, obs[:, cols], masks[:, cols], actions[:, cols], rewards[:, cols],
                alive[:, cols],
            )  # fmt: skip
            (loss / per).backward()
    return returns


def _fused_gradients(env, config, net, policy, chosen, i, threads=1, spare=None) -> list[float]:
    """Set the network's gradients of the iteration's loss from compact rollouts (``rl.fused``);
    returns the episodes' returns. ``spare``: {"vec": the last batch's VectorEnv}, whose arrays
    each batch takes over (updated)."""
    spare = {} if spare is None else spare
    torch = require("torch")
    n, per = config.trajectories, len(chosen)
    total = {k: 0.0 for k in ("w1", "b1", "w2", "b2")}
    returns = []
    for k in range(0, per, config.batch_sequences):
        batch = chosen[k : k + config.batch_sequences]
        rng = np.random.default_rng([config.seed, i, k])
        vec = spare["vec"] = episodes(env, batch, n, threads, spare.get("vec"))
        levels, tails, pres, masks, actions, rewards, alive, value = rollout_compact(
            env, batch, n, policy, rng, threads, vec
        )
        returns.extend(rewards.sum(0).tolist())
        logits = np.maximum(pres, 0.0) @ policy.w2.T + policy.b2
        for g in range(len(batch)):
            cols = slice(g * n, (g + 1) * n)
            dl = dlogits_of(logits[:, cols], masks[:, cols], actions[:, cols], rewards[:, cols],
                            alive[:, cols]) / per  # fmt: skip
            rows = levels.shape[2]
            grads = fused.gradients(
                policy,
                np.ascontiguousarray(levels[:, cols].reshape(-1, rows)),
                tails[:, cols].reshape(-1),
                value,
                pres[:, cols].reshape(-1, pres.shape[2]),
                dl.reshape(-1, dl.shape[2]),
                env.spec.units,
                alive[:, cols].reshape(-1),  # ended episodes' rows: d loss / d logits 0
                threads,
            )
            for name, grad in grads.items():
                total[name] = total[name] + grad
    layers = {"w1": net[0].weight, "b1": net[0].bias, "w2": net[2].weight, "b2": net[2].bias}
    for name, param in layers.items():
        param.grad = torch.from_numpy(np.asarray(total[name], np.float32)).reshape(param.shape)
    return returns
