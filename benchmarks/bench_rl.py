"""TVW-RL speed: environment steps per second (one env, 20 stepped in lockstep with one batched
forward pass, and the vectorised env ``rl.vector`` stepping hundreds of episodes in one compiled
call with the policy as one batched matrix product), the cost of one REINFORCE iteration on the
default scenario, the wall time of one paper-volume iteration's episodes (every one of the 100
training sequences x N = 20 trajectories), and what torch's thread pool costs the tiny network
(the reason training pins one thread).

Each figure is given for the compiled env step (``PlacementEnv``, ``rl/_kernels.py``; DeepRM's
``DeepRMEnv``, ``rl/_deeprm_kernels.py``) and its plain-numpy reference (``ReferencePlacementEnv``;
``ReferenceDeepRMEnv``; the same results bit for bit): the gain of the kernels. Iterations are timed after one warm-up iteration (the first pays for imports
torch makes on the optimiser's first step, seconds, once per process).

Default scenario: 10 machines x 8 units, h = 20, 200 workloads per episode at 50 % load, on the
shipped Bitbrains sample.

    python benchmarks/bench_rl.py [--episodes 3] [--trajectories 20] [--iterations 3]
        [--paper-sequences 100] [--batch 200] [--threads 1] [--skip-reference] [--skip-dense]
        [--background 0]

``--threads``: the vectorised env's (``VectorEnv(threads=)``; the same results with any number).
``--background``: every machine's unknown background process, 0..N units (the paper's noise).
The load average is printed before and after: the machine is shared, and figures move with it.
"""

from __future__ import annotations

import argparse
import inspect
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from reclaim.rl.deeprm import DeepRMEnv, ReferenceDeepRMEnv
from reclaim.rl.env import PlacementEnv, ReferencePlacementEnv
from reclaim.rl.policy import HIDDEN, LinearPolicy
from reclaim.rl.reinforce import TrainConfig, rollout, train, training_set
from reclaim.rl.vector import VectorEnv, act
from reclaim.rl.vector_train import VectorConfig, rollout_compact, train_vectorised
from reclaim.traces.store import sample_path
from reclaim.tvw.pool import load_pool
from reclaim.tvw.scenario import ScenarioSpec


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


def random_policy(env, seed: int = 0) -> LinearPolicy:
    """The paper's network with torch's default initialisation (uniform +-1/sqrt(fan in))."""
    rng = np.random.default_rng(seed)
    shapes = ((HIDDEN, env.obs_size), (HIDDEN,), (env.actions, HIDDEN), (env.actions,))
    fan_in = (env.obs_size, env.obs_size, HIDDEN, HIDDEN)
    arrays = [
        rng.uniform(-1, 1, shape).astype(np.float32) / np.float32(np.sqrt(f))
        for shape, f in zip(shapes, fan_in, strict=True)
    ]
    return LinearPolicy(*arrays, settings={})


def vectorised(env, sequences, copies: int, policy: LinearPolicy, seed: int = 0, threads: int = 1):
    """Run ``copies`` episodes of each of ``sequences`` in one VectorEnv, actions sampled from
    ``policy`` (one batched product per step for all episodes). Returns (steps, seconds in the
    env, seconds in the policy)."""
    rng = np.random.default_rng(seed)
    assign = np.repeat(np.arange(len(sequences)), copies)
    vec = VectorEnv(env, sequences, assign, **spread(threads))
    obs, mask = vec.reset()
    steps, in_env, in_policy = 0, 0.0, 0.0
    while not vec.ended.all():
        t0 = time.perf_counter()
        actions = act(policy, obs, mask, rng)
        t1 = time.perf_counter()
        steps += int((~vec.ended).sum())
        obs, _, _, _, mask = vec.step(actions)
        in_policy += t1 - t0
        in_env += time.perf_counter() - t1
    return steps, in_env, in_policy


def spread(threads: int) -> dict:
    """The keyword giving the vectorised env ``threads`` threads (none where the code has no such
    option: the code before it runs this benchmark too, with one thread)."""
    if "threads" in inspect.signature(train_vectorised).parameters:
        return {"threads": threads}
    if threads != 1:
        raise SystemExit("this code has no threads option")
    return {}


def compact_env(env, sequences, copies: int, threads: int, reps: int = 3) -> float:
    """Steps per second of the compact VectorEnv alone (best of ``reps`` runs after a first):
    uniformly random unmasked actions drawn in numpy, only ``step`` timed."""
    rng = np.random.default_rng(0)
    assign = np.repeat(np.arange(len(sequences)), copies)
    vec = VectorEnv(env, sequences, assign, compact=True, **spread(threads))
    best = 0.0
    for _ in range(reps + 1):
        _, mask = vec.reset()
        steps, spent = 0, 0.0
        while not vec.ended.all():
            actions = np.argmax(np.where(mask, rng.random(mask.shape), -1.0), axis=1)
            steps += int((~vec.ended).sum())
            start = time.perf_counter()
            _, _, _, _, mask = vec.step(actions)
            spent += time.perf_counter() - start
        best = max(best, steps / spent)
    return best


