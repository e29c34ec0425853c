"""TVW-RL speed: environment steps per second (one env, and 20 stepped in lockstep with one
batched forward pass), the cost of one REINFORCE iteration on the default scenario, and what
torch's thread pool costs the tiny network (the reason training pins one thread).

Each figure is given for the compiled env step (``PlacementEnv``, ``rl/_kernels.py``; DeepRM's
``DeepRMEnv``, ``rl/_deeprm_kernels.py``) and its plain-numpy reference (``ReferencePlacementEnv``;
``ReferenceDeepRMEnv``; the same results bit for bit): the gain of the kernels. Iterations are timed after one warm-up iteration (the first pays for imports
torch makes on the optimiser's first step, seconds, once per process).

Default scenario: 10 machines x 8 units, h = 20, 200 workloads per episode at 50 % load, on the
shipped Bitbrains sample.

    python benchmarks/bench_rl.py [--episodes 3] [--trajectories 20] [--iterations 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from reclaim.rl.deeprm import DeepRMEnv, ReferenceDeepRMEnv
from reclaim.rl.env import PlacementEnv, ReferencePlacementEnv
from reclaim.rl.reinforce import TrainConfig, rollout, train, training_set
from reclaim.traces.store import sample_path
from reclaim.tvw.pool import load_pool


def single(env, sequences, rng) -> float:
    """Steps per second of one env, uniformly random unmasked actions."""
    steps, start = 0, time.perf_counter()
    for seq in sequences:
        _, info = env.reset(rng, seq)
        done = False
        while not done:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            steps += 1
    return steps / (time.perf_counter() - start)


def lockstep(env, sequences, trajectories: int) -> float:
    """Steps per second of ``trajectories`` envs with one batched forward pass per decision."""
    import torch

    from reclaim.rl.policy import network

    torch.set_num_threads(1)
    net = network(env.obs_size, env.actions)
    envs = [replace(env) for _ in range(trajectories)]
    steps, start = 0, time.perf_counter()
    for seq in sequences:
        batch = rollout(envs, seq, net, torch.Generator().manual_seed(0))
        steps += int(batch[4].sum())
    return steps / (time.perf_counter() - start)


def forward_cost(obs_size: int, threads: int) -> float:
    """Milliseconds per forward pass of a (20, D) batch through the paper's network."""
    import torch

    from reclaim.rl.policy import network

    torch.set_num_threads(threads)
    net, x = network(obs_size, 10), torch.rand(20, obs_size)
    with torch.no_grad():
        for _ in range(10):
            net(x)
        start = time.perf_counter()
        for _ in range(200):
            torch.softmax(net(x), dim=1)
    return 1000 * (time.perf_counter() - start) / 200


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--trajectories", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=3, help="timed, after a warm-up one")
    args = parser.parse_args()
    import torch

    default_threads = torch.get_num_threads()  # before lockstep pins one thread
    pool = load_pool(sample_path("bitbrains"))
    config = TrainConfig(sequences=args.episodes, iterations=1)
    rng = np.random.default_rng(0)
    kinds = (PlacementEnv, ReferencePlacementEnv, DeepRMEnv, ReferenceDeepRMEnv)
    envs = [kind([pool]) for kind in kinds]
    for env in envs:
        name = type(env).__name__
        sequences = training_set(env, config)
        single(env, sequences[:1], rng)  # compile the kernels
        print(f"{name}: {single(env, sequences, rng):,.0f} steps/s single env")
        rate = lockstep(env, sequences, args.trajectories)
        print(f"{name}: {rate:,.0f} steps/s, {args.trajectories} envs in lockstep (batched policy)")
    for threads in sorted({1, default_threads}):
        cost = forward_cost(PlacementEnv().obs_size, threads)
        print(f"forward pass of 20 observations, {threads} torch thread(s): {cost:.3f} ms")
    for kind in kinds:
        per = iteration_cost(kind([pool]), args.trajectories, args.iterations)
        name = kind.__name__
        print(
            f"{name}: REINFORCE iteration ({args.trajectories} x 200 decisions + update): {per:.2f} s"
        )
        print(f"{name}: the paper's 2000 iterations would take {2000 * per / 3600:.2f} h")


def iteration_cost(env, trajectories: int, iterations: int) -> float:
    """Seconds per REINFORCE iteration after the first (warm-up) one."""
    ticks = []
    config = TrainConfig(iterations=iterations + 1, trajectories=trajectories, sequences=3)
    with tempfile.TemporaryDirectory() as out:
        train(env, config, Path(out), on_iteration=lambda i, r: ticks.append(time.perf_counter()))
    return (ticks[-1] - ticks[0]) / iterations


if __name__ == "__main__":
    main()
