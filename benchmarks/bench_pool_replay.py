"""Lifetime-aware placement on a real VM pool: empty hosts, stranding, migrations, wall time.

The Alibaba GPU 2025 trace's VMs of one family (default CN) replayed on identical hosts (default
192 cores, 1024 GiB, no GPU), as many as put the trace's peak CPU demand at ``--peak`` of the pool,
with an oracle predictor (true remaining lifetime; inf for VMs alive at the window end). Printed per
placer spec: the replay's summary (``reclaim.lifetime.replay.PoolResult.summary``); then the same
with defragmentation (baseline order vs LARS, ``--drain`` hosts per round) at ``--threshold``
empty hosts, and the paper's LARS comparison: the baseline run's list of drained VMs migrated in
each order, 3 at a time for 20 minutes (``reclaim.defrag.replay_migrations``).

    python benchmarks/bench_pool_replay.py [--store src/reclaim/data/sample/alibaba-gpu2025]
        [--family CN] [--peak 0.875] [--threshold 0.2] [--drain 10]
"""

from __future__ import annotations

import argparse

import numpy as np

from reclaim.defrag import Defragmenter, replay_migrations
from reclaim.lifetime.replay import replay_pool
from reclaim.lifetime.vms import load_vms

SPECS = ["best-fit", "la-binary>best-fit", "las>best-fit", "lava>las>best-fit"]
KEYS = ["empty_hosts_pct", "stranded_cpu_pct", "stranded_mem_pct", "migrations", "rejected"]


class Oracle:
    """True remaining lifetime."""

    def __init__(self, vms) -> None:
        self.life = vms.exit - vms.arrival

    def remaining(self, vms, uptime):
        return np.maximum(self.life[vms] - uptime, 0.0)


def peak_demand(vms) -> np.ndarray:
    """(3,) largest total request running at once (exits before arrivals at equal times)."""
    done = np.isfinite(vms.exit)
    t = np.concatenate([vms.exit[done], vms.arrival])
    kind = np.concatenate([np.zeros(done.sum()), np.ones(len(vms))])
    delta = np.concatenate([-vms.request[done], vms.request]).astype(np.float64)
    return delta[np.lexsort((kind, t))].cumsum(axis=0).max(axis=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="src/reclaim/data/sample/alibaba-gpu2025")
    ap.add_argument("--family", default="CN")
    ap.add_argument("--host", type=float, nargs=3, default=[192.0, 1024.0, 0.0])
    ap.add_argument("--peak", type=float, default=0.875)
    ap.add_argument("--threshold", type=float, default=0.2)
    ap.add_argument("--drain", type=int, default=10)
    args = ap.parse_args()
    vms = load_vms(args.store, family=args.family)
    peak = peak_demand(vms)
    n_hosts = int(np.ceil(peak[0] / (args.peak * args.host[0])))
    capacity = np.tile(args.host, (n_hosts, 1))
    print(
        f"{len(vms)} VMs, {n_hosts} hosts; peak demand {100 * peak[0] / capacity[:, 0].sum():.1f} % "
        f"of cores, {100 * peak[1] / capacity[:, 1].sum():.1f} % of memory"
    )
    print(f"{'placer':34s} " + " ".join(f"{k:>16s}" for k in [*KEYS, "wall_s"]))
    drained = {}
    runs = [(spec, None) for spec in SPECS]
    runs += [(s, o) for s in ("best-fit", "lava>las>best-fit") for o in ("baseline", "lars")]
    for spec, order in runs:
        defrag = None
        if order is not None:
            defrag = Defragmenter(order=order, threshold=args.threshold, hosts_per_round=args.drain)
        result = replay_pool(vms, capacity, spec, Oracle(vms), defrag=defrag)
        summary = result.summary()
        name = spec if order is None else f"{spec} defrag={order}"
        print(f"{name:34s} " + " ".join(f"{summary[k]:16.3f}" for k in [*KEYS, "wall_s"]))
        if order == "baseline":
            drained[spec] = result.drained
    for spec, rows in drained.items():
        t = np.array([r[0] for r in rows])
        exit = vms.exit[np.array([r[1] for r in rows], np.int64)]
        base, lars = replay_migrations(t, exit).sum(), replay_migrations(t, exit, key=exit).sum()
        print(
            f"{spec}: fixed list of {len(rows)} drained VMs: {base} migrations in baseline order, "
            f"{lars} with LARS ({100 * (base - lars) / max(base, 1):.2f} % fewer)"
        )


if __name__ == "__main__":
    main()
