"""CORP's short-lived-job scenario built from real traces (Liu, Shen and Chen, section IV).

A :class:`CorpScenario` holds, as columns, the jobs to replay (when they arrive, how long they run,
what they request, what they demand slot by slot, their SLO), a disjoint set of training jobs for the
provisioners, and the VMs and PMs they run on. :func:`build_scenario` makes one from canonical trace
stores; everything random comes from one ``np.random.SeedSequence(seed)``, so a seed gives
bit-identical arrays.

Where each piece comes from, and what we chose:

- **Jobs** are Alibaba 2017 batch task instances (``jobs_store``; the paper replays Google tasks, its
  "jobs"). Tasks are read by :func:`reclaim.workload.builder.load_jobs` (jobs whose every task
  terminated; per-instance requests in cores, memory normalised to the largest machine times
  ``normalised_mem_gib``, by default 64 GiB, the paper's HP SL230 server; duration = ``end -
  create``, at least 1 s). A job is **one instance** of a task drawn uniformly among the kept tasks:
  the instances of a task are identical copies and the paper's unit is a single task; the task's
  instance count is kept in :attr:`JobSet.instances` for reference but not expanded.
- **Short-lived only.** The paper removes long-lived jobs without giving a cutoff, and says short
  jobs "run for seconds or minutes". We drop tasks longer than ``max_duration_s`` (default 1,800 s:
  30 minutes, 2.2 % of the sample's tasks) and tasks whose request fits no VM, and count both in
  :class:`ScenarioReport`. (With the paper's "maximum timeout of 5 minutes", 300 s, only 19 % of
  the kept tasks would outlive CORP's 2-minute DNN input window, against 33 % at 1,800 s; pass
  ``max_duration_s=300`` for the strict reading.)
- **Duration** in slots: ``ceil(duration / slot_s)``. It is the job's work: a job served in full
  advances one slot of work per slot (see :mod:`reclaim.corp.simulator`).
- **Demand per slot** comes from the real usage series of ``usage_stores`` (Google 2011 derived,
  Bitbrains) as fractions of their request, by :func:`reclaim.workload.shapes.load_shapes`
  (Google's percentages / 100, Bitbrains usage / provisioned; above 1 clipped to 1 and counted).
  Each job follows one series from a uniformly drawn time. Demand = fraction x request, cores and
  GiB. How the ~300 s samples become ``slot_s`` slots is ``resample``:

  * ``"hold"`` (default, :func:`resample_hold`): **sample-and-hold**. A Google 2011 sample is an
    *interval mean*: task_usage rows give the mean usage rate over a (mostly 300 s) measurement
    period, and the derived series sum them per 300 s; Bitbrains' 300 s monitoring samples are
    read the same way. Knowing only an interval's mean, the honest reading at a finer slot is
    that value held over the whole interval, so a slot inside interval k gets sample k and a slot
    straddling two intervals their overlap-weighted mean (each slot is the exact mean of the step
    function over it). Demand changes in jumps at interval boundaries.
  * ``"linear"`` (:func:`resample_linear`): a ramp between consecutive samples, placed at the
    samples' timestamps. It invents smooth transitions the data never showed: a lender's demand
    then barely rises above what it kept over a 1-minute window (300 jobs, 200 VMs, seed 0: no
    lender slowed for any method, against a few with hold). Kept for comparison.

  Neither invents fluctuation faster than 5 minutes: those stores hold none. The paper
  "transformed the remaining of the 5-minute trace into 10-second trace" without saying how.

  * ``"calibrated"`` (the shipped spec's setting, :mod:`reclaim.corp.fluctuation`): usage from
    one ``google2019-usage`` store (or raw task files), as fractions of each task's own limit,
    10-second slots that are means of ten 1-second draws from each 5-minute window's 1-second
    CPU percentiles (memory up to the window max), the draws as alike from second to second as
    Alibaba 2018's ~10-second samples show (window mean kept). ``"percentiles"``: one 1-second
    draw per slot, in random order; ``"window-hold"``: the same windows' means held.
  * ``pairing_store``: calibrate the Bitbrains / Google 2011 shapes to the usage/limit ratios of a
    store of real tasks (:func:`reclaim.workload.pairing.calibrate_shapes`); the Google 2019
    windows need none, their fractions already are real ratios.
- **Train / test split.** The series are split at random into two disjoint pools
  (``train_share``); the replayed jobs follow only test series, the ``n_train`` training jobs only
  training series. Durations and requests of both are drawn from the same task table: the
  provisioners learn from utilisation fractions, not from task ids.
- **Arrivals**: gaps between consecutive Alibaba 2017 job create times, sampled with replacement
  and stretched so that the arrivals span ``horizon_s`` (the workload builder's
  :func:`reclaim.workload.builder._arrivals`); job ``i`` arrives in slot ``floor(t_i / slot_s)``.
- **SLO**: a response-time threshold set "based on the execution time of a task in the trace"
  (section IV); the margin is not given, so ``threshold = duration x (1 + slo_slack)`` slots with
  ``slo_slack`` = 0.2 our choice.
- **Load.** ``ScenarioReport.offered_load`` states the jobs' requests x durations over the VMs'
  capacity x the arrival span, per resource; ``offered_load=x`` derives the span from a target
  (``horizon_s`` is then ignored). With Table II's cluster the shipped jobs offer about 2 % of
  it and never wait; the shipped spec shrinks the cluster instead (docs/corp.md).
- **VMs and PMs** (Table II: 30-50 PMs, 100-400 VMs): ``n_pms`` servers of ``pm_capacity``
  (default 16 cores, 64 GiB: the HP SL230 with two E5-2665 of the real-cluster runs), VM ``v`` on
  PM ``v mod n_pms``, each PM split evenly among its VMs (200 VMs on 40 PMs: 3.2 cores, 12.8 GiB).
- **Resources**: CPU and memory only; the traces carry no storage usage, so the paper's third axis
  is absent and eq. 2's weights 0.4 / 0.4 / 0.2 renormalise to 0.5 / 0.5 (``weights``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.core.types import R
from reclaim.corp.fluctuation import MODES, PercentileSlots, load_windows, window_positions
from reclaim.corp.metrics import paper_weights
from reclaim.errors import ReclaimError
from reclaim.traces.store import sample_path
from reclaim.workload.builder import _arrivals, load_jobs
from reclaim.workload.pairing import calibrate_shapes, measure_ratios
from reclaim.workload.shapes import ShapeSource, load_shapes

#: Sampling period of the shipped usage stores, s.
TRACE_PERIOD_S = 300.0
#: HP SL230 (2 x Xeon E5-2665, 64 GB), the paper's real-cluster server: cores, GiB.
SL230 = (16.0, 64.0)


@dataclass(frozen=True)
class JobSet:
    """Jobs as columns; job ``i``'s demand per slot of work is ``demand[i]`` (``duration[i]`` rows).

    submit_s: (N,) float64 s from the scenario start. duration: (N,) int64 slots of work.
    request: (N, R) float64 cores, GiB. demand: GroupedArray, data (sum duration, R) float64 cores,
    GiB, never above the request. threshold: (N,) float64 slots, the SLO on response time.
    task: (N,) int64 row of the task table. shape: (N,) int64 usage series followed.
    instances: (N,) int64 instances of the task in the trace.
    """

    submit_s: NDArray[np.float64]
    duration: NDArray[np.int64]
    request: NDArray[np.float64]
    demand: GroupedArray
    threshold: NDArray[np.float64]
    task: NDArray[np.int64]
    shape: NDArray[np.int64]
    instances: NDArray[np.int64]

    def __len__(self) -> int:
        return len(self.duration)

    def usage(self, resource: int) -> GroupedArray:
        """Demand of one resource as S univariate series (what a provisioner is fitted on)."""
        return GroupedArray(np.ascontiguousarray(self.demand.data[:, resource]), self.demand.indptr)

    @classmethod
    def from_profiles(
        cls,
        submit_s: ArrayLike,
        request: ArrayLike,
        profiles: Sequence[ArrayLike],
        slo_slack: float = 0.2,
    ) -> JobSet:
        """Jobs from hand-made demand profiles ((D_i, R) each, cores and GiB): for tests and small
        studies. task, shape and instances are set to -1, -1 and 1."""
        prof = [np.asarray(p, np.float64).reshape(-1, R) for p in profiles]
        n = len(prof)
        duration = np.array([len(p) for p in prof], np.int64)
        if n and duration.min() < 1:
            raise ReclaimError("every job needs at least one slot of demand")
        req = np.asarray(request, np.float64).reshape(n, R)
        return cls(
            submit_s=np.asarray(submit_s, np.float64).reshape(n),
            duration=duration,
            request=req,
            demand=GroupedArray.from_series(prof) if n else GroupedArray(np.zeros((0, R)), _ptr0()),
            threshold=duration * (1.0 + slo_slack),
            task=np.full(n, -1, np.int64),
            shape=np.full(n, -1, np.int64),
            instances=np.ones(n, np.int64),
        )


@dataclass(frozen=True)
class ScenarioReport:
    """What was kept and dropped while building a scenario.

    tasks_total: tasks of the jobs store's qualifying jobs; jobs_excluded: store jobs dropped by
    load_jobs, by reason. dropped_long: tasks longer than max_duration_s; dropped_too_big: short
    tasks whose request fits no VM; tasks_kept: the pool jobs are drawn from.
    series_train, series_test: usage series in each pool; series_too_short: series dropped for
    holding fewer samples than the longest job needs. shape_sources: per usage store, with
    clipped sample counts. offered_load: (R,) the replayed jobs' requests x durations over the
    VMs' capacity x the arrival span. usage_share: (R,) their demand over their requests, summed
    over slots. arrival_span_s: first to last arrival. usage_source: the google2019-usage store
    read (``resample="percentiles"`` / ``"window-hold"``), else "". clipped_slots: (R,) drawn
    slots above the request, clipped. pairing: the store the shapes were calibrated to, or "".
    """

    tasks_total: int
    jobs_excluded: dict[str, int]
    dropped_long: int
    dropped_too_big: int
    tasks_kept: int
    max_duration_s: float
    series_train: int
    series_test: int
    series_too_short: int
    arrival_scale: float
    shape_sources: list[ShapeSource] = field(default_factory=list)
    offered_load: tuple[float, ...] = ()
    usage_share: tuple[float, ...] = ()
    arrival_span_s: float = 0.0
    usage_source: str = ""
    clipped_slots: tuple[int, ...] = (0, 0)
    pairing: str = ""


@dataclass(frozen=True)
class CorpScenario:
    """The jobs to replay, the training jobs and the cluster.

    jobs, train: :class:`JobSet`. vm_capacity: (V, R) float64 cores, GiB. vm_pm: (V,) int32 PM of
    each VM. pm_capacity: (P, R) float64. slot_s: s per slot. weights: (R,) eq. 2 weights.
    report: :class:`ScenarioReport` (None for hand-made scenarios).
    """

    jobs: JobSet
    train: JobSet
    vm_capacity: NDArray[np.float64]
    vm_pm: NDArray[np.int32]
    pm_capacity: NDArray[np.float64]
    slot_s: float = 10.0
    weights: NDArray[np.float64] = field(default_factory=paper_weights)
    report: ScenarioReport | None = None


def _ptr0() -> NDArray[np.int64]:
    return np.zeros(1, np.int64)


def split_pms(n_vms: int, n_pms: int, pm_capacity: ArrayLike = SL230):
    """(vm_capacity (V, R), vm_pm (V,) int32, pm_capacity (P, R)): VM ``v`` on PM ``v mod P``,
    each PM's capacity split evenly among its VMs."""
    if n_vms < 1 or n_pms < 1 or n_vms < n_pms:
        raise ReclaimError(f"need at least one VM per PM, got {n_vms} VMs on {n_pms} PMs")
    pm = np.tile(np.asarray(pm_capacity, np.float64).reshape(1, R), (n_pms, 1))
    vm_pm = (np.arange(n_vms) % n_pms).astype(np.int32)
    per_pm = np.bincount(vm_pm, minlength=n_pms)
    return pm[vm_pm] / per_pm[vm_pm, None], vm_pm, pm


