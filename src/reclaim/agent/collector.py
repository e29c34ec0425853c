"""The collector: reads the managed cgroups each period into a live :class:`ClusterView`.

The view is the one the simulator's controllers read (one host: the parent cgroup, whose
capacity is the configured size, else the parent's own limits, else the machine), so
``Controller.decide`` runs unchanged. Row i of the workload table is configured component i for
the agent's whole life; a component runs (``host == 0``) while its cgroup holds processes.

Usage is what the cgroup files say: CPU as the rate of the cumulative CPU-seconds counter between
two reads (cores), memory as the cgroup's charge (GiB; v1 ``usage_in_bytes`` includes page cache,
which the kernel reclaims first under a soft limit). A component's first read only primes its
CPU counters, so its first sample arrives one period after it is seen.

Throttling: a component held at its CPU quota shows usage equal to the quota, so usage alone
cannot say it wants more. The kernel's count of throttled CFS periods can: a component whose count
rose since the last read is marked ``throttled`` for that period.
"""

from __future__ import annotations

import os

import numpy as np
from numpy.typing import NDArray

from reclaim.agent.cgroups import GARBLED, GIB, Cgroups
from reclaim.agent.config import AgentSettings, Components
from reclaim.core.grouped import GroupedArray
from reclaim.core.tables import HostTable, WorkloadTable
from reclaim.core.types import CPU, MEM, R


def machine_capacity() -> NDArray[np.float64]:
    """(R,) this machine's cores and memory (GiB)."""
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    return np.array([float(os.cpu_count() or 1), mem])


class LiveView:
    """:class:`reclaim.core.view.ClusterView` over the managed cgroups at the last read.

    hist: (W, window, R) float32 each component's last samples, right-aligned (oldest first);
    count: (W,) int64 samples held. The collector mutates the arrays in place each period.
    """

    def __init__(self, comps: Components, window: int) -> None:
        n = len(comps)
        self.now = 0.0
        self.hosts = HostTable(np.zeros((1, R)))
        wl = WorkloadTable.empty(n)
        wl.component[:] = np.arange(n)
        wl.app[:] = comps.app
        wl.request[:] = comps.request
        wl.limit[:] = np.inf
        wl.core[:] = comps.core
        wl.start[:] = np.nan
        self.workloads = wl
        self.app_failures = np.zeros(len(comps.apps), np.int32)
        self.component_ooms = np.zeros(n, np.uint8)
        self.recent_ooms = (np.empty(0, np.int64), np.empty(0, np.float32))
        self.hist = np.zeros((n, window, R), np.float32)
        self.count = np.zeros(n, np.int64)

    @property
    def running(self) -> NDArray[np.int64]:
        return np.flatnonzero(self.workloads.host >= 0)

    def usage_history(self, rows: NDArray[np.integer], window: int) -> GroupedArray:
        """Per row, its last samples (n, R) float32 cores and GiB, at most ``window``, oldest first."""
        rows = np.asarray(rows, np.int64)
        held = self.hist.shape[1]
        lengths = np.minimum(self.count[rows], min(window, held))
        keep = np.arange(held)[None, :] >= held - lengths[:, None]  # right-aligned
        data = self.hist[rows][keep]
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return GroupedArray(data, indptr)


