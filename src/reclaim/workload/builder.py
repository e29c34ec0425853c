"""Build the simulator's Workload from canonical trace stores by sampling real distributions.

The paper (section 4.1) generated 150,000 batch applications by sampling empirical distributions of
public traces. We do the same from stores written by ``reclaim.traces``:

- Applications are jobs of a jobs store (Alibaba 2017 batch tasks), sampled with replacement. Only
  jobs whose every task is ``Terminated`` with known requests, times and instance counts qualify;
  the others are counted by the first check they fail. An application's components are the
  instances of its job's tasks (tasks by create time, instances expanded), each with the task's
  request per instance and, as work, the task's span ``end - create`` (at least 1 s).
- Inter-arrival times are the gaps between consecutive jobs' first create times, over every job of
  the store (the arrival process is a property of the whole trace, kept or not), sampled with
  replacement; one factor then stretches them so that the arrivals span ``horizon`` seconds.
- Roles come from ``RoleRule`` (roles.py) and usage shapes from usage stores (shapes.py); each
  component follows a shape drawn uniformly from all shapes, from an offset drawn uniformly in it.
- With a pairing store (a trace whose usage sits beside its own limits, Google 2019), every shape
  is first calibrated to the usage / request ratios of a real task (pairing.py), so that
  components use their requests as real tasks do rather than as the shape's own trace did.

Units: requests in cores and GiB. Memory normalised to the trace's largest machine (Alibaba 2017
plan_mem, unit "fraction of largest machine") is multiplied by ``normalised_mem_gib``, by default
128 GiB, the memory of the simulated host of section 4.1, so that a task asking for 1.0 would fill
a host. The trace does not say how large its largest machine was, so this is a choice.

Deviations from the traces, all forced by what the stores hold:

- Every instance of a task gets the task's whole span as its work: v2017 instance runtimes live in
  batch_instance, which we do not have, so work is an upper bound (instances may run in waves).
- All components are submitted with their application; the order of tasks inside a job (a DAG in
  the trace) is not replayed.
- ``max_components_per_app`` (off by default) keeps only an application's first components, whole
  earlier tasks first, to make small experiments affordable; it changes the size distribution.

Randomness: one ``np.random.SeedSequence(seed)`` spawns an independent stream for jobs, arrivals,
roles, shapes and pairing, so one seed gives bit-identical arrays and changing, say, ``elastic_share`` does
not change which jobs are drawn. Components are built with ``np.repeat`` over task arrays, never a
loop per application or component: the paper's scale is ~1.4e8 components.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.core.types import CPU, MEM, R
from reclaim.errors import ReclaimError, TraceError
from reclaim.machine import require_memory
from reclaim.traces.schema import META_FILE, WORKLOADS_FILE
from reclaim.traces.store import load_store
from reclaim.workload.model import Workload
from reclaim.workload.pairing import Calibration, calibrate_shapes, measure_ratios
from reclaim.workload.roles import RoleRule
from reclaim.workload.shapes import ShapeSource, load_shapes, store_unit

SAMPLE_DIR = Path(__file__).resolve().parents[1] / "data" / "sample"
#: Memory units meaning "a fraction of the trace's largest machine" (Alibaba 2017 plan_mem).
NORMALISED_UNITS = ("fraction of largest machine", "normalised", "normalized")
#: Shortest work of a component, s: a task that ends in the second it was created still ran.
MIN_WORK = 1.0
#: Components per chunk when drawing shapes: keeps the float64 temporaries to ~10 MB.
_CHUNK = 1 << 20


@dataclass
class WorkloadSpec:
    """Settings of a sampled workload; ``build_workload`` does the work.

    n_apps: applications to sample. seed: seed of every random draw.
    horizon: s, the arrivals are stretched (or shrunk) to span this; None keeps the sampled span.
    elastic_share, core_per_elastic_app: the RoleRule (roles.py).
    normalised_mem_gib: GiB that a normalised memory request of 1.0 stands for.
    max_components_per_app: keep at most this many components per application (a deviation knob
        for small runs; None keeps every instance).
    period: s, the sampling period every shape store must have (the simulator's monitor tick).
    """

    n_apps: int = 150_000
    seed: int = 0
    horizon: float | None = None
    elastic_share: float = 0.6
    core_per_elastic_app: int = 3
    normalised_mem_gib: float = 128.0
    max_components_per_app: int | None = None
    period: float = 300.0


@dataclass(frozen=True)
class BuildReport:
    """What was kept, dropped and changed while building a workload.

    jobs_total: jobs in the jobs store; jobs_used: those that qualify as applications;
    jobs_excluded: jobs dropped, by the first check they fail (not_terminated, missing_request,
        missing_time, no_instances).
    tasks_work_raised: tasks of used jobs lasting under MIN_WORK s whose work was raised to it.
    arrival_scale: the factor applied to the sampled gaps (1.0 without a horizon);
    arrival_span: s, last arrival minus first.
    components_truncated: instances dropped by ``max_components_per_app``.
    offered_core_seconds, offered_gib_seconds: sum over components of request x work.
    used_core_seconds, used_gib_seconds: sum over components of request x work x the mean of the
        component's shape: the usage the offered work brings, at full speed.
    shape_sources: one per shape store, with its clipped sample counts.
    calibration: what pairing shapes with real usage ratios did; None without a pairing store.
    """

    jobs_total: int
    jobs_used: int
    jobs_excluded: dict[str, int]
    tasks_work_raised: int
    arrival_scale: float
    arrival_span: float
    n_apps: int
    n_components: int
    components_truncated: int
    elastic_apps: int
    offered_core_seconds: float
    offered_gib_seconds: float
    used_core_seconds: float
    used_gib_seconds: float
    shape_sources: list[ShapeSource] = field(default_factory=list)
    calibration: Calibration | None = None

    @property
    def shape_samples(self) -> int:
        return sum(s.samples for s in self.shape_sources)

    @property
    def clipped(self) -> tuple[int, ...]:
        """Per resource (cpu, mem), shape samples above their request that were clipped to it."""
        return tuple(sum(s.clipped[r] for s in self.shape_sources) for r in range(R))

    @property
    def clipped_share(self) -> tuple[float, ...]:
        n = self.shape_samples
        return tuple(c / n if n else 0.0 for c in self.clipped)


@dataclass(frozen=True)
class JobTable:
    """Qualifying jobs and their tasks, tasks of job ``j`` at ``task_indptr[j]:task_indptr[j+1]``.

    task_indptr: (J+1,) int64. request: (T, R) float32 cores, GiB per instance.
    work: (T,) float32 s. instances: (T,) int64, at least 1.
    first_submit: (J_all,) float64 s, sorted first create time of every job of the store (kept
        or not) with one: the arrival process.
    """

    task_indptr: NDArray[np.int64]
    request: NDArray[np.float32]
    work: NDArray[np.float32]
    instances: NDArray[np.int64]
    first_submit: NDArray[np.float64]
    jobs_total: int
    excluded: dict[str, int]
    work_raised: int


def default_stores() -> tuple[Path, list[Path]]:
    """The shipped sample stores: (jobs store, [shape stores])."""
    return SAMPLE_DIR / "alibaba2017", [SAMPLE_DIR / "bitbrains", SAMPLE_DIR / "google2011-derived"]


def default_pairing_store() -> Path:
    """The shipped store of real tasks with their limits (Google 2019) that pairs usage."""
    return SAMPLE_DIR / "google2019-usage"


def build_workload(
    spec: WorkloadSpec,
    jobs_store: Path,
    shape_stores: list[Path],
    pairing_store: Path | None = None,
) -> tuple[Workload, BuildReport]:
    """Sample ``spec.n_apps`` applications from ``jobs_store`` with shapes from ``shape_stores``,
    calibrated to the usage ratios of ``pairing_store``'s tasks if one is given."""
    _check_spec(spec)
    jobs = load_jobs(Path(jobs_store), spec.normalised_mem_gib)
    _check_memory(spec, jobs)
    shapes, sources = load_shapes([Path(s) for s in shape_stores], spec.period)
    # spawn(5)'s first four streams are spawn(4)'s: adding pairing changed no earlier draw
    job_rng, arrival_rng, role_rng, shape_rng, pairing_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(spec.seed).spawn(5)
    )
    calibration = None
    if pairing_store is not None:
        shapes, calibration = calibrate_shapes(
            shapes, measure_ratios(Path(pairing_store)), pairing_rng
        )

    picked = job_rng.integers(0, len(jobs.task_indptr) - 1, size=spec.n_apps)
    task, count, app_tasks = _tasks_of(jobs, picked)
    truncated = 0
    if spec.max_components_per_app is not None:
        kept = _truncate(count, app_tasks, spec.max_components_per_app)
        truncated, count = int(count.sum() - kept.sum()), kept
    comp_indptr = np.concatenate([[0], np.cumsum(np.add.reduceat(count, app_tasks[:-1]))])
    request = np.repeat(jobs.request[task], count, axis=0)
    work = np.repeat(jobs.work[task], count)
    task_work = count * jobs.work[task].astype(np.float64)
    offered = task_work @ jobs.request[task].astype(np.float64)

    arrival, scale = _arrivals(jobs.first_submit, spec.n_apps, spec.horizon, arrival_rng)
    rule = RoleRule(spec.elastic_share, spec.core_per_elastic_app)
    core, elastic = rule.assign(comp_indptr, role_rng)
    shape, offset = draw_shapes(shapes.lengths, len(work), shape_rng)
    used = _expected_usage(shapes, shape, work, request)

    workload = Workload(
        arrival=arrival,
        comp_indptr=comp_indptr,
        request=request,
        work=work,
        core=core,
        shape=shape,
        shape_offset=offset,
        shapes=shapes,
        period=float(spec.period),
    ).validate()
    report = BuildReport(
        jobs_total=jobs.jobs_total,
        jobs_used=len(jobs.task_indptr) - 1,
        jobs_excluded=jobs.excluded,
        tasks_work_raised=jobs.work_raised,
        arrival_scale=scale,
        arrival_span=float(arrival[-1] - arrival[0]),
        n_apps=workload.n_apps,
        n_components=workload.n_components,
        components_truncated=truncated,
        elastic_apps=int(elastic.sum()),
        offered_core_seconds=float(offered[CPU]),
        offered_gib_seconds=float(offered[MEM]),
        used_core_seconds=float(used[CPU]),
        used_gib_seconds=float(used[MEM]),
        shape_sources=sources,
        calibration=calibration,
    )
    return workload, report