def paper_iteration(
    env, sequences, trajectories: int, batch: int, policy: LinearPolicy, threads: int = 1
):
    """Wall time of the episodes of one paper-volume iteration: every sequence x
    ``trajectories``, ``batch`` episodes per VectorEnv (memory: about 0.35 MB per episode)."""
    per = max(batch // trajectories, 1)
    start, steps = time.perf_counter(), 0
    for k in range(0, len(sequences), per):
        chosen = sequences[k : k + per]
        steps += vectorised(env, chosen, trajectories, policy, seed=k, threads=threads)[0]
    return steps, time.perf_counter() - start


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
    parser.add_argument("--paper-sequences", type=int, default=100)
    parser.add_argument("--batch", type=int, default=200, help="episodes per VectorEnv")
    parser.add_argument("--threads", type=int, default=1, help="the vectorised env's threads")
    parser.add_argument("--skip-reference", action="store_true", help="no plain-numpy envs")
    parser.add_argument("--skip-dense", action="store_true", help="no dense train_vectorised")
    parser.add_argument(
        "--background", type=int, default=0, help="units of background noise (Table 2)"
    )
    args = parser.parse_args()
    print("load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    import torch
    from threadpoolctl import threadpool_limits

    default_threads = torch.get_num_threads()  # before lockstep pins one thread
    pool = load_pool(sample_path("bitbrains"))
    config = TrainConfig(sequences=args.episodes, iterations=1)
    rng = np.random.default_rng(0)
    env = PlacementEnv([pool], spec=ScenarioSpec(background=args.background))
    policy = random_policy(env)
    with threadpool_limits(1):  # one BLAS thread, as training pins one torch thread
        sequences = training_set(env, config)
        threads = args.threads
        vectorised(env, sequences[:1], 2, policy, threads=threads)  # compile the kernels
        copies = args.batch // len(sequences)
        steps, in_env, in_policy = vectorised(env, sequences, copies, policy, threads=threads)
        print(
            f"VectorEnv: {steps / in_env:,.0f} steps/s in the env, {steps / (in_env + in_policy):,.0f}"
            f" with the batched policy ({copies * len(sequences)} episodes, {threads} thread(s))"
        )
        rate = compact_env(env, sequences, copies, threads)
        print(f"VectorEnv, compact observations: {rate:,.0f} steps/s in the env (random actions)")
        per = max(args.batch // args.trajectories, 1)
        rollout_compact(env, sequences[:1], 2, policy, rng, **spread(threads))  # compile
        start = time.perf_counter()
        arrays = rollout_compact(env, sequences, copies, policy, rng, **spread(threads))
        wall = time.perf_counter() - start
        print(
            f"VectorEnv, compact observations and the fused first layer (rl.fused): "
            f"{int(arrays[6].sum()) / wall:,.0f} steps/s with the policy"
        )
        paper = training_set(env, TrainConfig(sequences=args.paper_sequences, iterations=1))
        steps, wall = paper_iteration(env, paper, args.trajectories, args.batch, policy, threads)
        print(
            f"VectorEnv: one paper-volume iteration's episodes ({len(paper)} sequences x "
            f"{args.trajectories}): {steps:,} steps in {wall:.1f} s ({steps / wall:,.0f} steps/s; "
            "the policy update not included)"
        )
    print("load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    warm = VectorConfig(iterations=1, trajectories=2, sequences=2, batch_sequences=1, fused=True)
    with tempfile.TemporaryDirectory() as out:  # torch's first optimiser step imports, once
        train_vectorised(env, warm, Path(out), sequences=paper[:2], **spread(args.threads))
    for fused in (True,) if args.skip_dense else (False, True):
        # the fused iteration timed between the ends of iterations (best of --iterations)
        count = args.iterations + 1 if fused else 1
        config = VectorConfig(
            iterations=count,
            trajectories=args.trajectories,
            sequences=args.paper_sequences,
            batch_sequences=per,
            fused=fused,
            checkpoint_every=count,
        )
        ticks = [time.perf_counter()]
        with tempfile.TemporaryDirectory() as out:
            train_vectorised(
                env, config, Path(out), sequences=paper, **spread(args.threads),
                on_iteration=lambda i, r, ticks=ticks: ticks.append(time.perf_counter()),
            )  # fmt: skip
        laps = np.diff(ticks[1:] if fused else ticks)
        wall = float(laps.min())
        spread_s = f" ({laps.min():.2f}-{laps.max():.2f} s over {len(laps)})" if fused else ""
        print(
            f"train_vectorised{' (fused)' if fused else ''}: one paper-volume iteration with its "
            f"update ({len(paper)} x {args.trajectories} episodes, {per} sequences per batch): "
            f"{wall:.2f} s{spread_s}; the paper's 2000 iterations would take "
            f"{2000 * wall / 3600:.2f} h"
        )
    kinds = (PlacementEnv, ReferencePlacementEnv, DeepRMEnv, ReferenceDeepRMEnv)
    if args.skip_reference:
        kinds = (PlacementEnv, DeepRMEnv)
    envs = [kind([pool], spec=env.spec) for kind in kinds]
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
    print("load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    for kind in kinds:
        per = iteration_cost(kind([pool]), args.trajectories, args.iterations)
        name = kind.__name__
        print(
            f"{name}: REINFORCE iteration ({args.trajectories} x 200 decisions + update): {per:.2f} s"
        )
        print(f"{name}: the paper's 2000 iterations would take {2000 * per / 3600:.2f} h")
        print(
            f"{name}: a paper-volume iteration ({args.paper_sequences} sequences per iteration) "
            f"would take {args.paper_sequences * per:.1f} s"
        )


def iteration_cost(env, trajectories: int, iterations: int) -> float:
    """Seconds per REINFORCE iteration after the first (warm-up) one."""
    ticks = []
    config = TrainConfig(iterations=iterations + 1, trajectories=trajectories, sequences=3)
    with tempfile.TemporaryDirectory() as out:
        train(env, config, Path(out), on_iteration=lambda i, r: ticks.append(time.perf_counter()))
    return (ticks[-1] - ticks[0]) / iterations


if __name__ == "__main__":
    main()
