"""Lifetime-aware placement scores: LA-Binary, LAS and LAVA (LAVA paper, sections 2.4, 4.2, 4.3).

Each scores from the pool's state, a :class:`reclaim.lifetime.replay.PoolView` passed as
``CycleState.view`` with the VMs being placed as ``CycleState.items``; without them they raise
ReclaimError. Each owns one concern and leaves packing to a later plugin of a lexicographic spec:
``"la-binary>best-fit"``, ``"las>best-fit"``, ``"lava>las>best-fit"``. Scores are vectorised over
hosts; per-host state (LAVA's) lives in ``view.plugin_state`` as arrays, so plugin objects hold
settings only.

LA-Binary, as the LAVA paper describes Barbalho et al. (MLSys 2023), our reading: one prediction per
VM at its arrival (remaining lifetime at uptime 0, never repredicted); a VM is *long* when that
prediction is at least ``cutoff_s`` (2 h), else *short*. A host's class is the class of its longest
remaining VM by those initial predictions: remaining = start + initial prediction - now, and a VM
past its predicted exit counts as 0 remaining (short). A VM prefers a non-empty host of its own
class, then any other non-empty host, then an empty host; best-fit breaks ties (the "Best Fit" LA
uses). A VM being migrated is classed by its remaining time by the same initial prediction.

LAS: temporal cost = index of the bucket of dT = max(vm_exit - host_exit, 0) among
:data:`LAS_BOUNDS_S`, buckets closed on the left, [b_i, b_i+1) -> i (so 70 min -> 2, 30 min -> 1,
0 -> 0, 168 h and above -> 10); vm_exit = now + the VM's predicted remaining lifetime at its current
uptime (0 at arrival), host_exit = max over the VMs on the host of now + their repredicted
remaining lifetime (an empty host exits now, so its cost comes from the VM's whole lifetime).
Lower cost is better (the raw score is minus the cost).

LAVA: see :class:`Lava`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import PlacementCapabilities
from reclaim.core.component import Component
from reclaim.errors import ReclaimError
from reclaim.placement.framework import CycleState, min_max_normalize
from reclaim.registry import register

HOUR = 3600.0
#: LAS bucket boundaries (s): 0m, 30m, 60m, 90m, 2h, 3h, 4h, 6h, 12h, 24h, 168h.
LAS_BOUNDS_S = np.array([0, 30, 60, 90, 120, 180, 240, 360, 720, 1440, 10080], np.float64) * 60
#: Upper bounds (s) of LAVA's lifetime classes LC1..LC4: <1h, 1-10h, 10-100h, >=100h.
CLASS_UPPER_S = np.array([1.0, 10.0, 100.0, 1000.0]) * HOUR
#: LAVA host states.
EMPTY, OPEN, RECYCLING = 0, 1, 2


def temporal_cost(delta_s: NDArray[np.float64]) -> NDArray[np.int64]:
    """LAS temporal cost of ``delta_s`` (any shape, s; negative counts as 0): bucket index 0..10."""
    delta = np.maximum(np.asarray(delta_s, np.float64), 0.0)
    return np.searchsorted(LAS_BOUNDS_S, delta, side="right") - 1


def lifetime_class(seconds: NDArray[np.float64]) -> NDArray[np.int8]:
    """LAVA lifetime class 1..4 of predicted lifetimes ``seconds``: <1h, [1h, 10h), [10h, 100h),
    >=100h (above 1000 h clamped to LC4)."""
    s = np.asarray(seconds, np.float64)
    return (1 + np.searchsorted(CLASS_UPPER_S[:3], s, side="right")).astype(np.int8)


def _view(state: CycleState, name: str):
    if state.view is None or state.items is None:
        raise ReclaimError(
            f"placement plugin {name!r} scores from the pool's state (CycleState.view and items); "
            "run it through reclaim.lifetime.replay"
        )
    return state.view, np.asarray(state.items, np.int64)


@register("placement", "la-binary")
class LABinary(Component):
    """LA-Binary (one-shot predictions, short/long at ``cutoff_s``); raw score 2 same-class
    non-empty host, 1 other non-empty host, 0 empty host."""

    __capabilities__ = PlacementCapabilities(needs_view=True)

    def __init__(self, cutoff_s: float = 2 * HOUR) -> None:
        self.cutoff_s = cutoff_s

    def score(self, state: CycleState, feasible):
        view, items = _view(state, "la-binary")
        now = view.now
        vm, host = view.members(feasible.any(axis=0))
        longest = np.full(len(state.free), -np.inf)
        if len(vm):
            left = np.maximum(view.vms.arrival[vm] + view.initial(vm) - now, 0.0)
            np.maximum.at(longest, host, left)
        host_long = longest >= self.cutoff_s
        item_left = np.maximum(view.vms.arrival[items] + view.initial(items) - now, 0.0)
        item_long = item_left >= self.cutoff_s
        same = host_long[None, :] == item_long[:, None]
        nonempty = (view.host_count > 0)[None, :]
        return np.where(nonempty, np.where(same, 2.0, 1.0), 0.0) + np.zeros(feasible.shape)

    normalize = staticmethod(min_max_normalize)


def host_exit(view, hosts: NDArray[np.bool_]) -> NDArray[np.float64]:
    """(H,) s predicted exit of each selected host by repredicted remaining lifetimes (now when
    empty or not selected)."""
    out = np.full(len(view.capacity), view.now)
    vm, host = view.members(hosts)
    if len(vm):
        np.maximum.at(out, host, view.now + view.remaining(vm))
    return out


@register("placement", "las")
class LAS(Component):
    """Lifetime Aware Scoring: minus the temporal cost of each feasible host (see module)."""

    __capabilities__ = PlacementCapabilities(needs_view=True)

    def score(self, state: CycleState, feasible):
        view, items = _view(state, "las")
        # Repredict only the VMs on hosts some item can go to (one batched model call).
        exits = host_exit(view, feasible.any(axis=0))
        vm_exit = (view.now + view.remaining(items))[:, None]
        later = vm_exit > exits[None, :]  # also keeps inf - inf (both never exit) at cost 0
        delta = np.where(later, vm_exit - np.where(later, exits[None, :], 0.0), 0.0)
        return -temporal_cost(delta).astype(np.float64)

    normalize = staticmethod(min_max_normalize)


class LavaHosts:
    """LAVA's per-host state: state (H,) int8 EMPTY/OPEN/RECYCLING; cls (H,) int8 0 (empty) or
    1..4; deadline (H,) float64 s; residual (H,) int64 residual VMs left; residual_on (N,) int32
    the host on which a VM is residual (-1: none)."""

    def __init__(self, n_hosts: int, n_vms: int) -> None:
        self.state = np.zeros(n_hosts, np.int8)
        self.cls = np.zeros(n_hosts, np.int8)
        self.deadline = np.full(n_hosts, np.inf)
        self.residual = np.zeros(n_hosts, np.int64)
        self.residual_on = np.full(n_vms, -1, np.int32)


@register("placement", "lava")
class Lava(Component):
    """LAVA's host scoring (LLAMA's idea for VMs). A VM's class is that of its repredicted
    remaining lifetime (at uptime 0 when it arrives). Raw scores, higher is better:

    * 7..9  recycling host of a higher class than the VM's (10 - class gap: closer is better);
    * 5     open host of the VM's class;
    * 2     any other non-empty host;
    * 0     an empty host.

    The paper's "open hosts only take VMs of their class" and "recycling hosts only take VMs at
    least one class lower" are tiers, not filters: the paper's own order puts "any non-empty host"
    before empty hosts, a tier that would be empty if both rules were hard, so a rule is broken only
    to avoid opening an empty host (or when nothing else fits).

    State machine (``on_bind``/``on_exit``, deadlines checked lazily at every call): a VM placed
    on an empty host opens it with the VM's class and a deadline of now + ``slack`` x the class's
    upper bound. An open host becomes recycling once more than ``full`` of its CPU or memory is
    allocated; its VMs then become residual. When the last residual VM of a recycling host leaves,
    its class drops by one (not below LC1), the deadline is renewed and the VMs left become
    residual; a host left with no VM becomes empty (class 0). A host past its deadline has
    underpredicted VMs: its class rises by one (LC4 stays LC4), the deadline is renewed from the
    old one, and its VMs become residual (an open host stays open, now of the higher class).
    """

    __capabilities__ = PlacementCapabilities(needs_view=True, view_hooks=True)

    def __init__(self, full: float = 0.9, slack: float = 1.1) -> None:
        self.full = full
        self.slack = slack

    def hosts(self, view) -> LavaHosts:
        """The view's LAVA state, made on first use from the VMs running then (bound in
        placement order as if LAVA had placed them)."""
        st = view.plugin_state.get("lava")
        if st is None:
            st = view.plugin_state["lava"] = LavaHosts(len(view.capacity), len(view.vms))
            vm, host = view.members()
            order = np.argsort(view.vm_seq[vm], kind="stable")
            for v, h in zip(vm[order].tolist(), host[order].tolist(), strict=True):
                self._bound(view, st, v, h, check_full=False)
            for h in np.flatnonzero(st.state == OPEN).tolist():
                self._check_full(view, st, h)
        self._expire(view, st)
        return st

    def vm_class(self, view, vms: NDArray[np.int64]) -> NDArray[np.int8]:
        return lifetime_class(view.remaining(vms))

    def score(self, state: CycleState, feasible):
        view, items = _view(state, "lava")
        st = self.hosts(view)
        vc = self.vm_class(view, items)[:, None].astype(np.int64)
        cls = st.cls[None, :].astype(np.int64)
        recycling = (st.state == RECYCLING)[None, :]
        raw = np.where(st.state[None, :] == EMPTY, 0.0, 2.0)
        raw = np.where((st.state == OPEN)[None, :] & (cls == vc), 5.0, raw)
        raw = np.where(recycling & (cls > vc), 10.0 - (cls - vc), raw)
        return raw + np.zeros(feasible.shape)

    normalize = staticmethod(min_max_normalize)

    def on_bind(self, view, vm: int, host: int) -> None:
        st = view.plugin_state.get("lava")
        if st is None:  # made from the view, which already holds this VM
            self.hosts(view)
            return
        self._expire(view, st)
        self._bound(view, st, vm, host)

    def on_exit(self, view, vm: int, host: int) -> None:
        st = self.hosts(view)
        if st.residual_on[vm] == host:
            st.residual_on[vm] = -1
            st.residual[host] -= 1
        if view.host_count[host] == 0:
            st.state[host], st.cls[host], st.deadline[host] = EMPTY, 0, np.inf
            st.residual[host] = 0
        elif st.state[host] == RECYCLING and st.residual[host] == 0:
            st.cls[host] = max(int(st.cls[host]) - 1, 1)
            st.deadline[host] = view.now + self.slack * CLASS_UPPER_S[st.cls[host] - 1]
            self._residualise(view, st, host)

    def _bound(self, view, st: LavaHosts, vm: int, host: int, check_full: bool = True) -> None:
        if st.state[host] == EMPTY:
            c = int(self.vm_class(view, np.array([vm]))[0])
            st.state[host], st.cls[host] = OPEN, c
            st.deadline[host] = view.now + self.slack * CLASS_UPPER_S[c - 1]
        if check_full:
            self._check_full(view, st, host)

    def _check_full(self, view, st: LavaHosts, host: int) -> None:
        """An open host with more than ``full`` of its CPU or memory allocated turns recycling."""
        if st.state[host] != OPEN:
            return
        cap = view.capacity[host, :2]
        used = np.divide(cap - view.free_on(host)[:2], cap, out=np.zeros(2), where=cap > 0)
        if (used > self.full).any():
            st.state[host] = RECYCLING
            self._residualise(view, st, host)

    def _residualise(self, view, st: LavaHosts, host: int) -> None:
        """All VMs now on ``host`` become its residual VMs."""
        st.residual_on[st.residual_on == host] = -1
        vms = view.host_vms(host)
        st.residual_on[vms] = host
        st.residual[host] = len(vms)

    def _expire(self, view, st: LavaHosts) -> None:
        """Raise the class of hosts past their deadline (a misprediction: they outlived it)."""
        for h in np.flatnonzero((st.state != EMPTY) & (st.deadline < view.now)).tolist():
            while st.deadline[h] < view.now:
                st.cls[h] = min(int(st.cls[h]) + 1, 4)
                st.deadline[h] += self.slack * CLASS_UPPER_S[st.cls[h] - 1]
            self._residualise(view, st, h)
