"""How much time variation each TVW pool keeps after quantisation: the figures of docs/rl.md
("Quantisation and sources").

    python scripts/tvw_quantisation.py [--sequences 30] [--seed 1000] [--scale peak,auto]

For each shipped usage store and scale rule: records (and CPU-intensive ones), the share of
samples at each unit per resource, samples clipped, the share of whole records that are constant
(the same units at every step, in CPU and memory), and the share of the windows the scenario
draws (``rl eval``'s test sequences: its seed, 200 jobs each) that are constant, short (1-30 h)
and long (30-120 h) apart, and the share of the h-step views of those windows (h = 20, the
policy's image: consecutive blocks of 20 steps) that are constant. Sampling only; a few seconds.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import numpy as np

from reclaim.traces.store import sample_path
from reclaim.tvw.pool import constant_records
from reclaim.tvw.scenario import ScenarioSpec, load_pools, sample_sequence

STORES = ("bitbrains", "google2011-derived", "google2019-usage")
HISTORY = 20  # steps of usage in the policy's machine images (PlacementEnv.history)


def drawn(pool, spec: ScenarioSpec, sequences: int, seed: int):
    """(constant, long) per workload of ``sequences`` test sequences, as ``rl eval`` draws them
    (the workloads depend on the seed and sequence only, not on the load), and (constant,) per
    whole block of ``HISTORY`` steps of them."""
    constant, long, views = [], [], []
    for k in range(sequences):
        rng = np.random.default_rng([seed, k])
        seq = sample_sequence(pool, spec, 0.5, rng, np.random.default_rng([seed, k, 500]))
        constant.append(constant_records(seq.usage))
        long.append(seq.long)
        for j in range(len(seq)):
            x = seq.usage[j]
            blocks = x[: len(x) // HISTORY * HISTORY].reshape(-1, HISTORY, x.shape[1])
            views.append(np.all(blocks == blocks[:, :1], axis=(1, 2)))
    return np.concatenate(constant), np.concatenate(long), np.concatenate(views)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sequences", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1000)
    parser.add_argument("--scale", default="peak,auto")
    args = parser.parse_args()
    for name in STORES:
        for scale in args.scale.split(","):
            spec = replace(ScenarioSpec(), scale=scale)
            (pool,) = load_pools([sample_path(name)], spec)
            r = pool.report
            units = pool.units.data
            shares = [
                np.bincount(units[:, i], minlength=spec.max_units + 1)[1:] / len(units)
                for i in range(units.shape[1])
            ]
            const, long, views = drawn(pool, spec, args.sequences, args.seed)
            print(
                f"{name} scale={scale} ({r.rule}): {r.records} records, {r.cpu_intensive} "
                f"CPU-intensive, {r.samples} samples, merged {r.merged}, apart {r.apart}"
            )
            for res, share in zip(("cpu", "mem"), shares, strict=True):
                cells = " ".join(f"{u + 1}:{s:.1%}" for u, s in enumerate(share))
                print(f"  {res} units  {cells}")
            clipped = " / ".join(f"{c / r.samples:.2%}" for c in r.clipped)
            print(
                f"  clipped {clipped}; constant records {r.constant / r.records:.1%}; "
                f"constant windows {const.mean():.1%} (short {const[~long].mean():.1%}, "
                f"long {const[long].mean():.1%}, n={len(const)}); constant {HISTORY}-step "
                f"views {views.mean():.1%}"
            )


if __name__ == "__main__":
    main()