def resample_hold(
    values: GroupedArray,
    series: NDArray[np.integer],
    start_s: NDArray[np.floating],
    n_slots: NDArray[np.integer],
    period_s: float,
    slot_s: float,
) -> GroupedArray:
    """Sample-and-hold resampling of many series windows at once: each slot is the exact mean, over
    the slot, of the step function that holds sample ``k`` on ``[k period, (k + 1) period)``.

    values: GroupedArray of S series, data (n, K), one interval mean every ``period_s`` seconds.
    For each window ``i``: series ``series[i]``, starting ``start_s[i]`` seconds into it,
    ``n_slots[i]`` slots of ``slot_s`` seconds. Returns a GroupedArray with data (sum n_slots, K):
    a slot inside interval k is ``v_k``; a slot straddling the boundary into k + 1 is
    ``(1 - w) v_k + w v_{k+1}`` with ``w`` the share of the slot after the boundary (a convex
    mix: never outside the two samples). ``slot_s <= period_s`` (we only refine). Every window
    must end at or before the end of its series' last interval; no noise added.
    """
    if not 0 < slot_s <= period_s:
        raise ReclaimError(
            f"hold resampling needs 0 < slot_s <= period_s, got {slot_s}, {period_s}"
        )
    series, n_slots, lengths, indptr, x0 = window_positions(
        values, series, start_s, n_slots, period_s, slot_s, point=0
    )
    x1 = x0 + slot_s / period_s
    last = np.repeat(lengths - 1, n_slots)
    left = np.minimum(np.floor(x0).astype(np.int64), last)
    w = (np.clip(x1 - (left + 1), 0.0, None) * (period_s / slot_s))[:, None]
    base = np.repeat(values.indptr[series], n_slots)
    right = np.minimum(left + 1, last)
    data = np.asarray(values.data, np.float64)
    out = np.where(w > 0, data[base + left] * (1.0 - w) + data[base + right] * w, data[base + left])
    return GroupedArray(out, indptr)