def paper_arrival_days(n_apps: int, cores: float, days_per_150k: float = 90.0) -> float:
    """Days over which ``n_apps`` arrive at the shaping paper's load per core.

    The paper (section 4.1) runs 150,000 applications over about three months on 250 hosts of 32
    cores; a smaller cluster or workload keeps that rate per core, so it is not swamped.
    """
    return days_per_150k * n_apps / 150_000 * (250 * 32) / cores


def _expected_usage(
    shapes: GroupedArray,
    shape: NDArray[np.int32],
    work: NDArray[np.float32],
    request: NDArray[np.float32],
) -> NDArray[np.float64]:
    """(R,) sum of request x work x the mean of each component's shape (core-s, GiB-s)."""
    data = shapes.data.astype(np.float64)
    shape_mean = np.add.reduceat(data, shapes.indptr[:-1], axis=0) / shapes.lengths[:, None]
    weight = np.zeros((len(shapes), R))
    for start in range(0, len(work), _CHUNK):  # keeps the temporaries small at paper scale
        part = slice(start, start + _CHUNK)
        for r in range(R):
            weight[:, r] += np.bincount(
                shape[part],
                work[part].astype(np.float64) * request[part, r],
                minlength=len(shapes),
            )
    return (weight * shape_mean).sum(axis=0)


