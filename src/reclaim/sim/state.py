"""The shaping simulator's state: the clock, the host and workload tables, the columnar per-row,
per-component and per-application arrays, and the admission queue.

One object that the simulator (which handles the events), its view (what a controller reads) and
its actuator (how a controller's decisions land) share, so that neither the view nor the actuator
needs the simulator. Arrays are columns, as the compiled kernels take them: a row is a running
component (its index into the workload table ``wt``), a component and an application are indices
into the workload.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from reclaim.core.tables import HostTable, WorkloadTable
from reclaim.core.types import R, Status
from reclaim.sim import _kernels
from reclaim.workload.model import Workload

# Rows the table starts with; it doubles when a start finds too few free.
FIRST_ROWS = 1024

# Per-row arrays beside the workload table, grown with it (see SimState).
ROW_ARRAYS = (
    "remaining",
    "since",
    "rate",
    "epoch",
    "shape_base",
    "shape_len",
    "shape_offset",
)

# Application states (int8).
QUEUED, RUNNING, DONE, REJECTED, WAITING = 0, 1, 2, 3, 4  # WAITING: not yet arrived
assert (QUEUED, RUNNING, DONE, REJECTED) == (
    _kernels.APP_QUEUED,
    _kernels.APP_RUNNING,
    _kernels.APP_DONE,
    _kernels.APP_REJECTED,
)


@dataclass(eq=False, repr=False)
class SimState:
    """The state of one run of ``workload`` on ``hosts``; :meth:`reset` fills it for a run.

    Rows (the workload table ``wt`` and the arrays beside it, all grown together by :meth:`grow`):
    ``remaining`` (s of work left at full speed), ``since`` (when it was last accounted), ``rate``
    (its speed since then), ``epoch`` (counts its starts, so that a stale completion is
    recognised), and where its usage shape starts in ``workload.shapes.data``, how long it is and
    at which sample it begins (``shape_base``, ``shape_len``, ``shape_offset``: cached at start so
    that every tick reads small row arrays, not the (C,) component ones). Free rows are a stack,
    ``free_rows[:free_top]``, popped and pushed at the top.
    """

    workload: Workload
    hosts: HostTable
    # the clock: the time of the event being handled, and the monitor's period (s)
    now: float = field(init=False)
    period: float = field(init=False)
    # rows
    wt: WorkloadTable = field(init=False)
    remaining: NDArray[np.float64] = field(init=False)
    since: NDArray[np.float64] = field(init=False)
    rate: NDArray[np.float64] = field(init=False)
    epoch: NDArray[np.int64] = field(init=False)
    shape_base: NDArray[np.int64] = field(init=False)
    shape_len: NDArray[np.int64] = field(init=False)
    shape_offset: NDArray[np.int64] = field(init=False)
    free_rows: NDArray[np.int64] = field(init=False)
    free_top: int = field(init=False)
    # components: Status, and times stopped out of memory (saturating at 255)
    comp_state: NDArray[np.int8] = field(init=False)
    comp_ooms: NDArray[np.uint8] = field(init=False)
    # components stopped out of memory at the last tick, and their memory demand then (GiB)
    last_ooms: tuple[NDArray[np.int64], NDArray[np.float32]] = field(init=False)
    # applications: state (QUEUED ... WAITING), times, outcomes
    app_state: NDArray[np.int8] = field(init=False)
    app_first_start: NDArray[np.float64] = field(init=False)
    app_start: NDArray[np.float64] = field(init=False)
    app_end: NDArray[np.float64] = field(init=False)
    app_failures: NDArray[np.int32] = field(init=False)
    app_preemptions: NDArray[np.int32] = field(init=False)
    app_component_losses: NDArray[np.int32] = field(init=False)
    app_component_ooms: NDArray[np.int32] = field(init=False)
    app_work_lost: NDArray[np.float64] = field(init=False)
    app_work_lost_res: NDArray[np.float64] = field(init=False)  # (A, R) core-s and GiB-s
    # resource-seconds requested by, allocated to and used by each application, (A, R), over all
    # its attempts
    app_requested: NDArray[np.float64] = field(init=False)
    app_allocated: NDArray[np.float64] = field(init=False)
    app_used: NDArray[np.float64] = field(init=False)
    app_done: NDArray[np.int64] = field(init=False)  # components finished
    app_size: NDArray[np.int64] = field(init=False)  # components
    # core components and their summed request per application; its smallest elastic request
    # (inf where none): a cheap "can anything fit" check; the next elastic component to place
    n_core: NDArray[np.int64] = field(init=False)
    core_total: NDArray[np.float32] = field(init=False)
    min_elastic: NDArray[np.float32] = field(init=False)
    next_elastic: NDArray[np.int64] = field(init=False)
    # admission: components returned to wait again, per application, in order; applications with
    # elastic components waiting; the queue of admitted-to-be applications
    returned: _kernels.ComponentLists = field(init=False)
    elastic_waiting: _kernels.AppSet = field(init=False)
    queue: _kernels.AppQueue = field(init=False)
    arrived: int = field(init=False)  # applications arrived so far
    finished: int = field(init=False)  # applications done or rejected
    _running: NDArray[np.int64] | None = field(init=False, default=None)

    def reset(self) -> None:
        """Nothing arrived, nothing running, hosts empty: the state at time 0."""
        wl, n_apps = self.workload, self.workload.n_apps
        cp = wl.comp_indptr
        self.now = 0.0
        self.period = float(wl.period)
        self.comp_state = np.full(wl.n_components, Status.PENDING, np.int8)
        self.comp_ooms = np.zeros(wl.n_components, np.uint8)
        self.app_state = np.full(n_apps, WAITING, np.int8)
        self.app_first_start = np.full(n_apps, np.nan)
        self.app_start = np.full(n_apps, np.nan)
        self.app_end = np.full(n_apps, np.nan)
        self.app_failures = np.zeros(n_apps, np.int32)
        self.app_preemptions = np.zeros(n_apps, np.int32)
        self.app_component_losses = np.zeros(n_apps, np.int32)
        self.app_component_ooms = np.zeros(n_apps, np.int32)
        self.app_work_lost = np.zeros(n_apps, np.float64)
        self.app_work_lost_res = np.zeros((n_apps, R), np.float64)
        self.app_requested = np.zeros((n_apps, R), np.float64)
        self.app_allocated = np.zeros((n_apps, R), np.float64)
        self.app_used = np.zeros((n_apps, R), np.float64)
        self.app_done = np.zeros(n_apps, np.int64)
        self.app_size = np.diff(cp)
        self.n_core, self.core_total, self.min_elastic = app_totals(cp, wl.core, wl.request)
        self.next_elastic = cp[:-1] + self.n_core
        self.returned = _kernels.ComponentLists(n_apps, max(1024, n_apps))
        self.elastic_waiting = _kernels.AppSet(n_apps)
        self.queue = _kernels.AppQueue(self.app_state)
        self.hosts.allocated[:] = 0
        self.hosts.used[:] = 0
        self.wt = WorkloadTable.empty(FIRST_ROWS)
        self.remaining = np.zeros(FIRST_ROWS)
        self.since = np.zeros(FIRST_ROWS)
        self.rate = np.ones(FIRST_ROWS)
        self.free_rows = np.arange(FIRST_ROWS - 1, -1, -1, dtype=np.int64)
        self.free_top = FIRST_ROWS
        self.epoch = np.zeros(FIRST_ROWS, np.int64)
        self.shape_base = np.zeros(FIRST_ROWS, np.int64)
        self.shape_len = np.ones(FIRST_ROWS, np.int64)
        self.shape_offset = np.zeros(FIRST_ROWS, np.int64)
        self.arrived = 0
        self.finished = 0
        self._running = None
        self.last_ooms = (np.empty(0, np.int64), np.empty(0, np.float32))

    # ------------------------------------------------------------------ rows
    def grow(self, n: int) -> None:
        """Grow the rows (doubling) so that at least ``n`` of them are free. The arrays are
        replaced: whoever keeps one across a growth (a kernel's tuple) must take it afresh."""
        old, top = len(self.wt), self.free_top
        size = max(2 * old, old + n)
        self.wt = self.wt.grown(size)
        for name in ROW_ARRAYS:
            arr = getattr(self, name)
            grown = np.zeros(size, arr.dtype)
            grown[:old] = arr
            setattr(self, name, grown)
        stack = np.empty(size, np.int64)
        stack[:top] = self.free_rows[:top]
        stack[top : top + size - old] = np.arange(size - 1, old - 1, -1)
        self.free_rows, self.free_top = stack, top + size - old

    def running_rows(self) -> NDArray[np.int64]:
        """(n,) int64 rows in use, in order. Speed trick: within a tick, where the controller
        and the tick read them several times, computed once until :meth:`rows_moved`."""
        if self._running is None:
            self._running = np.flatnonzero(self.wt.host >= 0)
        return self._running

    def rows_moved(self) -> None:
        """Rows started or stopped: the running rows are read afresh next time."""
        self._running = None

    def cluster_empty(self) -> bool:
        return self.free_top == len(self.wt)  # every row is free

    def row_columns(self) -> _kernels.RowColumns:
        """The workload table's columns and the per-row progress, as the kernels take them (fresh
        each call: growing the table replaces the arrays)."""
        wt = self.wt
        return _kernels.RowColumns(
            wt.component, wt.app, wt.host, wt.request, wt.limit, wt.core, wt.start,
            self.remaining, self.since, self.rate, self.epoch, self.shape_base,
            self.shape_len, self.shape_offset,
        )  # fmt: skip

    def workload_columns(self) -> _kernels.WorkloadColumns:
        wl = self.workload
        return _kernels.WorkloadColumns(
            wl.request, wl.work, wl.core, wl.shape, wl.shape_offset, wl.shapes.indptr,
            wl.shapes.data,
        )  # fmt: skip


def app_totals(
    indptr: NDArray[np.int64], core: NDArray[np.bool_], request: NDArray[np.float32], block=1 << 22
) -> tuple[NDArray[np.int64], NDArray[np.float32], NDArray[np.float32]]:
    """Per application (components ``indptr[a]:indptr[a+1]``): how many core components, their
    summed request and the smallest elastic request, inf where none, (A, R) as ``request`` (float32).

    Exactly ``np.add.reduceat(core)``, ``np.add.reduceat(request * core[:, None], axis=0)`` and
    ``np.minimum.reduceat(np.where(core[:, None], inf, request), axis=0)``, computed a block of
    about ``block`` components at a time in reused buffers. Speed trick: at paper scale (1.4e8
    components) the whole-workload temporaries are 4 GB, and the kernel's zeroing of their fresh
    pages cost more than the sums (benchmarks/bench_simulate.py).
    """
    n_apps = len(indptr) - 1
    n_core = np.empty(n_apps, np.int64)
    core_total = np.empty((n_apps, R), request.dtype)
    min_elastic = np.empty((n_apps, R), request.dtype)
    counts = np.empty(block, np.int64)
    values = np.empty((block, R), request.dtype)
    a = 0
    while a < n_apps:
        b = max(a + 1, int(np.searchsorted(indptr, indptr[a] + block, side="right")) - 1)
        first, stop = int(indptr[a]), int(indptr[b])
        m = stop - first
        if m > len(counts):
            counts, values = np.empty(m, np.int64), np.empty((m, R), request.dtype)
        starts = indptr[a:b] - first
        is_core = core[first:stop]
        counts[:m] = is_core
        n_core[a:b] = np.add.reduceat(counts[:m], starts)
        np.multiply(request[first:stop], is_core[:, None], out=values[:m])
        core_total[a:b] = np.add.reduceat(values[:m], starts, axis=0)
        values[:m] = request[first:stop]
        values[:m][is_core] = np.inf
        min_elastic[a:b] = np.minimum.reduceat(values[:m], starts, axis=0)
        a = b
    return n_core, core_total, min_elastic