def resample_linear(
    values: GroupedArray,
    series: NDArray[np.integer],
    start_s: NDArray[np.floating],
    n_slots: NDArray[np.integer],
    period_s: float,
    slot_s: float,
) -> GroupedArray:
    """Piecewise-linear resampling of many series windows at once (the ``"linear"`` option; see
    the module docstring for why sample-and-hold, :func:`resample_hold`, is the default).

    values: GroupedArray of S series, data (n, K), one sample every ``period_s`` seconds (sample
    ``k`` at ``k * period_s``). For each window ``i``: series ``series[i]``, starting
    ``start_s[i]`` seconds into it, ``n_slots[i]`` points ``slot_s`` apart. Returns a GroupedArray
    with data (sum n_slots, K): at time t between samples k and k + 1 the value is
    ``v_k + (v_{k+1} - v_k) (t - k period) / period``. Every window must end at or before the
    series' last sample; nothing is extrapolated, no noise added.
    """
    series, n_slots, lengths, indptr, x = window_positions(
        values, series, start_s, n_slots, period_s, slot_s, point=1
    )
    left = np.floor(x).astype(np.int64)
    last = np.repeat(lengths - 1, n_slots)
    left = np.minimum(left, last)
    frac = (x - left)[:, None]
    base = np.repeat(values.indptr[series], n_slots)
    right = np.minimum(left + 1, last)
    data = np.asarray(values.data, np.float64)
    out = data[base + left] * (1.0 - frac) + data[base + right] * frac
    return GroupedArray(out, indptr)


