"""The workload of a live run: the shaping paper's section-5 deployment, from the shipped traces.

Where each setting comes from (docs/live.md has the reasoning and the numbers):

- From the paper (section 5): 100 applications, 60 % elastic, inter-arrival times
  Normal(120 s, 40 s), a 1-minute monitor period, a 10-minute grace period, GP forecasts with the
  pessimistic policy, K1 = 5 %, K2 = 3, FIFO admission; the host is one server of its testbed
  (8 cores, 64 GB). One server is the fewest that fits every sampled application.
- From the traces, as in every simulation (``reclaim.workload.builder``): applications are
  Alibaba 2017 jobs, components their instances with the instances' requests and spans as work,
  usage shapes from the shipped usage samples calibrated to Google 2019 tasks' usage/limit
  ratios. Applications keep their first 8 components (``max_components_per_app``): the paper's
  applications have 3 core components plus a flavour-dependent number of elastic ones and 8-32 GB
  of memory, and 8 components give a median of 5.5 GiB and a largest of 22 GiB here.
- Chosen for this machine, and stated: time runs ``time_factor`` times faster than in the trace,
  and each resource is scaled so that the 8-core, 64 GB server becomes ``live_cores`` cores and
  ``live_mem_gib`` GiB of a parent cgroup.

The usage shapes are sampled every 5 minutes; they are held for five 1-minute samples so that the
simulator's monitor tick equals the agent's period and one workload runs both ways unchanged.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from reclaim.core.grouped import GroupedArray
from reclaim.errors import ReclaimError
from reclaim.workload.builder import (
    BuildReport,
    WorkloadSpec,
    build_workload,
    default_pairing_store,
    default_stores,
)
from reclaim.workload.model import Workload

#: The paper's section-5 testbed server: 8 cores, 64 GB.
PAPER_HOST = (8.0, 64.0)


@dataclass
class LiveScenario:
    """Everything that defines the workload and its scaling; ``build`` makes the workload.

    n_apps, elastic_share, interarrival_mean_s, interarrival_std_s, period_s, grace_s, k1, k2:
    the paper's section 5. max_components_per_app: see the module docstring. host_cores,
    host_mem_gib: the simulated host (one testbed server). time_factor: trace seconds per wall
    second. live_cores, live_mem_gib: what the host becomes on this machine.
    """

    n_apps: int = 100
    seed: int = 0
    elastic_share: float = 0.6
    interarrival_mean_s: float = 120.0
    interarrival_std_s: float = 40.0
    max_components_per_app: int = 8
    period_s: float = 60.0
    grace_s: float = 600.0
    k1: float = 0.05
    k2: float = 3.0
    forecaster: str = "gp-exp"
    host_cores: float = PAPER_HOST[0]
    host_mem_gib: float = PAPER_HOST[1]
    time_factor: float = 20.0
    live_cores: float = 1.6
    live_mem_gib: float = 8.0

    def check(self) -> LiveScenario:
        for name in ("time_factor", "live_cores", "live_mem_gib", "host_cores", "host_mem_gib"):
            if not getattr(self, name) > 0:
                raise ReclaimError(f"{name} must be positive, got {getattr(self, name)}")
        if self.n_apps < 1:
            raise ReclaimError(f"n_apps must be at least 1, got {self.n_apps}")
        return self

    @property
    def hosts(self) -> str:
        """The simulated host in the simulator's ``COUNTxCORESgMEMg`` notation."""
        return f"1x{self.host_cores:g}c{self.host_mem_gib:g}g"

    @property
    def scale(self) -> np.ndarray:
        """(R,) live units per simulated unit: cores per core, GiB per GiB."""
        return np.array([self.live_cores / self.host_cores, self.live_mem_gib / self.host_mem_gib])

    def params(self) -> dict:
        return asdict(self)


def hold(workload: Workload, period_s: float) -> Workload:
    """The same workload with its shapes sampled every ``period_s`` (a divisor of its period):
    each sample held ``workload.period / period_s`` times, offsets moved with it."""
    ratio = workload.period / period_s
    times = int(round(ratio))
    if times < 1 or abs(ratio - times) > 1e-9:
        raise ReclaimError(
            f"the monitor period ({period_s:g} s) must divide the shapes' period "
            f"({workload.period:g} s)"
        )
    shapes = GroupedArray(
        np.repeat(workload.shapes.data, times, axis=0), workload.shapes.indptr * times
    )
    offset = (workload.shape_offset.astype(np.int64) * times).astype(np.int32)
    return replace(workload, shapes=shapes, shape_offset=offset, period=period_s)


def build(scenario: LiveScenario) -> tuple[Workload, BuildReport]:
    """The scenario's workload: sampled from the shipped stores, arrivals redrawn from the
    paper's Normal inter-arrival times (negative draws are redrawn), shapes held to the period."""
    scenario.check()
    jobs, shapes = default_stores()
    spec = WorkloadSpec(
        n_apps=scenario.n_apps,
        seed=scenario.seed,
        elastic_share=scenario.elastic_share,
        max_components_per_app=scenario.max_components_per_app,
    )
    workload, report = build_workload(spec, jobs, shapes, default_pairing_store())
    rng = np.random.default_rng([scenario.seed, 5])  # a stream of its own: arrivals
    gaps = rng.normal(scenario.interarrival_mean_s, scenario.interarrival_std_s, scenario.n_apps)
    while np.any(bad := gaps <= 0):
        gaps[bad] = rng.normal(scenario.interarrival_mean_s, scenario.interarrival_std_s, bad.sum())
    arrival = np.concatenate([[0.0], np.cumsum(gaps[1:])])
    workload = replace(workload, arrival=arrival)
    return hold(workload, scenario.period_s).validate(), report
