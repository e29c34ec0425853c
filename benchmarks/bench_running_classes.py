"""Equivalence classes re-predicted as workloads run (``rl/running_classes.py``): what they cost.

Fitting the labeller (classes + classifier, once per training or evaluation), the (n, A) table per
new sequence (the env's reset overhead; the copies of a training iteration share it), and env
steps per second with and without classes, one env and 20 in lockstep. For the speed trick, the
table against calling the classifier at every decision (its only alternative: labels by age).

Default scenario (10 machines x 8 units, h = 20, 200 workloads at 50 % load), shipped Bitbrains
sample, temporal classes.

    python benchmarks/bench_running_classes.py [--episodes 3]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from bench_rl import lockstep, single
from reclaim.rl.classes import features_by_age
from reclaim.rl.env import PlacementEnv
from reclaim.rl.reinforce import TrainConfig, training_set
from reclaim.rl.running_classes import RunningClasses
from reclaim.traces.store import sample_path
from reclaim.tvw.pool import load_pool
from reclaim.tvw.scenario import ScenarioSpec


def per_decision(labeler: RunningClasses, sequence) -> float:
    """Milliseconds per decision to predict every workload's class at one age (no table)."""
    features = features_by_age(sequence.usage, labeler.ages)[-1]
    start = time.perf_counter()
    for _ in range(50):
        labeler.model_.predict(features)
    return 1000 * (time.perf_counter() - start) / 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=3)
    args = parser.parse_args()
    pool = load_pool(sample_path("bitbrains"))
    start = time.perf_counter()
    labeler = RunningClasses("temporal").fit([pool], ScenarioSpec())
    print(f"fit: {time.perf_counter() - start:.1f} s, G = {labeler.classes_}")
    plain = PlacementEnv([pool])
    classed = replace(plain, labeler=labeler, classes=labeler.classes_)
    sequences = training_set(plain, TrainConfig(sequences=args.episodes))
    start = time.perf_counter()
    for seq in sequences:
        labeler(seq)  # each a new sequence: no kept table
    table = 1000 * (time.perf_counter() - start) / len(sequences)
    print(f"table per sequence (reset overhead): {table:.1f} ms")
    print(f"classifier per decision instead: {per_decision(labeler, sequences[0]):.2f} ms")
    rng = np.random.default_rng(0)
    single(plain, sequences[:1], rng)  # compile the kernels
    for name, env in (("one class", plain), ("running classes", classed)):
        rate = max(single(env, sequences, rng) for _ in range(3))  # best of 3: a busy machine
        print(f"{name}: {rate:,.0f} steps/s single env (a new sequence per episode)")
        rate = max(lockstep(env, sequences, 20) for _ in range(3))
        print(f"{name}: {rate:,.0f} steps/s, 20 envs in lockstep (one sequence per 20 episodes)")


if __name__ == "__main__":
    main()