#: ``build_scenario(resample=...)``: how interval-mean samples become slots.
RESAMPLERS = {"hold": resample_hold, "linear": resample_linear}
#: Resamplers over the windows of one google2019-usage store (:mod:`reclaim.corp.fluctuation`):
#: means of correlated 1-second draws, single 1-second draws, or each window's means held.
WINDOW_RESAMPLERS = MODES


def _path(p: str | Path) -> Path:
    """``"sample:NAME"`` -> the shipped sample store, anything else -> a Path."""
    if isinstance(p, str) and p.startswith("sample:"):
        return sample_path(p.removeprefix("sample:"))
    return Path(p)


def build_scenario(
    n_jobs: int = 300,
    n_vms: int = 200,
    n_pms: int = 40,
    seed: int = 0,
    jobs_store: str | Path | None = None,
    usage_stores: Sequence[str | Path] | None = None,
    slot_s: float = 10.0,
    max_duration_s: float = 1800.0,
    horizon_s: float = 1800.0,
    n_train: int = 1000,
    train_share: float = 0.5,
    slo_slack: float = 0.2,
    pm_capacity: ArrayLike = SL230,
    normalised_mem_gib: float = 64.0,
    weights: ArrayLike | None = None,
    period_s: float = TRACE_PERIOD_S,
    resample: str = "hold",
    pairing_store: str | Path | None = None,
    offered_load: float | None = None,
) -> CorpScenario:
    """Sample a CORP scenario from trace stores (defaults: the shipped Alibaba 2017 sample for jobs,
    Bitbrains and Google 2011 derived for usage). See the module docstring for every choice.

    Paths may be ``"sample:NAME"`` (a shipped sample store). ``resample="percentiles"`` and
    ``"window-hold"`` read one ``google2019-usage`` store (or raw task files) as the usage source
    (:mod:`reclaim.corp.fluctuation`). ``pairing_store``: calibrate the other sources' shapes to
    its tasks' usage/limit ratios (:func:`reclaim.workload.pairing.calibrate_shapes`).
    ``offered_load``: stretch the arrivals so that the jobs' requests x durations fill this share
    of the VMs' capacity over the arrival span (the larger of CPU and memory); ``horizon_s`` is
    then derived, not used."""
    from reclaim.workload.builder import default_stores

    if n_jobs < 1 or n_train < 0 or slot_s <= 0 or max_duration_s <= 0 or horizon_s <= 0:
        raise ReclaimError("n_jobs >= 1, n_train >= 0 and positive slot, duration, horizon needed")
    if not 0.0 < train_share < 1.0:
        raise ReclaimError(f"train_share must lie in (0, 1), got {train_share}")
    if resample not in (*RESAMPLERS, *WINDOW_RESAMPLERS):
        options = sorted((*RESAMPLERS, *WINDOW_RESAMPLERS))
        raise ReclaimError(f"resample must be one of {options}, got {resample!r}")
    if offered_load is not None and not offered_load > 0:
        raise ReclaimError(f"offered_load must be positive, got {offered_load}")
    default_jobs, default_usage = default_stores()
    jobs_path = _path(jobs_store) if jobs_store is not None else default_jobs
    usage_paths = [_path(p) for p in (usage_stores or default_usage)]
    vm_capacity, vm_pm, pm = split_pms(n_vms, n_pms, pm_capacity)
    w = paper_weights() if weights is None else np.asarray(weights, np.float64)

    task_rng, arrival_rng, split_rng, test_rng, train_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)
    )
    table = load_jobs(jobs_path, normalised_mem_gib)
    work = table.work.astype(np.float64)
    request = table.request.astype(np.float64)
    long = work > max_duration_s
    too_big = ~long & ~(request[:, None, :] <= vm_capacity[None, :, :] + 1e-9).all(axis=2).any(1)
    pool = np.flatnonzero(~long & ~too_big)
    if not len(pool):
        raise ReclaimError(f"no task of {jobs_path} is at most {max_duration_s:g} s and fits a VM")
    duration = np.maximum(np.ceil(work / slot_s), 1).astype(np.int64)

    shape_rng, fluct_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence([seed, 1]).spawn(2)
    )
    resampler, windows, calibration = RESAMPLERS.get(resample), None, None
    if resample in WINDOW_RESAMPLERS:
        if len(usage_paths) != 1:
            raise ReclaimError(f"resample={resample!r} reads exactly one google2019-usage store")
        windows = load_windows(usage_paths[0])
        shapes, sources = windows.mean, []
        period_s = float(TRACE_PERIOD_S)
        resampler = PercentileSlots(windows, fluct_rng, mode=resample)
    else:
        shapes, sources = load_shapes(usage_paths, period_s)
        if pairing_store is not None:
            ratios = measure_ratios(_path(pairing_store))
            shapes, calibration = calibrate_shapes(shapes, ratios, shape_rng)
    longest = int(duration[pool].max())
    if resample != "linear":  # slots are intervals: the last one must end within the last sample's
        need = math.ceil(longest * slot_s / period_s)
    else:  # slots are instants: the last one must not pass the last sample
        need = math.ceil((longest - 1) * slot_s / period_s) + 1
    long_enough = np.flatnonzero(shapes.lengths >= need)
    order = split_rng.permutation(long_enough)
    n_tr = int(round(train_share * len(order)))
    train_series, test_series = np.sort(order[:n_tr]), np.sort(order[n_tr:])
    if not len(train_series) or not len(test_series):
        raise ReclaimError(f"{len(long_enough)} usage series are too few to split train and test")

    picked = pool[task_rng.integers(0, len(pool), n_jobs)]
    work_rs = (request[picked] * duration[picked, None] * slot_s).sum(axis=0)  # (R,) core-s, GiB-s
    if offered_load is not None:
        horizon_s = float((work_rs / (vm_capacity.sum(axis=0) * offered_load)).max())
    arrival, scale = _arrivals(table.first_submit, n_jobs, horizon_s, arrival_rng)
    jobs = _jobset(
        picked,
        arrival,
        duration,
        request,
        table.instances,
        shapes,
        test_series,
        test_rng,
        slot_s,
        period_s,
        slo_slack,
        resample,
        resampler,
    )
    train_tasks = pool[train_rng.integers(0, len(pool), n_train)]
    train_resampler = resampler
    if isinstance(resampler, PercentileSlots):
        # the training jobs draw their slots from their own stream: what a provisioner learns
        # must not depend on how many jobs are replayed (a fit is reused across them)
        train_rng_slots = np.random.default_rng(np.random.SeedSequence([seed, 2]))
        train_resampler = PercentileSlots(windows, train_rng_slots, mode=resample)
    train = _jobset(
        train_tasks,
        np.zeros(n_train),
        duration,
        request,
        table.instances,
        shapes,
        train_series,
        train_rng,
        slot_s,
        period_s,
        slo_slack,
        resample,
        train_resampler,
    )
    span = max(float(arrival.max() - arrival.min()), slot_s)
    clipped = np.zeros(R, np.int64)
    for drawn in {id(resampler): resampler, id(train_resampler): train_resampler}.values():
        if isinstance(drawn, PercentileSlots) and drawn.clipped is not None:
            clipped += drawn.clipped
    report = ScenarioReport(
        tasks_total=len(work),
        jobs_excluded=dict(table.excluded),
        dropped_long=int(long.sum()),
        dropped_too_big=int(too_big.sum()),
        tasks_kept=len(pool),
        max_duration_s=float(max_duration_s),
        series_train=len(train_series),
        series_test=len(test_series),
        series_too_short=int(len(shapes) - len(long_enough)),
        arrival_scale=float(scale),
        shape_sources=sources,
        offered_load=tuple(float(v) for v in work_rs / (vm_capacity.sum(axis=0) * span)),
        usage_share=tuple(
            float(v)
            for v in jobs.demand.data.sum(axis=0)
            / (jobs.request * jobs.duration[:, None]).sum(axis=0)
        ),
        arrival_span_s=span,
        usage_source=windows.store if windows is not None else "",
        clipped_slots=tuple(int(v) for v in clipped),
        pairing=calibration.ratios.store if calibration is not None else "",
    )
    return CorpScenario(jobs, train, vm_capacity, vm_pm, pm, float(slot_s), w, report)


