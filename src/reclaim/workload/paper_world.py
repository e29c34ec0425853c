"""The shaping paper's own workload, as its public simulator generates it.

The paper (section 4) says little of its workload; its simulator does (fraPace/
cluster-scheduler-simulator at commit 8abcf51, the version its ARIMA experiments ran; references
below are ``file:line`` there, under ``src/main/scala/ClusterSchedulingSimulation/``, as
``docs/shaping-results.md`` lists them):

- Applications come in draws of ``apps_per_draw`` = 50 that share a submission time and a number
  of core components (``Workloads.scala``:44,47; ``TraceAllZoeWLGenerator.scala``:103-108).
  80 % are elastic ("Batch": max(1, U{0..4}) core components and 10 x ceil(tasks) elastic ones,
  Gen:98,138-143, ``Workload.scala``:289-298), 20 % rigid ("Batch-MPI": ceil(tasks) core
  components, Wl:117-131). Every component of an application has the same request and runtime.
- Requests: 0.7 x a draw from the per-task requests of the jobs running when the Google 2011 trace
  starts (``init-cluster-state.log``, batch jobs: not production with scheduling class 2 or 3;
  CPU column x 1000 / tasks in millicores and memory / tasks in bytes, integer divisions), drawn
  again until below 32000 / 15 millicores and 64 GiB / 5 and above 0 (Gen:149-156, Wl:57-58,
  Wk:919-935,977-980).
- Runtime: a Google 2011 job runtime x 30, drawn again until below 9 days (Gen:130-135).
- Submissions: a Google 2011 gap between submissions x 100 after each draw (Gen:113-114); a
  submission past the first 0.1 x 90 days = 9 days starts over at a fresh gap (Gen:75,94-97).
  The flood of work this makes is the paper's setting.
- Usage: one curve per application and resource (``_usage_walk.py``), whose mean is a draw from
  Google 2011 usage / request ratios of batch records (Gen:165-175,180-242). Usage at time t
  after the application started is curve[t mod length] x request; all components follow it.

The empirical tables are 1001 quantiles sampled with linear interpolation, as the simulator's
``DistCache`` builds and reads them (Wk:792-807,815-890; ``job_tables.py``).

Sources, and why: the gaps, runtimes and task counts come from the real Google 2011 job events
(``google2011-jobs`` trace store or its shipped quantile sample), as the paper's notebook derived
its own unpublished tables from them. Requests come from the simulator's own input file. Usage
ratios come from the simulator's published ``cpu_slack.log`` and ``memory_slack.log`` (Google
2011 per-record usage / request, 0.01 bins, batch column): they are the only Google 2011 ratios
with the paper's definition that exist; they are small (685 CPU and 1,656 memory records), and
the larger versions the paper's final runs read are not public. Both files ship in
``reclaim/data/paper/pace`` (Google's data, CC-BY 4.0; the simulator's BSD-style licences).

Scale: ``n_apps`` below the paper's 150,000 multiplies every gap by 150,000 / n_apps, so that the
arrivals span the same days; a cluster of hosts in the same proportion (250 per 150,000) then
sees the paper's flood at the paper's rate per host. ``spread_days`` replaces the flood by
arrivals spread over that many days (no wrapping), as reclaim's own scenarios spread them, and
``usage = "traces"`` the synthetic curves by reclaim's real, calibrated shapes: the two steps of
the ladder from the paper's world to reclaim's (``pace-ladder``) that change the workload but not
its jobs.

Where this differs from the paper's code, knowingly: a curve that cannot reach its target mean
in 100 draws keeps its last draw (the paper's recursion never returns); only the peak of every
``period`` seconds of a curve is kept (all the simulator reads of it, see ``_usage_walk.py``);
peaks are taken over minutes counted from the component's start, where the paper's 60 s windows
are counted from time 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.core.types import CPU, MEM, R
from reclaim.errors import ReclaimError
from reclaim.traces.readers.google2011_jobs import quantile_table
from reclaim.validation import APPS, PAPER_WORLD
from reclaim.workload._usage_walk import peak_curves
from reclaim.workload.builder import draw_shapes
from reclaim.workload.job_tables import JobTables, interpolate
from reclaim.workload.model import Workload
from reclaim.workload.pairing import calibrate_shapes, measure_ratios
from reclaim.workload.shapes import load_shapes

PAPER_DIR = resources.files("reclaim") / "data" / "paper" / "pace"
GIB = float(1 << 30)
DAY = 86_400.0
PAPER_APPS = 150_000
USAGES = ("paper", "traces")
#: Sampling period of the real usage shapes (the shipped Bitbrains and Google 2011 stores), s.
TRACE_PERIOD = 300.0


@dataclass(frozen=True)
class PaperWorldSpec:
    """Settings of the paper's workload generator, the paper's values as defaults (module
    docstring for each one's source)."""

    n_apps: int = PAPER_APPS
    seed: int = 0
    apps_per_draw: int = 50
    elastic_share: float = 0.8
    max_core: int = 4  # core components of an elastic app: max(1, U{0..max_core})
    elastic_per_task: int = 10
    request_scale: float = 0.7
    max_cpu: float = 32.0 / 15.0  # cores; requests at or above are drawn again
    max_mem_gib: float = 64.0 / 5.0
    runtime_scale: float = 30.0
    max_runtime_days: float = 9.0
    gap_scale: float = 100.0
    arrival_window_days: float = 9.0
    # None: the paper's flood; days: no wrapping, the gaps stretched so that submissions span
    # that many days (a reclaim scenario spreads 150,000 applications over 90)
    spread_days: float | None = None
    period: float = 60.0  # s, the control loop's period (ZoeDynamicSimulation.scala:135)
    # "paper": its synthetic curve per application; "traces": reclaim's real shapes, one per
    # component from a random offset, calibrated to Google 2019 usage/limit ratios
    # (workload/pairing.py), each 5-minute sample held for the minutes it covers
    usage: str = "paper"

    def check(self) -> PaperWorldSpec:
        """Raise ReclaimError naming the first setting out of its declared range
        (``reclaim.validation.PAPER_WORLD``); return self."""
        APPS.check(self.n_apps, "n_apps")
        for name, quantity in PAPER_WORLD.items():
            value = getattr(self, name)
            if value is not None:
                quantity.check(value, name)
        if self.usage not in USAGES:
            raise ReclaimError(f"usage must be one of {', '.join(USAGES)}, got {self.usage!r}")
        if int(self.period) != self.period:
            raise ReclaimError(f"period must be a whole number of seconds, got {self.period}")
        if self.n_apps < self.apps_per_draw:
            raise ReclaimError(f"n_apps must be at least apps_per_draw ({self.apps_per_draw})")
        return self


@dataclass(frozen=True)
class PaperInputs:
    """The empirical tables the generator draws from: 1001 quantiles each.

    gap_s, runtime_s: Google 2011 gaps between submissions and runtimes (s); tasks: tasks per
    job; cpu, mem_gib: per-task requests of the batch jobs of ``init-cluster-state.log`` (cores,
    GiB); cpu_ratio, mem_ratio: usage / request of batch records.
    """

    gap_s: NDArray[np.float64]
    runtime_s: NDArray[np.float64]
    tasks: NDArray[np.float64]
    cpu: NDArray[np.float64]
    mem_gib: NDArray[np.float64]
    cpu_ratio: NDArray[np.float64]
    mem_ratio: NDArray[np.float64]

    @classmethod
    def load(cls, jobs: Path | str | None = None) -> PaperInputs:
        """Tables from a ``google2011-jobs`` store (None: the shipped sample) and the paper's
        own input files."""
        tables = JobTables.from_sample() if jobs is None else JobTables.from_store(Path(jobs))
        cpu, mem = read_init_cluster_state(PAPER_DIR / "init-cluster-state.log")
        return cls(
            gap_s=tables.tables["gap_s"],
            runtime_s=tables.tables["runtime_s"],
            tasks=tables.tables["tasks"],
            cpu=quantile_table(cpu),
            mem_gib=quantile_table(mem),
            cpu_ratio=quantile_table(read_ratio_histogram(PAPER_DIR / "cpu_slack.log")),
            mem_ratio=quantile_table(read_ratio_histogram(PAPER_DIR / "memory_slack.log")),
        )


def read_init_cluster_state(path) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-task (cores, GiB) of the batch jobs running at the start of Google 2011, as the
    paper's simulator reads them: rows of type 11, batch = not (production and class 2 or 3),
    CPU column x 1000 // tasks millicores, memory // tasks bytes."""
    cpu, mem = [], []
    for line_no, line in enumerate(path.read_text().splitlines(), 1):
        parts = line.split()
        if not parts or parts[0] != "11":
            continue
        try:
            production, klass, tasks = parts[3] == "1", int(parts[4]), int(parts[5])
            millicores, memory = int(float(parts[6]) * 1000), int(parts[7])
        except (IndexError, ValueError):
            raise ReclaimError(f"{path}: row {line_no}: not a job row ({line!r})") from None
        if tasks <= 0:
            raise ReclaimError(f"{path}: row {line_no}: a job of {tasks} tasks")
        if production and klass not in (0, 1):
            continue  # a service job
        cpu.append(millicores // tasks / 1000.0)
        mem.append(memory // tasks / GIB)
    return np.array(cpu), np.array(mem)


def read_ratio_histogram(path) -> NDArray[np.float64]:
    """Usage / request ratios of batch records, each bin repeated by its count."""
    values, counts = [], []
    for line_no, line in enumerate(path.read_text().splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        try:
            service, value, count = parts[2] == "1", float(parts[3]), int(parts[4])
        except (IndexError, ValueError):
            raise ReclaimError(f"{path}: row {line_no}: not a histogram row ({line!r})") from None
        if not service:
            values.append(value)
            counts.append(count)
    return np.repeat(values, counts)


def build_paper_world(
    spec: PaperWorldSpec, inputs: PaperInputs, traces: GroupedArray | None = None
) -> Workload:
    """The paper's workload of ``spec.n_apps`` applications (module docstring); with
    ``usage="traces"``, ``traces`` are the real shapes (:func:`trace_shapes`) its components
    follow instead of the paper's curves."""
    spec.check()
    if (spec.usage == "traces") != (traces is not None):
        raise ReclaimError("real usage shapes are given exactly when usage is 'traces'")
    arrival_rng, app_rng, usage_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(spec.seed).spawn(3)
    )
    draws = spec.n_apps // spec.apps_per_draw
    elastic_draws = round(draws * spec.elastic_share)
    gap_scale = spec.gap_scale * PAPER_APPS / spec.n_apps
    window = spec.arrival_window_days * DAY if spec.spread_days is None else np.inf
    # the two kinds of application are two generators, each with its own submission times
    times = np.concatenate(
        [
            submissions(inputs.gap_s, n, gap_scale, window, arrival_rng)
            for n in (elastic_draws, draws - elastic_draws)
        ]
    )
    if spec.spread_days is not None and times.max() > 0:
        times *= spec.spread_days * DAY / times.max()
    elastic = np.arange(draws) < elastic_draws
    core_of_draw = np.where(
        elastic, np.maximum(1, arrival_rng.integers(0, spec.max_core + 1, draws)), 0
    )
    per_app = np.repeat(np.arange(draws), spec.apps_per_draw)
    order = np.argsort(times[per_app], kind="stable")
    per_app = per_app[order]
    n = len(per_app)
    arrival = times[per_app]
    is_elastic = elastic[per_app]

    runtime = redraw(inputs.runtime_s, n, app_rng, lambda d: d * spec.runtime_scale,
                     lambda d: (d > 0) & (d < spec.max_runtime_days * DAY))  # fmt: skip
    tasks = np.ceil(interpolate(inputs.tasks, app_rng.random(n))).astype(np.int64)
    tasks = np.maximum(tasks, 1)
    cpu = redraw(inputs.cpu, n, app_rng, lambda c: np.floor(spec.request_scale * c * 1000) / 1000,
                 lambda c: (c > 0) & (c < spec.max_cpu))  # fmt: skip
    mem = redraw(inputs.mem_gib, n, app_rng, lambda m: np.floor(spec.request_scale * m * GIB) / GIB,
                 lambda m: (m > 0) & (m < spec.max_mem_gib))  # fmt: skip
    n_core = np.where(is_elastic, core_of_draw[per_app], tasks)
    n_elastic = np.where(is_elastic, spec.elastic_per_task * tasks, 0)
    sizes = n_core + n_elastic
    comp_indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    first = np.repeat(comp_indptr[:-1], sizes)
    core = (np.arange(comp_indptr[-1]) - first) < np.repeat(n_core, sizes)

    ratio = np.column_stack(
        [redraw(t, n, usage_rng, lambda x: x, lambda x: (x > 0) & (x <= 1))
         for t in (inputs.cpu_ratio, inputs.mem_ratio)]
    )  # fmt: skip
    if traces is None:
        shapes = usage_shapes(runtime, ratio, usage_rng, spec.period)
        shape = np.repeat(np.arange(n, dtype=np.int32), sizes)
        offset = np.zeros(int(comp_indptr[-1]), np.int32)
    else:
        shapes = traces
        shape, offset = draw_shapes(traces.lengths, int(comp_indptr[-1]), usage_rng)
    request = np.empty((n, R), np.float32)
    request[:, CPU], request[:, MEM] = cpu, mem
    return Workload(
        arrival=arrival,
        comp_indptr=comp_indptr,
        request=np.repeat(request, sizes, axis=0),
        work=np.repeat(runtime.astype(np.float32), sizes),
        core=core,
        shape=shape,
        shape_offset=offset,
        shapes=shapes,
        period=float(spec.period),
    ).validate()


def trace_shapes(
    shape_stores: list[Path], pairing_store: Path, period: float, seed: int
) -> GroupedArray:
    """Real usage shapes of ``shape_stores`` (sampled every TRACE_PERIOD s) calibrated to the
    usage/limit ratios of ``pairing_store``'s tasks, each sample repeated for the ``period`` s
    steps it covers: reclaim's usage model on the paper's clock."""
    if TRACE_PERIOD % period:
        raise ReclaimError(f"period must divide the shapes' {TRACE_PERIOD:g} s, got {period:g}")
    shapes, _ = load_shapes(shape_stores, TRACE_PERIOD)
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(4)[3])
    shapes, _ = calibrate_shapes(shapes, measure_ratios(pairing_store), rng)
    hold = int(TRACE_PERIOD // period)
    return GroupedArray(np.repeat(shapes.data, hold, axis=0), shapes.indptr * hold)


def submissions(
    gaps: NDArray[np.float64], draws: int, scale: float, window: float, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Submission times of ``draws`` draws: a first gap, then ``scale`` x a gap after each; a time
    at or past ``window`` starts over at a fresh (unscaled) gap (Gen:94-114)."""
    out = np.empty(draws)
    u = rng.random(2 * draws + 1)
    t, k = float(interpolate(gaps, u[:1])[0]), 1
    for i in range(draws):
        while t >= window:  # rare: a few times per generator at the paper's counts
            t = float(interpolate(gaps, rng.random(1))[0])
        out[i] = t
        t += scale * float(interpolate(gaps, u[k : k + 1])[0])
        k += 1
    return out


def redraw(table, n, rng, transform, accept) -> NDArray[np.float64]:
    """``n`` values ``transform(a draw of table)``, each drawn again until ``accept`` holds."""
    out = transform(interpolate(table, rng.random(n)))
    bad = ~accept(out)
    for _ in range(1000):
        if not bad.any():
            return out
        out[bad] = transform(interpolate(table, rng.random(int(bad.sum()))))
        bad = ~accept(out)
    raise ReclaimError("the empirical table has (almost) no value the generator may keep")


def usage_shapes(
    runtime: NDArray[np.float64],
    ratio: NDArray[np.float64],
    rng: np.random.Generator,
    period: float,
) -> GroupedArray:
    """Per application, the peak of its usage curves over every ``period`` s of its runtime,
    (N, R) float32 fractions of the request."""
    step = int(period)
    if step != period or step < 1:
        raise ReclaimError(f"period must be a whole number of seconds, got {period}")
    seconds = np.maximum(runtime.astype(np.int64), 1)
    lengths = -(-seconds // step)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    out = np.empty((int(indptr[-1]), R), np.float32)
    peak_curves(rng, runtime, ratio, step, indptr, out)
    return GroupedArray(out, indptr)