def _check_spec(spec: WorkloadSpec) -> None:
    if spec.n_apps < 1:
        raise ReclaimError(f"n_apps must be at least 1, got {spec.n_apps}")
    if spec.horizon is not None and spec.horizon <= 0:
        raise ReclaimError(f"horizon must be positive, got {spec.horizon}")
    if spec.max_components_per_app is not None and spec.max_components_per_app < 1:
        raise ReclaimError("max_components_per_app must be at least 1")
    if spec.normalised_mem_gib <= 0 or spec.period <= 0:
        raise ReclaimError("normalised_mem_gib and period must be positive")


#: Memory a component holds from the build to the end of a simulation: the paper-scale run's
#: 1.42e8 components peak at 6.46 GiB (benchmarks/bench_simulate.py), 49 B each, rounded up.
BYTES_PER_COMPONENT = 56


def _check_memory(spec: WorkloadSpec, jobs: JobTable) -> None:
    """Refuse a workload whose expected number of components cannot fit this machine."""
    per_job = np.add.reduceat(jobs.instances.astype(np.float64), jobs.task_indptr[:-1])
    if spec.max_components_per_app is not None:
        per_job = np.minimum(per_job, spec.max_components_per_app)
    expected = spec.n_apps * float(per_job.mean())
    require_memory(
        expected * BYTES_PER_COMPONENT,
        f"{spec.n_apps:,} applications (about {expected:,.3g} components of the jobs store's "
        f"mean {per_job.mean():,.0f} per job, at {BYTES_PER_COMPONENT} B each)",
    )


