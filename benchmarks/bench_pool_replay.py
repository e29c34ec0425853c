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

The Azure case (``--azure STORE``, a store of ``reclaim traces import azure2017-lifetimes``): one
pool of the ``lava-azure`` spec (``--pool p00``, 20 vCPU / 140 GiB hosts at 90 % of its peak, the
3.47 days of imputed history, seed 0) replayed by each placer with the spec's GBDT model and
with the oracle. Printed per placer: VMs placed per second of replay, model time per VM of the
trace, predictions per VM, model time per prediction inside the replay, and the kernel's own
time per prediction for a batch of 100 VMs (the reference the replay's cost is compared with).

    python benchmarks/bench_pool_replay.py --azure STORE [--pool p00]
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


def azure(store: str, pool: str) -> None:
    """The Azure case (see the module docstring)."""
    import time
    import tomllib
    from pathlib import Path

    from reclaim.lifetime.evaluate import censor_at, training_cut
    from reclaim.lifetime.experiment import peak_demand
    from reclaim.lifetime.model import LifetimeModel, OraclePredictor

    spec = Path(__file__).parents[1] / "src/reclaim/experiments/specs/lava-azure.toml"
    doc = tomllib.loads(spec.read_text())
    settings = {k: v for k, v in doc["model"].items() if k != "train_fraction"}
    history = next(p["history_days"] for p in doc["pools"] if p["name"] == pool)
    vms = load_vms(store, family=pool, lifetime_seed=0, history_days=history)
    start, end = vms.window
    cut = training_cut(vms, doc["model"]["train_fraction"])
    host = np.array([20.0, 140.0, 0.0])
    peak = peak_demand(vms, end)
    capacity = np.tile(host, (int(np.ceil(max(peak[:2] / (0.9 * host[:2])))), 1))
    t0 = time.perf_counter()
    model = LifetimeModel(**settings).fit(
        censor_at(vms, cut), ~vms.left_censored & (vms.arrival < cut)
    )
    print(
        f"{pool}: {len(vms)} VMs ({int(vms.imputed.sum())} imputed), {len(capacity)} hosts; "
        f"model trained in {time.perf_counter() - t0:.1f} s on {model.n_examples_} examples"
    )
    model_pred = model.predictor(vms)
    rows = np.arange(100, dtype=np.int64)
    up = np.full(100, 3600.0)
    model_pred.remaining(rows, up)  # compile
    reps = 2000
    t0 = time.perf_counter()
    for _ in range(reps):
        model_pred.remaining(rows, up)
    kernel_us = 1e6 * (time.perf_counter() - t0) / (reps * 100)
    print(f"kernel: {kernel_us:.2f} us per prediction (batches of 100)")
    head = ["empty %", "rejected", "VMs/s", "model us/VM", "pred/VM", "us/pred", "wall s"]
    print(f"{'placer':34s} " + " ".join(f"{h:>12s}" for h in head))
    for spec_name in SPECS:
        for kind in ("model", "oracle") if spec_name != "best-fit" else ("none",):
            predictor = {"model": model_pred, "oracle": OraclePredictor(vms), "none": None}[kind]
            r = replay_pool(vms, capacity, spec_name, predictor, warmup_s=cut - start)
            per_pred = 1e6 * r.model_s / max(r.predictions, 1)
            values = [
                r.empty_hosts_pct,
                r.rejected,
                r.vms / r.wall_s,
                1e6 * r.model_s / r.vms,
                r.predictions / r.vms,
                per_pred,
                r.wall_s,
            ]
            name = f"{spec_name} ({kind})"
            print(f"{name:34s} " + " ".join(f"{v:12.2f}" for v in values))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="src/reclaim/data/sample/alibaba-gpu2025")
    ap.add_argument("--family", default="CN")
    ap.add_argument("--host", type=float, nargs=3, default=[192.0, 1024.0, 0.0])
    ap.add_argument("--peak", type=float, default=0.875)
    ap.add_argument("--threshold", type=float, default=0.2)
    ap.add_argument("--drain", type=int, default=10)
    ap.add_argument("--azure", help="an azure2017-lifetimes store: run the Azure case")
    ap.add_argument("--pool", default="p00", help="Azure pool (lava-azure spec)")
    args = ap.parse_args()
    if args.azure:
        azure(args.azure, args.pool)
        return
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
