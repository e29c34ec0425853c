"""How ~10-second usage moves inside 5-minute windows, and the 10-second slots calibrated to it.

Issue #32: "measure how a 10-second mean varies inside 5-minute windows on real data sampled at
about 10 s ... and build the slots so that their spread matches it". Prints, for an Alibaba
cluster-trace-v2018 machine_usage extract (default: the shared development subset; pass the
held-out folder to check it):

* the pooled within-window correlation of samples 10, 20 and 30 s apart, CPU and memory
  (:func:`reclaim.corp.variability.measure_variability`), per machine and for two
  machine-disjoint halves;
* what the calibrated slots of :mod:`reclaim.corp.fluctuation` then are: the per-second
  correlation that reproduces the 10-s value, the correlation of the slots 10, 20 and 30 s apart,
  and the share of a window's 1-second spread (standard deviation) a 10-second slot keeps
  (``percentiles`` keeps all of it, independent seconds would keep 1/sqrt(10) = 0.32).

    python benchmarks/bench_corp_variability.py [PATH]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from reclaim.corp.fluctuation import (
    SLOT_CORRELATION,
    _slot_means,
    ordered_levels,
    second_correlation,
)
from reclaim.corp.variability import measure_variability

SHARED = Path(__file__).parents[2] / "shared" / "traces" / "alibaba-cluster-trace-v2018"


def _lag(slots: np.ndarray, lag: int) -> float:
    var = slots.var(axis=1, ddof=1).mean()
    return float(1.0 - 0.5 * np.mean((slots[:, lag:] - slots[:, :-lag]) ** 2) / var)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=str(SHARED))
    args = parser.parse_args()
    v = measure_variability(args.path)
    print(f"source: {v.source}; {len(v.ids)} machines; pairs at 10/20/30 s: {v.pairs[0].tolist()}")
    for r, name in enumerate(("cpu", "mem")):
        print(f"{name}: pooled within-window correlation {np.round(v.correlation[r], 3).tolist()}")
        halves = [np.round(v.pooled(np.arange(len(v.ids))[k::2])[r], 3).tolist() for k in (0, 1)]
        print(f"  machine-disjoint halves: {halves[0]} / {halves[1]}")
        print(f"  per machine at 10 s: {np.round(v.per_series[:, r, 0], 3).tolist()}")
    print(f"within-window sd of the samples (percent of the machine): {np.round(v.sd, 2).tolist()}")
    for r, name in enumerate(("cpu", "mem")):
        target = SLOT_CORRELATION[r]
        phi = second_correlation(target)
        levels = ordered_levels(np.random.default_rng(1), 2000, 300, phi)
        slots = _slot_means(levels, 30)
        keep = np.sqrt(slots.var(axis=1, ddof=1).mean() / levels.var(axis=1, ddof=1).mean())
        lags = [round(_lag(slots, k), 3) for k in (1, 2, 3)]
        print(
            f"calibrated {name} slots (target {target}): per-second correlation {phi:.4f}, "
            f"slots 10/20/30 s apart {lags}, 10-s sd / 1-s sd {keep:.3f}"
        )


if __name__ == "__main__":
    main()