#: Checks a job must pass, in the order its exclusion reason is picked; each is true per good task.
_JOB_CHECKS: dict[str, pl.Expr] = {
    "not_terminated": pl.col("status") == "Terminated",
    "missing_request": pl.all_horizontal(
        pl.col(c).is_finite() & (pl.col(c) >= 0) for c in ("cpu_request", "mem_request")
    ),
    "missing_time": pl.col("submit_time").is_finite() & pl.col("end_time").is_finite(),
    "no_instances": pl.col("instances") >= 1,
}


def load_jobs(path: Path, normalised_mem_gib: float = 128.0) -> JobTable:
    """The qualifying jobs of a jobs store, tasks ordered by (create time, id) within each job."""
    store = load_store(path)
    cpu_unit, mem_unit = store_unit(store, "cpu"), store_unit(store, "mem")
    gib_per_unit = {"gib": 1.0} | dict.fromkeys(NORMALISED_UNITS, normalised_mem_gib)
    if cpu_unit != "cores" or mem_unit not in gib_per_unit:
        raise TraceError(
            store.path / META_FILE,
            f"requests in {cpu_unit!r} and {mem_unit!r}; applications need cores and "
            "GiB or memory normalised to the largest machine",
        )
    columns = ["id", "job_id", "submit_time", "end_time", "instances"]
    tasks = store.workloads().select(*columns, "cpu_request", "mem_request", "status").collect()
    if tasks["job_id"].null_count():
        raise TraceError(
            store.path / WORKLOADS_FILE, "rows without job_id cannot form applications"
        )
    jobs = tasks.group_by("job_id").agg(
        pl.col("submit_time").min().alias("first_submit"),
        *(check.fill_null(False).all().alias(name) for name, check in _JOB_CHECKS.items()),
    )
    excluded, passed = {}, pl.lit(True)
    for name in _JOB_CHECKS:
        excluded[name] = jobs.filter(passed & ~pl.col(name)).height
        passed = passed & pl.col(name)
    used = (
        jobs.filter(passed)
        .sort("first_submit", "job_id")
        .with_row_index("job_order")
        .select("job_id", "job_order")
    )
    if not used.height:
        raise TraceError(
            store.path / WORKLOADS_FILE, f"no job qualifies as an application {excluded}"
        )
    kept = (
        tasks.join(used, on="job_id", maintain_order="left")
        .sort("job_order", "submit_time", "id")
        .select(
            pl.col("job_order"),
            pl.col("cpu_request"),
            pl.col("mem_request") * gib_per_unit[mem_unit],
            pl.col("instances"),
            (pl.col("end_time") - pl.col("submit_time")).alias("span"),
        )
    )
    span = kept["span"].to_numpy()
    per_job = np.bincount(kept["job_order"].to_numpy(), minlength=used.height)
    first = jobs["first_submit"].drop_nulls().sort().to_numpy()
    return JobTable(
        task_indptr=np.concatenate([[0], np.cumsum(per_job)]).astype(np.int64),
        request=kept.select("cpu_request", "mem_request").to_numpy().astype(np.float32),
        work=np.maximum(span, MIN_WORK).astype(np.float32),
        instances=kept["instances"].to_numpy().astype(np.int64),
        first_submit=first.astype(np.float64),
        jobs_total=jobs.height,
        excluded=excluded,
        work_raised=int((span < MIN_WORK).sum()),
    )