class Collector:
    """Reads usage, keeps each component's series and builds the live view.

    State is columnar, one array per field (W components): start (first seen, s), prev_cpu_s,
    prev_throttled and prev_t (the CPU counters at the last read), last_ok (time of the last good
    sample); throttled (W,) bool: the throttled-period count rose since the last read.
    """

    def __init__(self, settings: AgentSettings, cgroups: Cgroups) -> None:
        self.settings = settings
        self.cgroups = cgroups
        self.comps = settings.components
        self.view = LiveView(self.comps, settings.window)
        n = len(self.comps)
        self.prev_cpu_s = np.full(n, np.nan)
        self.prev_t = np.full(n, np.nan)
        self.prev_throttled = np.full(n, -1, np.int64)
        self.throttled = np.zeros(n, bool)
        self.last_ok = np.full(n, np.nan)
        self.stale = np.zeros(n, bool)
        self.garbled = np.zeros(n, bool)  # usage files there, but holding no number
        self.sampled = np.empty(0, np.int64)  # rows that got a sample at the last read

    def resume(
        self, first_seen: NDArray[np.float64], hist: NDArray, count: NDArray, last: NDArray
    ) -> None:
        """Carry on from a database: components that were running keep their start time and
        their series (if they still run at the first read)."""
        self.view.workloads.start[:] = first_seen
        self.view.hist[:] = hist
        self.view.count[:] = count
        self.last_ok[:] = last

    def capacity(self) -> NDArray[np.float64]:
        """(R,) what the components may use in total: configured, else the parent's limits,
        else the machine. Read every period, so lowering the parent's limit is seen at once."""
        cap = self.cgroups.capacity()
        machine = machine_capacity()
        cap = np.where(np.isfinite(cap), cap, machine)
        s = self.settings
        if s.host_cpu is not None:
            cap[CPU] = s.host_cpu
        if s.host_mem_gib is not None:
            cap[MEM] = s.host_mem_gib
        return cap

    def observe(self, now: float) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Read every component at ``now`` and update the view; returns the rows that started
        and the rows that stopped running since the last read."""
        view, wl = self.view, self.view.workloads
        view.now = now
        cpu_s, mem, ooms, throttled, procs = self.cgroups.read_usage(self.comps.names)
        readable = procs >= 0
        alive = procs > 0
        was = wl.host >= 0
        # an unreadable cgroup that still exists is stale, not stopped: it keeps its row; one
        # whose files hold no number runs too (never a silent zero) and is flagged at once
        for i in np.flatnonzero((was | (procs == GARBLED)) & ~readable):
            alive[i] = self.cgroups.exists(self.comps.names[i])
        self.garbled = alive & (procs == GARBLED)
        started = np.flatnonzero(alive & ~was)
        stopped = np.flatnonzero(was & ~alive)
        fresh = started[~np.isfinite(wl.start[started]) | (self.view.count[started] == 0)]
        # the others (running at the first read after a restart) keep their start and series
        wl.start[fresh] = now
        view.hist[fresh] = 0
        view.count[fresh] = 0
        view.hist[stopped] = 0
        view.count[stopped] = 0
        wl.start[stopped] = np.nan
        for i in stopped:
            self.cgroups.forget(self.comps.names[i])
        wl.host[:] = np.where(alive, 0, -1)
        if len(started):
            wl.limit[started] = self.cgroups.read_limits([self.comps.names[i] for i in started])
        wl.used[stopped] = 0

        ok = alive & readable
        dt = now - self.prev_t
        sampled = ok & np.isfinite(dt) & (dt > 0) & (cpu_s >= self.prev_cpu_s)
        rows = np.flatnonzero(sampled)
        usage = np.stack([(cpu_s[rows] - self.prev_cpu_s[rows]) / dt[rows], mem[rows]], axis=1)
        view.hist[rows, :-1] = view.hist[rows, 1:]
        view.hist[rows, -1] = usage
        view.count[rows] += 1
        wl.used[rows] = usage
        self.last_ok[rows] = now
        primed = ok & (self.prev_throttled >= 0)
        self.throttled = primed & (throttled > self.prev_throttled)
        self.prev_throttled = np.where(ok, throttled, -1)
        self.prev_cpu_s = np.where(ok, cpu_s, np.nan)
        self.prev_t = np.where(ok, now, np.nan)
        # stale: running but no good sample for too long (never sampled counts from its start)
        since = np.where(np.isfinite(self.last_ok), self.last_ok, wl.start)
        self.stale = alive & (now - since > self.settings.stale_s) | self.garbled

        before = view.component_ooms.astype(np.int64)
        view.component_ooms[:] = np.minimum(np.where(readable, ooms, before), 255)
        hit = np.flatnonzero(view.component_ooms > before)
        view.recent_ooms = (hit.astype(np.int64), mem[hit].astype(np.float32))

        running = view.running
        view.hosts.capacity[0] = self.capacity()
        limits = np.where(np.isfinite(wl.limit[running]), wl.limit[running], wl.request[running])
        view.hosts.allocated[0] = limits.sum(axis=0)
        view.hosts.used[0] = wl.used[running].sum(axis=0)
        self.sampled = rows
        return started, stopped
