"""The Kubernetes Vertical Pod Autoscaler (VPA) recommender and updater as a shaping controller.

What VPA does. The recommender keeps, per *aggregate* (in Kubernetes: one container name under one
VPA object, pooled over all its pods), two decaying histograms: every CPU usage sample, each with
the same weight (0.1), and one memory sample per container per 24 h aggregation interval, the
interval's peak. Sample weights halve every 24 h of sample age. From them it recommends, per
resource,

    target = p90 * 1.15,   lower = p50 * 1.15 * (1 + 0.001/c)^-2,   upper = p95 * 1.15 * (1 + 1/c)

where ``c`` is the confidence, the history length in days, ``min(last - first sample, samples
observed)``: with little history the bounds open wide ([0, inf) with one sample). All three are
raised to the minimums (25 millicores, 250 MiB) and then capped by the container policy
(``maxAllowed``). An out-of-memory kill adds a memory peak of ``max(m + 100 MiB, 1.2 m)``, ``m``
the larger of the memory request and the interval's usage peak. The updater changes a pod when a
container's request is outside ``[lower, upper]`` for some resource, or when the pod has lived
12 h and its requests differ from the targets by at least 10 % (sum of relative differences over
resources), and then sets every resource to the target; the admission controller sets a new pod's
requests to the target when a recommendation exists.

What we mirror: all of the above, with VPA's defaults (the constructor's defaults), read from
``pkg/recommender/model/aggregations_config.go`` (5 % bucket growth, 24 h half-lives, 24 h memory
interval x 8, OOM bump 1.2 and 100 MiB, min sample weight 0.1, epsilon 1e-4),
``model/container.go`` (peak per interval, OOM sample), ``model/aggregate_container_state.go``
(CPU sample weight), ``util/histogram.go`` and ``util/histogram_options.go`` (exponential buckets
from 0.01 core and 1e7 bytes up to 1000 cores and 1e12 bytes, 176 each; some upstream versions start
CPU at 0.001 core: ``cpu_first_bucket``; a percentile is the *end* of the bucket where the
cumulative weight first reaches it),
``util/decaying_histogram.go`` (weights stored relative to a reference time, a multiple of the
half-life, renormalised when they reach 2^100), ``logic/estimator.go`` and
``logic/recommender.go`` (percentiles, 15 % margin, confidence multipliers, minimums) and
``pkg/updater/priority/`` (the update rules: outside the bounds, or 12 h and 10 %).

CPU sample weight. aggregate_container_state.go's comment says CPU samples weigh the container's
CPU request (at least 0.1 core), so that raising the request makes older history fade (PR #750,
2018). That never took effect: the request on a CPU sample is always zero when it reaches the
aggregate (reported for v1.3.0 and traced to the move from per-pod to per-label-set aggregation,
PR #815), so every CPU sample has weighed the minimum, 0.1 (kubernetes/autoscaler issue #7818,
2025; upstream has since dropped the request from samples, and container_test.go expects the
constant weight). We do the same (``cpu_sample_weight="constant"``).
``cpu_sample_weight="request"`` weighs each sample by ``max(allocation, min_sample_weight)``, the
documented intent, kept to compare against. The two differ once the allocation has changed
(tests/shaping/test_vpa_rise.py): after a shrink, samples taken before it (at the full request)
outweigh those taken after it, so a rise in demand soon after the shrink is followed later (seen
in full, a rise half a day after the shrink is covered in 3.2 h instead of 1.2 h); but where
usage is capped at the allocation, as in our simulator, each step of a long climb weighs more
than the last, so request weighting climbs faster (0.2 to 1 core after 8 days at 0.2: 20.5 h
instead of 33 h; constant weights take 3.7 h per ~20 % step).

Where we differ, and why:

- Aggregation. A component is one container in one pod, and by default each component is its own
  aggregate (``aggregate="component"``): the shaping paper shapes components one by one. The state
  follows the component id, which is stable across restarts, as a VPA aggregate outlives its pods.
  ``aggregate="app"`` pools all components of an application instead, as one VPA object over a
  Deployment or Job pools its replicas; memory peaks stay per container either way, as in VPA.
- Applying. Our simulator resizes in place (like Kubernetes in-place pod resize and VPA's
  ``InPlaceOrRecreate`` mode), so an update is a resize, never an eviction, and nothing stops
  several updates in one tick (no disruption budget). A component seen for the first time since it
  (re)started is handled as the admission controller handles a new pod: set to the target.
- Allocation. The allocation we set is both the request and the hard limit (memory above it is an
  out-of-memory failure), as with our other controllers and a Guaranteed-QoS pod.
- maxAllowed = request. A component's usage never exceeds its original request in our workloads,
  so the original request is its ``maxAllowed``: targets and bounds are capped there, as VPA's
  capping processor caps all three.
- Sampling. We see one sample per monitor tick (300 s for the shipped shapes) instead of one per
  minute, timestamped at the tick where it was observed. VPA's confidence counts samples assuming
  one a minute; we count the seconds each sample covers instead (the time between our calls), so
  that c stays "days of history". CPU usage is the throttled usage, as cAdvisor reports it.
- The OOM sample's ``m`` is the component's memory allocation when it was killed (what VPA reads
  from the pod spec; it cannot see demand past the limit); ``oom_basis="demand"`` uses the demand
  the simulator reports instead, information a real cluster does not have.
- Memory windows follow the component id across restarts: in Kubernetes an OOM-killed
  container restarts in its pod and keeps its ContainerState (and interval). A peak replaces the
  interval's peak whenever it is larger; container.go also requires the old peak to be non-zero,
  which never matters for real containers (working sets are never zero) but would make a
  component of our traces whose interval began at zero memory ignore its OOMs for a day.
- No integer rounding of millicores or bytes, no checkpoints, no history provider.
- Giving up. VPA keeps resizing a container however often it is OOM-killed; a batch application
  whose memory peaks come back less often than its decaying histogram remembers them would then
  fail and restart forever. Like the shaping paper's controllers, we stop resizing (back to the
  request) an application that failed, or a component that ran out of memory, ``max_failures``
  times (None: never give up, as upstream). A Kubernetes Job would give up on it altogether
  after its ``backoffLimit``.

State. Aggregates live in slots of (K, B) float64 histograms (B = 176 buckets for both resources
with VPA's options), found through a dense key -> slot array; freed slots go on a free list. A slot
is freed once its key has not run for the memory aggregation window (8 days), as VPA garbage-
collects aggregates without samples for that long, and, with per-component aggregates, as soon as
its component completes (it only runs again if its application fails later, and then starts
without history, as a new pod of a new container would): K stays near the number of components
running or waiting to be restarted. Memory use is ~3 KB per live aggregate plus ~60 bytes per
component id seen.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.component import Component
from reclaim.core.types import CPU, MEM, Decisions, R
from reclaim.core.view import ClusterView
from reclaim.registry import register
from reclaim.shaping.vpa_recommender import (
    DecayingHistograms,
    estimate,
    grown,
    recommend_and_update,
)

GIB = float(2**30)
#: Histogram ranges (aggregations_config.go): CPU up to 1000 cores, memory up to 1e12 bytes.
CPU_MAX = 1000.0
MEM_MAX = 1e12 / GIB


# ---------------------------------------------------------------------------- the controller
@register("controller", "vpa")
class VerticalPodAutoscaler(Component):
    """VPA's recommender plus its updater's rules, applied by in-place resize (module docstring).

    Settings (defaults are VPA's): ``aggregate`` "component" or "app"; percentiles of the target
    and bounds; ``safety_margin`` (fraction); ``min_cpu`` cores and ``min_mem`` GiB (VPA's pod
    minimums, 25 millicores and 250 MiB); half-lives, the memory aggregation interval and its
    count, the confidence interval (s); histogram ``bucket_growth`` and first bucket sizes (cores,
    GiB; VPA: 0.01 core and 1e7 bytes); ``min_sample_weight``, the weight of a CPU sample;
    ``cpu_sample_weight`` "constant" (VPA as it runs: every CPU sample weighs
    ``min_sample_weight``) or "request" (``max(CPU allocation, min_sample_weight)``, what
    aggregate_container_state.go's comment intends; module docstring); ``oom_bump_ratio`` and
    ``oom_min_bump`` (GiB; VPA: 100 MiB); ``oom_basis`` "allocation" (VPA) or "demand";
    ``update_threshold`` and ``pod_lifetime_threshold_s``, the updater's 10 % / 12 h rule;
    ``min_samples``: samples an aggregate needs before its recommendation is used. 1 is VPA's own
    behaviour (a recommendation exists from the first sample); its confidence multipliers are the
    real grace: the bounds are [0, inf) with one sample and the upper bound is ~290x the p95
    after two samples 5 minutes apart, so only the admission of a restarted component acts on a
    short history.
    """

    __capabilities__ = ControllerCapabilities(needs_forecast=False)

    def __init__(
        self,
        aggregate: str = "component",
        target_percentile: float = 0.9,
        lower_percentile: float = 0.5,
        upper_percentile: float = 0.95,
        safety_margin: float = 0.15,
        min_cpu: float = 0.025,
        min_mem: float = 250 / 1024,
        cpu_half_life_s: float = 86400.0,
        mem_half_life_s: float = 86400.0,
        mem_interval_s: float = 86400.0,
        mem_interval_count: int = 8,
        confidence_interval_s: float = 86400.0,
        bucket_growth: float = 0.05,
        cpu_first_bucket: float = 0.01,
        mem_first_bucket: float = 1e7 / GIB,
        min_sample_weight: float = 0.1,
        cpu_sample_weight: str = "constant",
        oom_bump_ratio: float = 1.2,
        oom_min_bump: float = 100 / 1024,
        oom_basis: str = "allocation",
        update_threshold: float = 0.1,
        pod_lifetime_threshold_s: float = 12 * 3600.0,
        min_samples: int = 1,
        max_failures: int | None = 3,
    ) -> None:
        self.aggregate = aggregate
        self.target_percentile = target_percentile
        self.lower_percentile = lower_percentile
        self.upper_percentile = upper_percentile
        self.safety_margin = safety_margin
        self.min_cpu = min_cpu
        self.min_mem = min_mem
        self.cpu_half_life_s = cpu_half_life_s
        self.mem_half_life_s = mem_half_life_s
        self.mem_interval_s = mem_interval_s
        self.mem_interval_count = mem_interval_count
        self.confidence_interval_s = confidence_interval_s
        self.bucket_growth = bucket_growth
        self.cpu_first_bucket = cpu_first_bucket
        self.mem_first_bucket = mem_first_bucket
        self.min_sample_weight = min_sample_weight
        self.cpu_sample_weight = cpu_sample_weight
        self.oom_bump_ratio = oom_bump_ratio
        self.oom_min_bump = oom_min_bump
        self.oom_basis = oom_basis
        self.update_threshold = update_threshold
        self.pod_lifetime_threshold_s = pod_lifetime_threshold_s
        self.min_samples = min_samples
        self.max_failures = max_failures

    # ------------------------------------------------------------------ learned state
    def _setup(self) -> None:
        if self.aggregate not in ("component", "app"):
            raise ValueError(f"aggregate must be 'component' or 'app', not {self.aggregate!r}")
        if self.oom_basis not in ("allocation", "demand"):
            raise ValueError(f"oom_basis must be 'allocation' or 'demand', not {self.oom_basis!r}")
        if self.cpu_sample_weight not in ("constant", "request"):
            raise ValueError(
                f"cpu_sample_weight must be 'constant' or 'request', not {self.cpu_sample_weight!r}"
            )
        if not self.bucket_growth > 0:
            raise ValueError(f"bucket_growth must be positive, not {self.bucket_growth!r}")
        ratio = 1.0 + self.bucket_growth
        eps = 0.001 * self.min_sample_weight  # aggregations_config.go's epsilon
        qs = np.array([self.lower_percentile, self.target_percentile, self.upper_percentile])
        k = 1024
        # Aggregates, one slot each: histograms and the history that sets the confidence.
        self.cpu_ = DecayingHistograms(
            k, self.cpu_first_bucket, ratio, CPU_MAX, self.cpu_half_life_s, eps, qs
        )
        self.mem_ = DecayingHistograms(
            k, self.mem_first_bucket, ratio, MEM_MAX, self.mem_half_life_s, eps, qs
        )
        self.agg_key_ = np.full(k, -1, np.int64)
        self.agg_first_ = np.full(k, np.nan)  # first CPU sample (s)
        self.agg_last_ = np.full(k, np.nan)  # last CPU sample (s)
        self.agg_count_ = np.zeros(k, np.int64)  # CPU samples
        self.agg_observed_ = np.zeros(k)  # seconds those samples cover
        self.agg_seen_ = np.zeros(k)  # last time (s) a component of the aggregate ran
        self.free_ = np.arange(k - 1, -1, -1, dtype=np.int64)  # free slots, a stack
        self.free_top_ = k
        self.slot_of_ = np.full(0, -1, np.int64)  # key (component or app id) -> slot
        # Per component id: its container's memory window (container.go) and what an OOM record
        # needs after the row is gone.
        self.win_end_ = np.full(0, np.nan)  # end of the memory aggregation interval (s)
        self.mem_peak_ = np.zeros(0)  # usage peak in that interval (GiB)
        self.oom_peak_ = np.zeros(0)  # OOM-bumped peak in that interval (GiB)
        self.alloc_mem_ = np.zeros(0)  # memory allocation we left it with (GiB)
        self.req_mem_ = np.zeros(0)  # its original memory request, maxAllowed (GiB)
        self.key_of_comp_ = np.full(0, -1, np.int64)
        self.comp_time_ = np.full(0, np.nan)  # our last call at which it ran (s)
        # Per workload row: which incarnation (component, start) ran there at our last call.
        self.row_time_ = np.full(0, np.nan)
        self.row_comp_ = np.full(0, -1, np.int64)
        self.row_start_ = np.full(0, np.nan)
        self.prev_comps_ = np.empty(0, np.int64)  # components and apps running at our last call
        self.prev_apps_ = np.empty(0, np.int64)
        self.last_now_ = np.nan
        self.failures_: NDArray[np.int32] | None = None
        self.last_gc_ = -np.inf

    def _fit_sizes(self, n_rows: int, max_comp: int, max_key: int) -> None:
        """Grow the per-row, per-component and per-key arrays to cover the indices in use."""
        if len(self.row_time_) < n_rows:
            self.row_time_ = grown(self.row_time_, n_rows, np.nan)
            self.row_comp_ = grown(self.row_comp_, n_rows, -1)
            self.row_start_ = grown(self.row_start_, n_rows, np.nan)
        if len(self.win_end_) <= max_comp:
            n = max_comp + 1
            self.win_end_ = grown(self.win_end_, n, np.nan)
            self.mem_peak_ = grown(self.mem_peak_, n, 0.0)
            self.oom_peak_ = grown(self.oom_peak_, n, 0.0)
            self.alloc_mem_ = grown(self.alloc_mem_, n, 0.0)
            self.req_mem_ = grown(self.req_mem_, n, 0.0)
            self.key_of_comp_ = grown(self.key_of_comp_, n, -1)
            self.comp_time_ = grown(self.comp_time_, n, np.nan)
        self.slot_of_ = grown(self.slot_of_, max_key + 1, -1)

    def _slots(self, keys: NDArray[np.int64], now: float) -> NDArray[np.int64]:
        """(n,) slot of each key, opening empty aggregates for keys not tracked yet."""
        slots = self.slot_of_[keys]
        missing = slots < 0
        if missing.any():
            new = np.unique(keys[missing])
            need = len(new)
            if self.free_top_ < need:
                self._grow_slots(need)
            taken = self.free_[self.free_top_ - need : self.free_top_][::-1]
            self.free_top_ -= need
            self.slot_of_[new] = taken
            self.agg_key_[taken] = new
            self.agg_first_[taken] = np.nan
            self.agg_last_[taken] = np.nan
            self.agg_count_[taken] = 0
            self.agg_observed_[taken] = 0.0
            self.agg_seen_[taken] = now
            slots = self.slot_of_[keys]
        return slots

    def _grow_slots(self, need: int) -> None:
        old = len(self.agg_key_)
        size = max(2 * old, old + need)
        self.cpu_.grow(size)
        self.mem_.grow(size)
        self.agg_key_ = grown(self.agg_key_, size, -1)
        self.agg_first_ = grown(self.agg_first_, size, np.nan)
        self.agg_last_ = grown(self.agg_last_, size, np.nan)
        self.agg_count_ = grown(self.agg_count_, size, 0)
        self.agg_observed_ = grown(self.agg_observed_, size, 0.0)
        self.agg_seen_ = grown(self.agg_seen_, size, 0.0)
        free = np.empty(size, np.int64)
        free[: self.free_top_] = self.free_[: self.free_top_]
        free[self.free_top_ : self.free_top_ + size - old] = np.arange(size - 1, old - 1, -1)
        self.free_, self.free_top_ = free, self.free_top_ + size - old

    def _forget(self, now: float) -> None:
        """Free the slots of aggregates that have not run for the memory aggregation window."""
        window = self.mem_interval_s * self.mem_interval_count
        self._release(np.flatnonzero((self.agg_key_ >= 0) & (now - self.agg_seen_ >= window)))

    def _release(self, stale: NDArray[np.int64]) -> None:
        """Free aggregate slots ``stale`` (distinct) and forget their keys."""
        if len(stale) == 0:
            return
        self.slot_of_[self.agg_key_[stale]] = -1
        self.agg_key_[stale] = -1
        self.cpu_.clear(stale)
        self.mem_.clear(stale)
        self.free_[self.free_top_ : self.free_top_ + len(stale)] = stale
        self.free_top_ += len(stale)

    # ------------------------------------------------------------------ samples
    def _add_memory(
        self,
        comps: NDArray[np.int64],
        slots: NDArray[np.int64],
        value: NDArray,
        t: float,
        oom: bool,
    ) -> None:
        """Memory samples (GiB) of distinct components at time ``t`` (s), container.go's rule:
        one peak per container per interval, stamped at the interval's end; a larger sample in
        the same interval replaces the peak; a sample past the interval opens the next one (the
        first sample of a component opens its first interval)."""
        interval = self.mem_interval_s
        end = self.win_end_[comps]
        end = np.where(np.isnan(end), t, end)  # first sample: its interval starts now
        inside = t < end
        peak = np.maximum(self.mem_peak_[comps], self.oom_peak_[comps])
        # container.go also requires the old peak to be non-zero; a zero peak is in the histogram
        # all the same, and with that condition a container whose interval began at zero usage
        # ignores its OOMs until the next interval (our traces have zero memory samples).
        replace = inside & (value > peak)
        if replace.any():
            self.mem_.remove(slots[replace], peak[replace], self.mem_.factor(end[replace]))
        roll = ~inside
        end = np.where(roll, end + np.floor((t - end) / interval) * interval + interval, end)
        self.win_end_[comps] = end
        self.mem_peak_[comps[roll]] = 0.0
        self.oom_peak_[comps[roll]] = 0.0
        add = replace | roll
        if add.any():
            self.mem_.add(slots[add], value[add], self.mem_.factor(end[add]))
            (self.oom_peak_ if oom else self.mem_peak_)[comps[add]] = value[add]

    def _record_ooms(self, comps: NDArray[np.int64], demand: NDArray, t: float) -> None:
        """container.go RecordOOM: a memory sample of max(m + min bump, ratio * m), at most the
        request, m = max(memory allocation (or demand) at the kill, the interval's usage peak)."""
        comps = np.asarray(comps, np.int64)
        demand = np.asarray(demand, np.float64)
        known = comps < len(self.key_of_comp_)
        known[known] = self.key_of_comp_[comps[known]] >= 0
        comps, demand = comps[known], demand[known]
        slots = self.slot_of_[self.key_of_comp_[comps]]
        comps, demand, slots = comps[slots >= 0], demand[slots >= 0], slots[slots >= 0]
        if len(comps) == 0:
            return
        used = demand if self.oom_basis == "demand" else self.alloc_mem_[comps]
        used = np.maximum(used, self.mem_peak_[comps])
        used = np.minimum(used, self.req_mem_[comps])
        bumped = np.maximum(used + self.oom_min_bump, used * self.oom_bump_ratio)
        self._add_memory(comps, slots, np.minimum(bumped, self.req_mem_[comps]), t, oom=True)

    def _add_samples(
        self, view: ClusterView, rows: NDArray[np.int64], comps, slots, t: float, covers: float
    ) -> None:
        """The usage observed at time ``t`` of ``rows`` (one CPU and one memory sample each),
        each sample covering ``covers`` seconds of history."""
        wl = view.workloads
        used = wl.used[rows].astype(np.float64)
        if self.cpu_sample_weight == "request":
            # the weighting aggregate_container_state.go's comment describes (module docstring)
            weight = np.maximum(wl.limit[rows, CPU].astype(np.float64), self.min_sample_weight)
        else:
            weight = self.min_sample_weight  # what upstream does (issue #7818)
        self.cpu_.add(slots, used[:, CPU], weight * self.cpu_.factor(t))
        np.add.at(self.agg_count_, slots, 1)
        np.add.at(self.agg_observed_, slots, covers)
        self.agg_first_[slots] = np.fmin(self.agg_first_[slots], t)
        self.agg_last_[slots] = t
        self._add_memory(comps, slots, used[:, MEM], t, oom=False)

    # ------------------------------------------------------------------ recommendation
    def _estimate(self, slots: NDArray[np.int64]) -> NDArray[np.float64]:
        """(n, 3, R) lower bound, target, upper bound of each aggregate slot (cores, GiB): the
        percentiles plus margin, confidence-scaled, raised to the minimums; not capped."""
        pct = np.empty((len(slots), 3, R))
        pct[:, :, CPU] = self.cpu_.percentiles(slots)
        pct[:, :, MEM] = self.mem_.percentiles(slots)
        lifespan = self.agg_last_[slots] - self.agg_first_[slots]
        confidence = np.minimum(lifespan, self.agg_observed_[slots]) / self.confidence_interval_s
        return estimate(pct, confidence, self.safety_margin, np.array([self.min_cpu, self.min_mem]))

    def recommendation(self, keys: NDArray[np.integer]) -> NDArray[np.float64]:
        """(n, 3, R) lower bound, target and upper bound (cores, GiB) of aggregates ``keys``
        (component ids, or app ids with ``aggregate="app"``), before capping at a request; NaN
        where there is no recommendation (fewer than ``min_samples`` samples, or unknown key)."""
        keys = np.asarray(keys, np.int64).reshape(-1)
        out = np.full((len(keys), 3, R), np.nan)
        if not hasattr(self, "agg_key_"):
            return out
        inside = keys < len(self.slot_of_)
        slots = np.full(len(keys), -1, np.int64)
        slots[inside] = self.slot_of_[keys[inside]]
        ok = slots >= 0
        ok[ok] = self.agg_count_[slots[ok]] >= max(self.min_samples, 1)
        if ok.any():
            out[ok] = self._estimate(slots[ok])
        return out

    # ------------------------------------------------------------------ the tick
    def decide(self, view: ClusterView, forecast: object = None) -> Decisions:
        """Learn from the usage and OOMs observed at the last tick, then resize the running rows
        VPA's updater (or admission controller, for rows new since the last call) would change."""
        if not hasattr(self, "agg_key_"):
            self._setup()
        now = float(view.now)
        wl = view.workloads
        rows = np.asarray(view.running, np.int64)
        comps = wl.component[rows].astype(np.int64)
        apps = wl.app[rows].astype(np.int64)
        keys = comps if self.aggregate == "component" else apps
        ooms, oom_demand = view.recent_ooms
        ooms = np.asarray(ooms, np.int64)
        max_comp = max(int(comps.max(initial=-1)), int(ooms.max(initial=-1)))
        self._fit_sizes(len(wl), max_comp, int(keys.max(initial=-1)))
        prev = self.last_now_
        fresh = not np.isnan(prev) and now > prev  # a new tick: there is something to learn

        # Rows running the same incarnation as at our last call were observed at that tick.
        same = (
            (self.row_time_[rows] == prev)
            & (self.row_comp_[rows] == comps)
            & (self.row_start_[rows] == wl.start[rows])
        )
        if len(ooms):
            same &= ~np.isin(comps, ooms)
        failures = np.asarray(view.app_failures)
        compare = self.failures_ is not None and len(self.failures_) == len(failures)
        if compare:
            # an application failed and restarted at that very instant: new incarnations
            same &= failures[apps] == self.failures_[apps]
        self.comp_time_[comps] = now
        if self.aggregate == "component" and len(self.prev_comps_):
            # Components gone since the last call neither out of memory nor with their
            # application completed: their aggregates will not be asked for again (unless the
            # application fails later and reruns them, and then they start afresh, as new pods).
            gone = self.comp_time_[self.prev_comps_] != now
            if len(ooms):
                gone &= ~np.isin(self.prev_comps_, ooms)
            if compare:
                prev_apps = self.prev_apps_
                gone &= failures[prev_apps] == self.failures_[prev_apps]
            done = self.slot_of_[self.prev_comps_[gone]]
            self._release(done[done >= 0])
        self.failures_ = failures.copy()
        self.prev_comps_, self.prev_apps_ = comps, apps

        if fresh and len(ooms):
            self._record_ooms(ooms, oom_demand, prev)
        new = ~same
        self.key_of_comp_[comps] = keys
        self.req_mem_[comps] = wl.request[rows, MEM]
        slots = self._slots(keys, now)
        self.agg_seen_[slots] = now
        if fresh:
            seen = np.flatnonzero(same)
            if len(seen):
                self._add_samples(view, rows[seen], comps[seen], slots[seen], prev, now - prev)

        limit = wl.limit[rows].astype(np.float64)
        picked, resize_limit = self._updates(view, rows, slots, new, limit, now)
        if self.max_failures is not None:
            picked, resize_limit = self._give_up(view, rows, picked, resize_limit)
        limit[picked] = resize_limit

        self.alloc_mem_[comps] = limit[:, MEM]
        self.row_time_[rows] = now
        self.row_comp_[rows] = comps
        self.row_start_[rows] = wl.start[rows]
        self.last_now_ = now
        if now - self.last_gc_ >= 3600.0:  # hourly is plenty against an 8-day window
            self._forget(now)
            self.last_gc_ = now
        return Decisions(resize_rows=rows[picked], resize_limit=resize_limit)

    def _give_up(self, view, rows, picked, resize_limit):
        """Rows whose application failed, or whose component ran out of memory, ``max_failures``
        times go back to their request and stay there; other picks are kept."""
        wl = view.workloads
        failed = (np.asarray(view.app_failures)[wl.app[rows]] >= self.max_failures) | (
            np.asarray(view.component_ooms)[wl.component[rows]] >= self.max_failures
        )
        if not failed.any():
            return picked, resize_limit
        keep = ~failed[picked]
        restore = np.flatnonzero(failed & np.any(wl.limit[rows] != wl.request[rows], axis=1))
        order = np.argsort(np.concatenate([picked[keep], restore]), kind="stable")
        limits = np.concatenate([resize_limit[keep], wl.request[rows[restore]]])
        return np.concatenate([picked[keep], restore])[order], limits[order]

    def _updates(self, view, rows, slots, new, limit, now):
        """Which of ``rows`` to resize (indices into ``rows``) and their new limits (n, R) float32:
        new rows (admission) and rows the updater picks, set to the target capped at the request,
        where that changes the limit."""
        wl = view.workloads
        ready = np.flatnonzero(self.agg_count_[slots] >= max(self.min_samples, 1))
        if len(ready) == 0:
            return ready, np.zeros((0, R), np.float32)
        got = slots[ready]
        cpu, mem = self.cpu_, self.mem_
        # a histogram is empty only if all its samples were removed: no recommendation then
        got_ok = (cpu.total[got] > 0) & (mem.total[got] > 0)
        ready, got = ready[got_ok], got[got_ok]
        update, target32 = recommend_and_update(
            got,
            cpu.idx,
            cpu.ends,
            mem.idx,
            mem.ends,
            self.agg_first_,
            self.agg_last_,
            self.agg_observed_,
            wl.request[rows[ready]].astype(np.float64),
            limit[ready],
            new[ready],
            now - wl.start[rows[ready]],
            float(self.safety_margin),
            float(self.confidence_interval_s),
            float(self.min_cpu),
            float(self.min_mem),
            float(self.update_threshold),
            float(self.pod_lifetime_threshold_s),
        )
        return ready[update], target32[update]