def _jobset(
    tasks,
    arrival,
    duration,
    request,
    instances,
    shapes,
    series_pool,
    rng,
    slot_s,
    period_s,
    slo_slack,
    resample,
    resampler,
) -> JobSet:
    """Jobs of the given task rows following series of ``series_pool`` from uniform start times."""
    n = len(tasks)
    dur = duration[tasks]
    series = series_pool[rng.integers(0, len(series_pool), n)]
    point = 1 if resample == "linear" else 0  # see window_positions
    span = (shapes.lengths[series] - point) * period_s - (dur - point) * slot_s  # latest start, s
    start = rng.random(n) * span
    if resample in WINDOW_RESAMPLERS:  # whole slots inside the windows' grid
        start = np.floor(start / slot_s) * slot_s
    frac = resampler(shapes, series, start, dur, period_s, slot_s)
    req = request[tasks]
    demand = frac.data * np.repeat(req, dur, axis=0)
    return JobSet(
        submit_s=np.asarray(arrival, np.float64),
        duration=dur,
        request=req,
        demand=GroupedArray(demand, frac.indptr),
        threshold=dur * (1.0 + slo_slack),
        task=np.asarray(tasks, np.int64),
        shape=series.astype(np.int64),
        instances=instances[tasks].astype(np.int64),
    )