def _tasks_of(
    jobs: JobTable, picked: NDArray[np.int64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Tasks of the picked jobs, application after application.

    Returns task (T',) int64 rows of ``jobs``, count (T',) int64 instances of each, and
    app_tasks (A+1,) int64: application ``a`` owns ``task[app_tasks[a]:app_tasks[a+1]]``.
    """
    first = jobs.task_indptr[picked]
    n_tasks = jobs.task_indptr[picked + 1] - first
    app_tasks = np.concatenate([[0], np.cumsum(n_tasks)])
    task = np.repeat(first - app_tasks[:-1], n_tasks) + np.arange(app_tasks[-1])
    return task, jobs.instances[task], app_tasks


def _truncate(
    count: NDArray[np.int64], app_tasks: NDArray[np.int64], limit: int
) -> NDArray[np.int64]:
    """Instances kept per task so that no application has more than ``limit`` components."""
    before = np.cumsum(count) - count
    before -= np.repeat(before[app_tasks[:-1]], np.diff(app_tasks))
    return np.clip(limit - before, 0, count)


def _arrivals(
    first_submit: NDArray[np.float64], n_apps: int, horizon: float | None, rng: np.random.Generator
) -> tuple[NDArray[np.float64], float]:
    """(A,) float64 s arrivals from 0 and the factor that stretched the sampled gaps."""
    gaps = np.diff(first_submit)
    if not len(gaps):
        raise ReclaimError("inter-arrival times need at least two jobs with a create time")
    arrival = np.zeros(n_apps)
    np.cumsum(rng.choice(gaps, size=n_apps - 1), out=arrival[1:])
    if horizon is None or n_apps == 1:
        return arrival, 1.0
    if arrival[-1] <= 0:
        raise ReclaimError("every sampled inter-arrival gap is 0; cannot stretch to a horizon")
    scale = horizon / arrival[-1]
    arrival *= scale
    return arrival, float(scale)


def draw_shapes(
    lengths: NDArray[np.int64], n_components: int, rng: np.random.Generator
) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
    """shape (C,) int32 uniform over shapes and shape_offset (C,) int32 uniform in its length.

    Speed trick (~1.5 s instead of ~3 s for 1.4e8 components): one float64 ``x = u * S`` per
    component gives both, its integer part the shape and its fraction (still ~40 random bits)
    times the shape's length the offset; both floors stay below their bound for bounds < 2**24.
    """
    shape = np.empty(n_components, dtype=np.int32)
    offset = np.empty(n_components, dtype=np.int32)
    lengths64 = lengths.astype(np.float64)
    for start in range(0, n_components, _CHUNK):
        x = rng.random(min(_CHUNK, n_components - start)) * len(lengths)
        k = x.astype(np.int32)
        x -= k
        x *= lengths64[k]
        shape[start : start + _CHUNK] = k
        offset[start : start + _CHUNK] = x
    return shape, offset
