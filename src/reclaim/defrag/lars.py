"""LARS, lifetime-aware rescheduling (LAVA paper, sections 4.4, 5.1, 6.3), and its baseline.

When the pool's fraction of empty hosts falls below ``threshold`` (checked every ``period_s``), the
defragmenter picks ``hosts_per_round`` hosts to drain (fewest VMs first, then most free capacity)
and marks them unavailable for placement. Their VMs are migrated at most ``max_in_flight`` (3) at a
time; a migration holds the VM's room on its source and its destination for ``migration_s``
(20 min). The destination is chosen by the same placer as initial placement. A VM that exits while
it waits is never migrated: that is where the order matters. A drained host returns to service
when empty. The order, across all draining hosts:

* ``"baseline"``: the order in which the VMs were placed on their hosts, oldest first (the paper's
  baseline is the trace's order of migrations);
* ``"lars"``: longest repredicted remaining lifetime first (ties: placement order).

The replay (``reclaim.lifetime.replay``) runs the events; this module decides which hosts and in
what order.

In a closed loop the order changes the pool, hence later drains (LARS empties hosts sooner, and
the destinations differ), so the migration counts of two orders in two full replays compare
different work. The paper compares orders on one fixed list of migrations (sections 5.1, 6.3: the
migrations of a trace, performed in some order, 3 at a time, each waiting for a slot; "LARS does
not affect which hosts are picked"): :func:`replay_migrations` is that simulator, fed with the VMs
a pool replay drained (``PoolResult.drained``).
"""

from __future__ import annotations

import functools
import heapq
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.component import Component
from reclaim.core.types import Decisions
from reclaim.errors import ReclaimError
from reclaim.registry import register

ORDERS = ("baseline", "lars")


def choose_drain_hosts(view, k: int) -> NDArray[np.int64]:
    """Up to ``k`` non-empty hosts open to placement to drain: fewest VMs first, then the most
    free capacity (sum over resources of free / capacity), then the lower index."""
    candidates = np.flatnonzero((view.host_count > 0) & ~view.draining)
    if len(candidates) == 0:
        return candidates
    cap = view.capacity[candidates]
    spare = np.divide(view.free[candidates], cap, out=np.zeros_like(cap), where=cap > 0).sum(axis=1)
    order = np.lexsort((candidates, -spare, view.host_count[candidates]))
    return candidates[order[:k]]


def migration_order(view, vms: NDArray[np.int64], order: str) -> NDArray[np.int64]:
    """``vms`` (n,) in the order they are to be migrated (see module docstring)."""
    vms = np.asarray(vms, np.int64)
    seq = view.vm_seq[vms]
    if order == "baseline":
        return vms[np.argsort(seq, kind="stable")]
    if order == "lars":
        return vms[np.lexsort((seq, -view.remaining(vms)))]
    raise ReclaimError(f"migration order must be one of {ORDERS}, not {order!r}")


@dataclass
class Defragmenter(Component):
    """Settings of a defragmentation policy (see module docstring); times in seconds."""

    order: str = "lars"
    threshold: float = 0.05
    period_s: float = 3600.0
    hosts_per_round: int = 2
    max_in_flight: int = 3
    migration_s: float = 1200.0
    __capabilities__ = ControllerCapabilities(needs_forecast=False)

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ReclaimError(f"defrag order must be one of {ORDERS}, not {self.order!r}")

    def choose_hosts(self, view) -> NDArray[np.int64]:
        """Mark hosts draining and return them: a round when no host is draining and empty hosts
        are below ``threshold``."""
        if view.draining.any() or np.mean(view.host_count == 0) >= self.threshold:
            hosts = np.empty(0, np.int64)
        else:
            hosts = choose_drain_hosts(view, self.hosts_per_round)
        view.draining[hosts] = True
        return hosts

    def queue(self, view) -> NDArray[np.int64]:
        """VMs waiting to leave draining hosts (not yet migrating), in migration order."""
        vm = view.running
        waiting = vm[view.draining[view.vm_host[vm]] & (view.vm_dst[vm] < 0)]
        return migration_order(view, waiting, self.order)

    def decide(self, view, forecast: object = None) -> Decisions:
        """The migrations wanted now, as a policy on the control step states them: the VMs
        waiting to leave draining hosts, in migration order, each to the host the placer picks
        (-1)."""
        return Decisions(migrate_rows=self.queue(view), migrate_hosts=-1)

    def release_stuck(self, view, stuck: set[int], sources: NDArray[np.int32]) -> None:
        """Give up draining hosts whose waiting VMs found no destination and from which nothing is
        migrating (``sources``: the source hosts of migrations in flight)."""
        for h in stuck - set(np.asarray(sources).tolist()):
            view.draining[h] = False


#: The two orders by name, for configs and sweeps (``registry.build("defrag", "lars")``).
lars = register("defrag", "lars")(functools.partial(Defragmenter, order="lars"))
baseline = register("defrag", "baseline")(functools.partial(Defragmenter, order="baseline"))


def replay_migrations(
    release: NDArray[np.float64],
    exit: NDArray[np.float64],
    key: NDArray[np.float64] | None = None,
    max_in_flight: int = 3,
    migration_s: float = 1200.0,
) -> NDArray[np.bool_]:
    """(n,) which of a fixed list of migrations are performed (the paper's LARS simulator).

    Migration ``i`` joins the queue at ``release[i]`` (its host starts draining) and its VM exits
    at ``exit[i]``; rows are in baseline order (release time, then placement order). At most
    ``max_in_flight`` run at once, each for ``migration_s`` (or until its VM exits); a free slot
    takes the first waiting row (``key`` None: baseline order) or the highest ``key`` (LARS:
    predicted exit time; ties in row order). A VM that exits while it waits is not migrated.
    """
    release = np.asarray(release, np.float64)
    exit = np.asarray(exit, np.float64)
    prio = np.zeros(len(release)) if key is None else -np.asarray(key, np.float64)
    order = np.argsort(release, kind="stable")
    migrated = np.zeros(len(release), bool)
    waiting: list[tuple[float, int]] = []  # (priority, row): heap order = migration order
    busy: list[float] = []  # end times of the migrations in flight
    nxt, now = 0, -np.inf
    while True:
        while nxt < len(order) and release[order[nxt]] <= now:
            heapq.heappush(waiting, (prio[order[nxt]], int(order[nxt])))
            nxt += 1
        while busy and busy[0] <= now:
            heapq.heappop(busy)
        while waiting and len(busy) < max_in_flight:
            _, i = heapq.heappop(waiting)
            if exit[i] <= now:
                continue  # exited while waiting: never migrated
            migrated[i] = True
            heapq.heappush(busy, min(now + migration_s, exit[i]))
        events = [release[order[nxt]]] if nxt < len(order) else []
        if busy and waiting:
            events.append(busy[0])
        if not events:
            return migrated
        now = min(events)
