"""Lifetime model on the real Alibaba GPU traces: training time, reprediction latency and the
honest evaluation (LAVA sections 3, 6.4, 6.5).

For each trace (v2025 DLRM serving instances, v2023 openb pods) it imports the raw CSVs into a
temporary store, loads the VM table (``load_vms``), and prints:

* training time of the default model on all VMs with a known start;
* reprediction latency, µs per VM: one VM per call, and batches of 100 random (VM, uptime) pairs
  (median over ``--calls`` calls), for the compiled kernel (``ForestPredictor.remaining``) and for
  ``booster.predict`` (``remaining_reference``). Target (the paper's 9 µs): median <= 9 µs per VM
  in batches of 100;
* the time-split evaluation: precision/recall of "lives beyond 7 days" at creation, recall at
  99 % precision, F1 per uptime quantile, F1/accuracy per week after the cut, for the model, the
  feature-blind Kaplan–Meier baseline and the oracle.

    python benchmarks/bench_lifetime.py [--traces /work/shared/traces] [--calls 2000] [--plots DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from reclaim.lifetime.evaluate import evaluate_lifetime
from reclaim.lifetime.model import LifetimeModel
from reclaim.lifetime.vms import load_vms
from reclaim.traces.importer import import_trace

TRACES = {
    "alibaba-gpu2025": "alibaba-cluster-trace-gpu-v2025",
    "alibaba-gpu2023": "alibaba-cluster-trace-gpu-v2023",
}


def latency(fn, rows, uptime, batch: int, calls: int, rng: np.random.Generator) -> float:
    """Median µs per VM of ``fn(rows[k], uptime[k])`` over ``calls`` random batches."""
    times = np.empty(calls)
    for c in range(calls):
        k = rng.integers(0, len(rows), batch)
        r, u = rows[k], uptime[k]
        t0 = time.perf_counter_ns()
        fn(r, u)
        times[c] = time.perf_counter_ns() - t0
    return float(np.median(times)) / 1e3 / batch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, default=Path("/work/shared/traces"))
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--plots", type=Path, default=None, help="write the evaluation PNGs here")
    args = ap.parse_args()
    pl.Config.set_tbl_rows(40)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, folder in TRACES.items():
            import_trace(fmt, args.traces / folder, Path(tmp) / fmt)
            vms = load_vms(Path(tmp) / fmt)
            known = ~vms.left_censored
            print(
                f"\n=== {fmt}: {len(vms)} VMs ({int(vms.left_censored.sum())} left-censored, "
                f"{int(vms.right_censored.sum())} right-censored)"
            )

            model = LifetimeModel()
            t0 = time.perf_counter()
            model.fit(vms, known)
            print(
                f"training: {time.perf_counter() - t0:.2f} s  ({model.n_train_} VMs, "
                f"{model.n_examples_} examples, {model.forest_.n_trees} trees, "
                f"{len(model.forest_.feature)} split nodes)"
            )
            pred = model.predictor(vms)
            rows = np.flatnonzero(known).astype(np.int64)
            uptime = rng.uniform(0.0, 1.0, len(rows)) * vms.observed[rows]
            pred.remaining(rows[:1], uptime[:1])  # compile / load the cached kernel
            print("latency, median µs per VM:")
            for name, fn in (("kernel", pred.remaining), ("booster", pred.remaining_reference)):
                one = latency(fn, rows, uptime, 1, args.calls, rng)
                hundred = latency(fn, rows, uptime, 100, args.calls, rng)
                print(f"  {name:8s} single {one:8.2f}   batch of 100 {hundred:8.2f}")

            r = evaluate_lifetime(vms, LifetimeModel())
            print(
                f"time split: cut at {r.cut / 86400:.1f} d; train {r.n_train} VMs "
                f"({r.n_train_censored} right-censored, KM-imputed); test {r.n_test} known "
                f"({r.n_positive} live > 7 d), {r.n_unknown} censored before 7 d excluded; "
                f"fit {r.train_seconds:.2f} s"
            )
            rp = r.recall_at_precision
            print("recall at 99 % precision:", "not reached" if rp is None else f"{rp:.3f}")
            print("creation-time decision (predicted lifetime > 7 d):")
            print(r.at_threshold)
            print("F1 by uptime quantile (Figure 9):")
            print(r.by_quantile.pivot(on="predictor", index="q", values="f1"))
            print("by week of arrival after the cut (Figure 10):")
            print(r.by_week.filter(pl.col("predictor") != "oracle"))
            if args.plots is not None:
                from reclaim.lifetime.eval_plots import plot_lifetime_eval

                for p in plot_lifetime_eval(r, args.plots / fmt):
                    print("wrote", p)


if __name__ == "__main__":
    main()
