"""Hand-built VM tables and predictors for the pool replay, LAS/LAVA and LARS tests."""

from __future__ import annotations

import numpy as np
import polars as pl

from reclaim.lifetime.vms import VmTable

HOUR = 3600.0


def vm_table(arrival, exit, cpu, mem=None, gpu=None, window=None) -> VmTable:
    """A VmTable of n VMs (rows in the given order); ``mem`` defaults to 1 GiB, ``gpu`` to 0."""
    arrival = np.asarray(arrival, np.float64)
    exit = np.asarray(exit, np.float64)
    n = len(arrival)
    request = np.zeros((n, 3), np.float32)
    request[:, 0] = cpu
    request[:, 1] = 1.0 if mem is None else mem
    request[:, 2] = 0.0 if gpu is None else gpu
    window = window or (
        float(arrival.min()),
        float(np.nanmax(np.where(np.isfinite(exit), exit, 0))),
    )
    return VmTable(
        id=np.array([f"vm{i}" for i in range(n)]),
        family=np.full(n, "CN"),
        arrival=arrival,
        exit=exit,
        left_censored=arrival <= window[0],
        right_censored=~np.isfinite(exit),
        request=request,
        features=pl.DataFrame({"row": np.arange(n)}),
        window=window,
    )


class Oracle:
    """True remaining lifetime (inf for VMs that never leave); counts its calls."""

    def __init__(self, vms: VmTable) -> None:
        self.life = vms.exit - vms.arrival
        self.calls = 0

    def remaining(self, vms, uptime):
        self.calls += 1
        return np.maximum(self.life[vms] - uptime, 0.0)


class Guess:
    """remaining = max(guess - uptime, 0) from a fixed (possibly wrong) lifetime per VM; with
    ``later`` given, VMs up longer than 0 are repredicted as ``later`` seconds still to live."""

    def __init__(self, guess, later=None) -> None:
        self.guess = np.asarray(guess, np.float64)
        self.later = None if later is None else np.asarray(later, np.float64)

    def remaining(self, vms, uptime):
        out = np.maximum(self.guess[vms] - uptime, 0.0)
        if self.later is not None:
            out = np.where(uptime > 0, self.later[vms], out)
        return out


def random_table(n: int, seed: int = 0, days: float = 3.0) -> VmTable:
    """``n`` VMs over ``days``: a tenth left-censored, a tenth never leaving, lifetimes from
    minutes to days, requests of 1..32 cores and 2..8 GiB per core."""
    rng = np.random.default_rng(seed)
    end = days * 86400
    arrival = np.sort(rng.uniform(0, end, n))
    arrival[: n // 10] = 0.0
    life = np.exp(rng.uniform(np.log(300), np.log(4 * 86400), n))
    exit = arrival + life
    exit[rng.random(n) < 0.1] = np.inf
    cpu = rng.choice([1, 2, 4, 8, 16, 32], n)
    mem = cpu * rng.choice([2, 4, 8], n)
    return vm_table(arrival, exit, cpu, mem, window=(0.0, end))
