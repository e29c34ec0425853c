"""Placement decisions per second: workloads placed one at a time, as they arrive, by best-fit.

Components of applications sampled from the real traces (Alibaba 2017 task plans: cores and GiB,
run times) arrive as a Poisson stream whose rate keeps the cluster at about ``--load`` of its CPU;
each is placed by one ``Placer.place`` call on hosts of 32 cores and 128 GiB, holds its request
for its run time, then leaves. Target: at least 20,000 decisions per second at 10,000 hosts.

Printed per cluster size and placer: decisions per second counting only the ``place`` calls, and
the whole replay (arrivals, departures and placement). The numpy reference path (the framework
without its compiled binding) on a slice of the stream shows what the compiled path pays.

    python benchmarks/bench_placement.py [--workloads 100000] [--hosts 10000 250] [--load 0.7]
"""

from __future__ import annotations

import argparse
import heapq
import time

import numpy as np

from reclaim.placement import build_placer
from reclaim.workload.builder import WorkloadSpec, build_workload, default_stores

HOST = (32.0, 128.0)  # cores, GiB: the shaping paper's hosts


def real_components(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, 2) float32 requests (cores, GiB) and (n,) run times (s) of real components, in a random
    order; requests larger than a host are left out (no placer could ever place them)."""
    jobs, shapes = default_stores()
    apps = max(1000, n // 20)
    while True:
        wl, _ = build_workload(WorkloadSpec(n_apps=apps, seed=seed), jobs, shapes)
        fits = (wl.request <= np.array(HOST, np.float32)).all(axis=1)
        if fits.sum() >= n:
            break
        apps *= 2
    order = np.random.default_rng(seed).permutation(np.flatnonzero(fits))[:n]
    return wl.request[order], wl.work[order].astype(np.float64)


def replay(spec: str, n_hosts: int, request, work, load: float, seed: int, compiled: bool = True):
    """Place the stream one workload at a time; returns (seconds in place(), seconds in all,
    workloads placed)."""
    placer = build_placer(spec)
    placer.compiled = compiled
    capacity = np.tile(np.array(HOST), (n_hosts, 1))
    free, up = capacity.copy(), np.ones(n_hosts, bool)
    # Poisson arrivals at the rate that keeps load x the cluster's cores busy on average.
    rate = load * n_hosts * HOST[0] / float(np.mean(request[:, 0] * work))
    arrival = np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, len(request)))
    leaving: list[tuple[float, int, int]] = []
    in_place, placed = 0.0, 0
    began = time.perf_counter()
    for i, t in enumerate(arrival.tolist()):
        while leaving and leaving[0][0] <= t:
            _, j, h = heapq.heappop(leaving)
            free[h] += request[j]
        one = request[i : i + 1]
        tick = time.perf_counter()
        h = int(placer.place(capacity, free, up, one)[0])
        in_place += time.perf_counter() - tick
        if h >= 0:
            placed += 1
            heapq.heappush(leaving, (t + float(work[i]), i, h))
    return in_place, time.perf_counter() - began, placed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, nargs="+", default=[10_000, 250])
    parser.add_argument("--load", type=float, default=0.7, help="target share of cores in use")
    parser.add_argument("--placers", nargs="+", default=["best-fit", "first-fit"])
    parser.add_argument("--reference", type=int, default=2000, help="workloads, numpy path")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    request, work = real_components(args.workloads, args.seed)
    print(
        f"{len(request):,} real components, mean request {request.mean(axis=0).round(2)} cores/GiB"
    )
    warm = request[:1], work[:1]
    print(f"{'placer':<12} {'hosts':>7} {'placed':>9} {'decisions/s':>12} {'with replay':>12}")
    for n_hosts in args.hosts:
        for spec in args.placers:
            replay(spec, n_hosts, *warm, args.load, args.seed)  # compile / load numba's cache
            in_place, total, placed = replay(spec, n_hosts, request, work, args.load, args.seed)
            target = "   (target >= 20,000)" if spec == "best-fit" and n_hosts == 10_000 else ""
            print(
                f"{spec:<12} {n_hosts:>7,} {placed:>9,} {len(request) / in_place:>12,.0f} "
                f"{len(request) / total:>12,.0f}{target}"
            )
        if args.reference:
            sub = request[: args.reference], work[: args.reference]
            in_place, _, _ = replay("best-fit", n_hosts, *sub, args.load, args.seed, False)
            print(f"{'(numpy ref)':<12} {n_hosts:>7,} {'':>9} {args.reference / in_place:>12,.0f}")


if __name__ == "__main__":
    main()
