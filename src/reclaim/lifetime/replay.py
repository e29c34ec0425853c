"""The VM pool replay: a :class:`~reclaim.lifetime.vms.VmTable` placed one VM at a time on a pool
of hosts, event by event, with optional defragmentation, and the metrics of the LAVA paper.

Events at one instant run in this order: exits, finished migrations, arrivals (in (arrival, row)
order; the left-censored VMs, which arrive at window start, and the VMs that arrived before it
and are alive then (imputed history), are the initial state and are placed first),
defragmentation checks, metric samples. A VM that fits no host at its arrival is rejected
(counted, never placed later). Times are seconds on the trace's clock; capacity and requests are in
:data:`~reclaim.core.types.RESOURCES_GPU` units (cores, GiB, GPUs).

Metrics (LAVA paper, section 2.3): the time-weighted mean percentage of *empty* hosts (no VM, no
migration holding room) over the measurement interval (window start + ``warmup_s`` to the end);
resource stranding by periodic inflation (:func:`reclaim.metrics.pool.stranding`) every
``inflation_period_s``; migrations started; rejected VMs; lifetime model calls and time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim import registry
from reclaim.core.control import control_step
from reclaim.core.engine import Engine
from reclaim.core.tables import HostTable
from reclaim.core.types import RESOURCES_GPU, Decisions, Status
from reclaim.defrag import Defragmenter
from reclaim.errors import ReclaimError
from reclaim.lifetime.vms import LifetimePredictor, VmTable
from reclaim.metrics.pool import representative_mix, stranding
from reclaim.placement.framework import FIT_TOLERANCE, Placer, build_placer

HOUR = 3600.0
#: Event kinds, which are also their priorities at equal times.
EXIT, MIGRATED, ARRIVE, DEFRAG, SAMPLE = range(5)


class PoolView:
    """The pool's state as placement plugins and the defragmenter see it; columnar.

    hosts: the :class:`~reclaim.core.tables.HostTable` on axes
    :data:`~reclaim.core.types.RESOURCES_GPU` (``allocated``: the requests of the VMs holding room);
    capacity, free: (H, 3) float64, read from it (``free`` a fresh array; ``free_on`` one host's);
    draining: (H,) bool (hosts being emptied by defragmentation, not available for placement);
    host_count: (H,) int64 VMs holding room on each host (a VM being migrated counts on both its
    hosts); vm_host: (N,) int32 host of each VM, -1 when not running;
    vm_dst: (N,) int32 destination of a migration in flight, -1 otherwise; vm_start: (N,) float64
    time the VM started (NaN before); vm_seq: (N,) int64 order in which VMs were placed on their
    current host (migration re-stamps it); axes: (k,) int64 the resources some host has, the only
    ones placement sees; lacking: (N,) bool VMs asking for a resource no host has (rejected).
    ``plugin_state``: per-plugin state keyed by plugin name, so a fresh view means fresh plugin
    state and plugin objects hold settings only.

    Lifetimes come from ``predictor`` through :meth:`initial` (remaining at uptime 0, computed once
    per VM; with ``initial_for_all``, for every VM of the table at the first need) and
    :meth:`remaining` (repredicted at the current uptime, cached per instant); the view counts
    model calls, VMs predicted and seconds spent.
    """

    def __init__(
        self,
        vms: VmTable,
        capacity: NDArray[np.float64],
        predictor: LifetimePredictor | None = None,
        now: float | None = None,
        initial_for_all: bool = False,
    ) -> None:
        self.vms = vms
        self.initial_for_all = initial_for_all
        self.predictor = predictor
        self.hosts = HostTable(np.array(capacity, np.float64), RESOURCES_GPU)
        n_hosts, n = len(self.hosts), len(vms)
        self.now = float(vms.window[0] if now is None else now)
        self.draining = np.zeros(n_hosts, bool)
        self.host_count = np.zeros(n_hosts, np.int64)
        self.vm_host = np.full(n, -1, np.int32)
        self.vm_dst = np.full(n, -1, np.int32)
        self.vm_start = np.full(n, np.nan)
        self.vm_seq = np.zeros(n, np.int64)
        # The placer sees only the resources the pool has: scores that divide by the largest
        # capacity (best-fit's dominant share) are undefined on an axis of zero capacity. A VM
        # asking for a resource the pool lacks fits nowhere and is rejected.
        has = self.hosts.capacity.sum(axis=0) > 0
        self.axes = np.flatnonzero(has)
        self.lacking = (vms.request[:, ~has] > 0).any(axis=1)
        self.plugin_state: dict[str, object] = {}
        self.model_calls, self.predictions, self.model_s = 0, 0, 0.0
        self._seq = 0
        # Running VMs as a dense array with O(1) removal (swap with the last).
        self._run = np.empty(n, np.int64)
        self._pos = np.full(n, -1, np.int64)
        self.n_running = 0
        self._migrating: list[int] = []
        self._initial = np.full(n, np.nan)
        self._rep = np.full(n, np.nan)
        self._rep_at = np.full(n, np.nan)

    @classmethod
    def with_placements(
        cls,
        vms: VmTable,
        capacity: NDArray[np.float64],
        hosts: NDArray[np.int32],
        now: float,
        predictor: LifetimePredictor | None = None,
    ) -> PoolView:
        """A view at time ``now`` where VM row ``v`` runs on ``hosts[v]`` (-1: not running), bound
        in row order (tests and the conformance suite build pools this way)."""
        view = cls(vms, capacity, predictor, now)
        for vm in np.flatnonzero(np.asarray(hosts) >= 0):
            view.bind(int(vm), int(hosts[vm]))
        return view

    # -- reading -------------------------------------------------------------------------------
    @property
    def capacity(self) -> NDArray[np.float64]:
        """(H, 3) each host's capacity."""
        return self.hosts.capacity

    @property
    def free(self) -> NDArray[np.float64]:
        """(H, 3) room not held by a VM, on every host (a fresh array)."""
        return self.hosts.room

    def free_on(self, host: int) -> NDArray[np.float64]:
        """(3,) room not held by a VM on ``host`` (one row of :attr:`free`, without the rest)."""
        return self.hosts.room_of(host)

    @property
    def up(self) -> NDArray[np.bool_]:
        """(H,) hosts open to placement."""
        return self.hosts.up & ~self.draining

    @property
    def running(self) -> NDArray[np.int64]:
        """(n,) rows of the running VMs (in no particular but deterministic order)."""
        return self._run[: self.n_running]

    @property
    def empty(self) -> NDArray[np.bool_]:
        """(H,) hosts with no VM holding room."""
        return self.host_count == 0

    def members(
        self, hosts: NDArray[np.bool_] | None = None
    ) -> tuple[NDArray[np.int64], NDArray[np.int32]]:
        """(vm, host) pairs of VMs holding room on the hosts selected by ``hosts`` (H,) bool (all
        when None); a VM in migration appears on its source and its destination."""
        vm = self.running
        host = self.vm_host[vm]
        if self._migrating:
            mig = np.array(self._migrating, np.int64)
            vm = np.concatenate([vm, mig])
            host = np.concatenate([host, self.vm_dst[mig]])
        if hosts is not None:
            keep = hosts[host]
            vm, host = vm[keep], host[keep]
        return vm, host

    def host_vms(self, host: int) -> NDArray[np.int64]:
        """Rows of the VMs holding room on ``host``, by placement order."""
        vm, h = self.members()
        vm = vm[h == host]
        return vm[np.argsort(self.vm_seq[vm], kind="stable")]

    def _predict(self, vms: NDArray[np.int64], uptime: NDArray[np.float64]) -> NDArray:
        if self.predictor is None:
            raise ReclaimError("lifetime-aware placement needs a lifetime predictor in the replay")
        t0 = time.perf_counter()
        out = np.asarray(self.predictor.remaining(vms, uptime), np.float64)
        self.model_s += time.perf_counter() - t0
        self.model_calls += 1
        self.predictions += len(vms)
        return out

    def initial(self, vms: NDArray[np.int64]) -> NDArray[np.float64]:
        """(n,) s predicted lifetime of ``vms`` at uptime 0 (one-shot: computed once, kept).

        Speed trick (``initial_for_all``, which the replay sets; ``benchmarks/bench_pool_replay.py
        --azure``): a prediction at uptime 0 reads only the VM's own features, known at its
        arrival, so the first call predicts every VM of the table in one batched kernel call
        instead of one call per arriving VM (whose fixed cost, ~30 us, is six kernel
        predictions). Same values, counted in the model time."""
        vms = np.asarray(vms, np.int64)
        out = self._initial[vms]
        miss = np.isnan(out)
        if miss.any():
            if self.initial_for_all:
                todo = np.flatnonzero(np.isnan(self._initial))
            else:
                todo = np.unique(vms[miss])
            self._initial[todo] = self._predict(todo, np.zeros(len(todo)))
            out = self._initial[vms]
        return out

    def remaining(self, vms: NDArray[np.int64]) -> NDArray[np.float64]:
        """(n,) s repredicted remaining lifetime of ``vms`` at their uptime now (uptime counts from
        arrival; 0 for a VM being placed at its arrival, which reuses the initial prediction).
        Cached per instant: a second call at the same time predicts only the VMs not yet seen."""
        vms = np.asarray(vms, np.int64)
        miss = self._rep_at[vms] != self.now
        if miss.any():
            todo = np.unique(vms[miss])
            uptime = np.maximum(self.now - self.vms.arrival[todo], 0.0)
            values = np.empty(len(todo))
            fresh = uptime == 0
            if fresh.any():
                values[fresh] = self.initial(todo[fresh])
            if (~fresh).any():
                values[~fresh] = self._predict(todo[~fresh], uptime[~fresh])
            self._rep[todo] = values
            self._rep_at[todo] = self.now
        return self._rep[vms]

    # -- bookkeeping (the replay's, in this order: update the view, then the placer's hooks) ---
    def bind(self, vm: int, host: int) -> None:
        """``vm`` starts on ``host``, holding its request's room there."""
        self.hosts.take(host, self.vms.request[vm])
        self._attach(vm, host)
        self.vm_start[vm] = self.now
        self._pos[vm] = self.n_running
        self._run[self.n_running] = vm
        self.n_running += 1

    def _attach(self, vm: int, host: int) -> None:
        self.vm_host[vm] = host
        self.host_count[host] += 1
        self.vm_seq[vm] = self._seq
        self._seq += 1

    def release(self, vm: int) -> list[int]:
        """``vm`` exits; returns the hosts it held room on (two when it was migrating)."""
        held = [int(self.vm_host[vm])]
        if self.vm_dst[vm] >= 0:
            held.append(int(self.vm_dst[vm]))
            self.vm_dst[vm] = -1
            self._migrating.remove(vm)
        for h in held:
            self.hosts.give(h, self.vms.request[vm])
            self.host_count[h] -= 1
        self.vm_host[vm] = -1
        last = self._run[self.n_running - 1]
        self._run[self._pos[vm]] = last
        self._pos[last] = self._pos[vm]
        self._pos[vm] = -1
        self.n_running -= 1
        return held

    def start_migration(self, vm: int, dst: int) -> None:
        """``vm`` holds room on ``dst`` as well."""
        self.hosts.take(dst, self.vms.request[vm])
        self.vm_dst[vm] = dst
        self.host_count[dst] += 1
        self._migrating.append(vm)

    def finish_migration(self, vm: int) -> int:
        """``vm`` leaves its source for its destination; returns the source."""
        src, dst = int(self.vm_host[vm]), int(self.vm_dst[vm])
        self.hosts.give(src, self.vms.request[vm])
        self.host_count[src] -= 1
        self.host_count[dst] -= 1  # _attach counts it again
        self.vm_dst[vm] = -1
        self._migrating.remove(vm)
        self._attach(vm, dst)
        return src


@dataclass
class PoolResult:
    """What one replay measured. stranded_pct: (3,) mean stranded capacity per resource, % of the
    pool's capacity (NaN when no inflation ran); model_s: seconds in the lifetime model;
    predictions: VM rows predicted; host_of: (N,) int32 host each VM was first placed on (-1:
    rejected or never arrived before the end); drains: (time, host) of every host defragmentation
    started to drain; drained: (time, VM) of the VMs on them then, in placement order (the
    migration list :func:`reclaim.defrag.replay_migrations` reorders); timeline: one row per metric sample; view: the
    pool at the end of the replay."""

    empty_hosts_pct: float
    stranded_pct: NDArray[np.float64]
    migrations: int
    rejected: int
    vms: int
    model_calls: int
    predictions: int
    model_s: float
    wall_s: float
    host_of: NDArray[np.int32]
    drains: tuple[tuple[float, int], ...]
    drained: tuple[tuple[float, int], ...]
    timeline: pl.DataFrame = field(repr=False)
    view: PoolView | None = field(default=None, repr=False)

    def summary(self) -> dict[str, float]:
        return {
            "empty_hosts_pct": float(self.empty_hosts_pct),
            "stranded_cpu_pct": float(self.stranded_pct[0]),
            "stranded_mem_pct": float(self.stranded_pct[1]),
            "stranded_gpu_pct": float(self.stranded_pct[2]),
            "migrations": float(self.migrations),
            "rejected": float(self.rejected),
            "vms": float(self.vms),
            "model_calls": float(self.model_calls),
            # Lifetime-model time per VM of the trace: what lifetime awareness costs a placement.
            "model_us_per_vm": 1e6 * self.model_s / max(self.vms, 1),
            "wall_s": float(self.wall_s),
        }


def replay_pool(
    vms: VmTable,
    capacity: NDArray[np.float64],
    placer: str | Placer = "best-fit",
    predictor: LifetimePredictor | None = None,
    *,
    defrag: str | Defragmenter | None = None,
    warmup_s: float = 0.0,
    end: float | None = None,
    inflation_period_s: float | None = 6 * HOUR,
    mix_size: int = 16,
) -> PoolResult:
    """Replay ``vms`` on hosts of ``capacity`` (H, 3) with ``placer`` (a spec such as
    ``"lava>las>best-fit"`` or a :class:`Placer`; the lifetime plugins keep their state in the
    replay's view, so one placer can serve many replays). ``predictor``: needed by lifetime-aware
    plugins and by the LARS order.

    defrag: None, a registered name (``"baseline"``, ``"lars"``) or a defragmenter object.
    warmup_s: seconds after window start not measured. end: last instant replayed (default
    window end). inflation_period_s: seconds between stranding measurements (None: none);
    mix_size: most frequent request shapes of ``vms`` in the inflation mix. Deterministic.
    """
    t_wall = time.perf_counter()
    if isinstance(placer, str):
        placer = build_placer(placer)
    if isinstance(defrag, str):
        defrag = registry.build("defrag", defrag)
    capacity = np.asarray(capacity, np.float64)
    if capacity.ndim != 2 or capacity.shape[1] != vms.request.shape[1]:
        raise ReclaimError(
            f"pool capacity must be (hosts, {vms.request.shape[1]}), not {capacity.shape}"
        )
    view = PoolView(vms, capacity, predictor, initial_for_all=True)
    start = float(vms.window[0])
    stop = float(vms.window[1] if end is None else end)
    m0 = start + warmup_s
    if not m0 < stop:
        raise ReclaimError(f"nothing to measure: warm-up {warmup_s} s reaches the end {stop}")
    shapes, weights = representative_mix(vms.request, mix_size)
    run = _PoolReplay(view, placer, defrag, m0, stop, shapes, weights)

    engine = Engine(
        {
            EXIT: run.exit,
            MIGRATED: run.migrated,
            ARRIVE: run.arrive,
            DEFRAG: run.defrag_check,
            SAMPLE: run.sample,
        }
    )
    run.engine = engine
    rows = np.arange(len(vms))
    # VMs that arrived before the window (imputed history) and are alive at its start are
    # placed at the start, after nothing, in arrival order like the left-censored ones.
    inside = ((vms.arrival >= start) | (vms.exit > start)) & (vms.arrival <= stop)
    arrive_at = np.maximum(vms.arrival, start)
    events = [(float(arrive_at[v]), ARRIVE, ARRIVE, int(v)) for v in rows[inside]]
    if inflation_period_s:
        k = np.arange(int(np.floor((stop - m0) / inflation_period_s)) + 1)
        events += [(m0 + i * inflation_period_s, SAMPLE, SAMPLE, int(i)) for i in k]
    if defrag is not None:
        k = np.arange(1, int(np.floor((stop - start) / defrag.period_s)) + 1)
        events += [(start + i * defrag.period_s, DEFRAG, DEFRAG, int(i)) for i in k]
    engine.schedule_many(events)
    engine.run(until=stop)
    run.advance(stop)

    empty_pct = 100.0 * run.empty_integral / (len(capacity) * (stop - m0))
    stranded = np.mean(run.stranded, axis=0) if run.stranded else np.full(capacity.shape[1], np.nan)
    return PoolResult(
        empty_hosts_pct=empty_pct,
        stranded_pct=stranded,
        migrations=run.migrations,
        rejected=run.rejected,
        vms=int(inside.sum()),
        model_calls=view.model_calls,
        predictions=view.predictions,
        model_s=view.model_s,
        wall_s=time.perf_counter() - t_wall,
        host_of=run.host_of,
        drains=tuple(run.drains),
        drained=tuple(run.drained),
        timeline=pl.DataFrame(run.timeline, schema=TIMELINE_SCHEMA, orient="row"),
        view=view,
    )


TIMELINE_SCHEMA = {
    "time": pl.Float64,
    "empty_hosts": pl.Int64,
    "empty_hosts_pct": pl.Float64,
    "running": pl.Int64,
    "cpu_allocated_pct": pl.Float64,
    "mem_allocated_pct": pl.Float64,
    "stranded_cpu_pct": pl.Float64,
    "stranded_mem_pct": pl.Float64,
    "stranded_gpu_pct": pl.Float64,
    "migrations": pl.Int64,
    "rejected": pl.Int64,
}


class _PoolReplay:
    """Event handlers of one replay and what they count."""

    def __init__(self, view, placer, defrag, m0, m1, shapes, weights) -> None:
        self.view, self.placer, self.defrag = view, placer, defrag
        self.m0, self.m1, self.shapes, self.weights = m0, m1, shapes, weights
        self.engine: Engine | None = None
        self.last = view.now
        self.empty_integral = 0.0
        self.migrations = self.rejected = 0
        self.drains: list[tuple[float, int]] = []
        self.drained: list[tuple[float, int]] = []
        self.in_flight = 0
        self.host_of = np.full(len(view.vms), -1, np.int32)
        self.stranded: list[NDArray[np.float64]] = []
        self.timeline: list[tuple] = []

    def advance(self, t: float) -> None:
        """Move the clock to ``t``, adding the empty hosts of [last, t) inside the measurement."""
        lo, hi = max(self.last, self.m0), min(t, self.m1)
        if hi > lo:
            self.empty_integral += np.count_nonzero(self.view.host_count == 0) * (hi - lo)
        self.last = max(self.last, t)
        self.view.now = t

    def arrive(self, t: float, vm: int) -> None:
        self.advance(t)
        view = self.view
        host = self._choose(vm)
        if host < 0:
            self.rejected += 1
            return
        view.bind(vm, host)
        self.host_of[vm] = host
        self.placer.on_bind(view, vm, host)
        if np.isfinite(view.vms.exit[vm]):
            self.engine.schedule(float(view.vms.exit[vm]), EXIT, EXIT, vm)

    def _choose(self, vm: int) -> int:
        """The placer's host for ``vm`` now (-1: none fits); binds nothing."""
        view, axes = self.view, self.view.axes
        if view.lacking[vm]:
            return -1
        return int(
            self.placer.place(
                view.capacity[:, axes],
                view.free[:, axes],  # a fresh array: the view records the bind itself
                view.up,
                view.vms.request[vm : vm + 1, axes],
                view=view,
                items=np.array([vm]),
            )[0]
        )

    def _checked(self, vm: int, host: int) -> int:
        """``host``, the destination a defragmenter named for ``vm``, if ``vm`` fits there now
        and it is open to placement; -1 otherwise (the VM waits, as when the placer finds none)."""
        view = self.view
        if not 0 <= host < len(view.capacity):
            raise ReclaimError(f"defragmenter named host {host}; the pool has {len(view.capacity)}")
        open_ = view.hosts.up[host] and not view.draining[host] and host != view.vm_host[vm]
        fits = bool((view.free_on(host) + FIT_TOLERANCE >= view.vms.request[vm]).all())
        return host if open_ and fits else -1

    def exit(self, t: float, vm: int) -> None:
        self.advance(t)
        view = self.view
        if view.vm_host[vm] < 0:
            return
        migrating = view.vm_dst[vm] >= 0
        held = view.release(vm)
        if migrating:
            self.in_flight -= 1  # the migration is abandoned with the VM
        for h in held:
            self.placer.on_exit(view, vm, h)
        self._after_leaving(held)

    def migrated(self, t: float, vm: int) -> None:
        self.advance(t)
        view = self.view
        if view.vm_dst[vm] < 0:  # the VM exited while migrating
            return
        self.in_flight -= 1
        src = view.finish_migration(vm)
        self.placer.on_exit(view, vm, src)
        self._after_leaving([src])

    def _after_leaving(self, hosts: list[int]) -> None:
        if self.defrag is None:
            return
        for h in hosts:
            if self.view.draining[h] and self.view.host_count[h] == 0:
                self.view.draining[h] = False  # drained: back in service for any VM
        self._start_migrations()

    def defrag_check(self, t: float, _: int) -> None:
        self.advance(t)
        stuck = self._start_migrations()
        self.defrag.release_stuck(self.view, stuck, self._sources_in_flight())
        hosts = self.defrag.choose_hosts(self.view)
        if len(hosts):
            self.drains.extend((t, int(h)) for h in hosts)
            for h in hosts:
                self.drained.extend((t, int(vm)) for vm in self.view.host_vms(int(h)))
            self._start_migrations()

    def _sources_in_flight(self) -> NDArray[np.int32]:
        view = self.view
        return view.vm_host[np.flatnonzero(view.vm_dst >= 0)]

    def _start_migrations(self) -> set[int]:
        """Start migrations from draining hosts while slots are free; returns the draining hosts
        with a VM that found no destination."""
        view = self.view
        if self.defrag is None or not view.draining.any():
            return set()
        step = control_step(view, self.defrag, None, self)
        refused = step.decisions.migrate_rows[step.status == Status.UNSCHEDULABLE]
        return set(view.vm_host[refused].tolist())  # a refused VM stays where it was

    def apply(self, decisions: Decisions) -> NDArray[np.int8]:
        """The migrate actuator: start the migrations in order while fewer than the
        defragmenter's ``max_in_flight`` run (the rest stay PENDING, asked again later); a VM
        with no destination (the placer's, or the named host unfit) is UNSCHEDULABLE."""
        decisions.require(("migrate",), "the LAVA pool replay")
        view = self.view
        rows, hosts = decisions.migrate_rows, decisions.migrate_hosts
        status = np.full(len(rows), Status.PENDING, np.int8)
        for i, (vm, dst) in enumerate(zip(rows.tolist(), hosts.tolist(), strict=True)):
            if self.in_flight >= self.defrag.max_in_flight:
                break
            dst = self._choose(vm) if dst < 0 else self._checked(vm, dst)
            if dst < 0:
                status[i] = Status.UNSCHEDULABLE
                continue
            view.start_migration(vm, dst)
            self.placer.on_bind(view, vm, dst)
            self.migrations += 1
            self.in_flight += 1
            self.engine.schedule(view.now + self.defrag.migration_s, MIGRATED, MIGRATED, vm)
            status[i] = Status.OK
        return status

    def sample(self, t: float, _: int) -> None:
        self.advance(t)
        view = self.view
        free = view.free
        stranded = stranding(free, view.capacity, self.shapes, self.weights)
        self.stranded.append(stranded)
        total = view.capacity.sum(axis=0)
        used = total - free.sum(axis=0)
        empty = int(np.count_nonzero(view.host_count == 0))
        self.timeline.append(
            (
                t,
                empty,
                100.0 * empty / len(view.capacity),
                view.n_running,
                100.0 * used[0] / total[0] if total[0] > 0 else 0.0,
                100.0 * used[1] / total[1] if total[1] > 0 else 0.0,
                *(float(x) for x in stranded),
                self.migrations,
                self.rejected,
            )
        )
