"""The checks every registered placement plugin must pass (``check_plugin``), on random host tables.

Scores normalised into [0, 100] (0 on infeasible hosts), masks and scores of the batch's shape, no
workload bound to a host that is down or lacks room, all-or-nothing batches placed whole or not at
all, the same input giving the same placement, a ``monotone`` promise kept (filling the best host
with a run equals binding one workload at a time), a compiled kernel agreeing with the
framework's reference path, and the declared capabilities true: each declared protocol (filter,
group, view hooks) implemented, and a plugin that declares ``min_max`` normalising as the
framework's min-max map does.

A plugin that declares ``needs_view`` (lifetime-aware placement) is checked on a pool view made to
match each random cluster (:func:`random_pool_view`: residents that take up exactly the used
capacity, the batch as VMs arriving now, lifetimes partly mispredicted), a fresh one per call.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from reclaim import registry
from reclaim.core.capabilities import PlacementCapabilities, capabilities
from reclaim.placement.framework import (
    FIT_TOLERANCE,
    CycleState,
    Placer,
    WeightedPlugin,
    min_max_normalize,
)

TRIALS = 40


def random_cluster(rng: np.random.Generator):
    """(capacity, free, up, request): a few hosts of mixed sizes, some full, some down, and a batch
    with runs of identical requests."""
    n_hosts = int(rng.integers(1, 9))
    capacity = rng.choice([8.0, 16.0, 32.0], (n_hosts, 1)) * np.array([1.0, 4.0])
    free = np.floor(capacity * rng.random((n_hosts, 2)))
    free[rng.random(n_hosts) < 0.2] = 0.0
    up = rng.random(n_hosts) > 0.15
    kinds = rng.choice([0.5, 1.0, 2.0, 3.0, 6.0], (int(rng.integers(1, 5)), 2))
    request = np.repeat(kinds, rng.integers(1, 4, len(kinds)), axis=0).astype(np.float32)
    return capacity, free, up, request


class _Lifetimes:
    """A predictor from given lifetimes: remaining = max(lifetime - uptime, 0)."""

    def __init__(self, lifetime) -> None:
        self.lifetime = lifetime

    def remaining(self, vms, uptime):
        return np.maximum(self.lifetime[vms] - uptime, 0.0)


def random_pool_view(capacity, free, request, rng: np.random.Generator):
    """A factory of fresh, identical ``{"view": PoolView, "items": (B,) rows}`` keyword sets for
    ``capacity``/``free`` (H, R) and the batch ``request`` (B, R): one or two resident VMs per host
    use its ``capacity - free``, the batch arrives now. Lifetimes span minutes to weeks; a third of the
    predictions are off by 10x either way."""
    import polars as pl

    from reclaim.lifetime.replay import PoolView
    from reclaim.lifetime.vms import VmTable

    n_hosts, n_res = capacity.shape
    now = 100 * 3600.0
    residents, where = [], []
    for h in range(n_hosts):
        used = capacity[h] - free[h]
        if not (used > 0).any():
            continue
        split = rng.random() if rng.random() < 0.5 else 1.0
        for part in (used * split, used * (1 - split)):
            if (part > 0).any():
                residents.append(part)
                where.append(h)
    n_res_vm, n_batch = len(residents), len(request)
    n = n_res_vm + n_batch
    req = np.zeros((n, 3), np.float32)
    req[:n_res_vm, :n_res] = np.array(residents).reshape(n_res_vm, n_res)
    req[n_res_vm:, :n_res] = request
    arrival = np.concatenate([now - rng.uniform(0, now, n_res_vm), np.full(n_batch, now)])
    lifetime = np.exp(rng.uniform(np.log(60.0), np.log(30 * 86400.0), n))
    lifetime = np.maximum(lifetime, now - arrival + 1.0)  # residents are alive now
    guess = lifetime * rng.choice([0.1, 1.0, 1.0, 1.0, 10.0], n)
    vms = VmTable(
        id=np.array([f"vm{i}" for i in range(n)]),
        family=np.full(n, "X"),
        arrival=arrival,
        exit=arrival + lifetime,
        left_censored=np.zeros(n, bool),
        right_censored=np.zeros(n, bool),
        request=req,
        features=pl.DataFrame({"row": np.arange(n)}),
        window=(0.0, 2 * now),
    )
    hosts = np.full(n, -1, np.int32)
    hosts[:n_res_vm] = where
    cap3 = np.zeros((n_hosts, 3))
    cap3[:, :n_res] = capacity

    items = np.arange(n_res_vm, n, dtype=np.int64)

    def context() -> dict:
        return {
            "view": PoolView.with_placements(vms, cap3, hosts, now, _Lifetimes(guess)),
            "items": items,
        }

    return context


def check_plugin(name: str, build: Callable[[], object] | None = None, seed: int = 0) -> None:
    """Raise AssertionError naming the first broken promise of placement plugin ``name``.

    ``build`` makes a fresh instance (default: the registry's ``name`` with default settings).
    A ``stateful`` plugin is held to its declarations only: it places inside a loop of its own
    (checked with that loop).
    """
    build = build or (lambda: registry.build("placement", name))
    rng = np.random.default_rng(seed)
    caps = capabilities(build(), PlacementCapabilities)
    _check_protocols(name, build(), caps)
    if caps.stateful:
        return
    needs_view = caps.needs_view
    for trial in range(TRIALS):
        capacity, free, up, request = random_cluster(rng)
        where = f"{name}, trial {trial}"
        # keyword arguments of every CycleState and place call (a fresh view each time)
        ctx = random_pool_view(capacity, free, request, rng) if needs_view else dict
        placer = Placer([WeightedPlugin(build())])
        feasible, levels = placer.rank(CycleState(capacity, free, up, request, **ctx()))
        assert feasible.shape == (len(request), len(free)), f"{where}: mask shape {feasible.shape}"
        assert levels.shape == (1, *feasible.shape), f"{where}: score shape {levels.shape}"
        assert np.all(np.isfinite(levels)), f"{where}: non-finite normalised score"
        assert np.all((levels >= 0) & (levels <= 100)), f"{where}: score outside [0, 100]"
        assert np.all(levels[:, ~feasible] == 0), f"{where}: infeasible host scored above 0"

        for together in (False, True):
            after = free.copy()
            hosts = placer.place(capacity, after, up, request, together, **ctx())
            _check_binds(where, capacity, free, up, request, hosts, after, together)
            again = free.copy()
            same = Placer([WeightedPlugin(build())]).place(
                capacity, again, up, request, together, **ctx()
            )
            assert np.array_equal(hosts, same), f"{where}: same input, another placement"
            assert np.array_equal(after, again), f"{where}: same input, other free capacity"

        if caps.min_max:
            raw = rng.normal(size=feasible.shape) * 10
            assert np.array_equal(
                build().normalize(raw, feasible), min_max_normalize(raw, feasible)
            ), f"{where}: declares min_max, normalises otherwise"
        plugin = build()
        if caps.monotone:
            one = Placer([WeightedPlugin(_one_by_one(plugin))])
            slow = free.copy()
            assert np.array_equal(
                one.place(capacity, slow, up, request, **ctx()),
                placer.place(capacity, free.copy(), up, request, **ctx()),
            ), f"{where}: declared monotone, but filling a run differs from one-by-one binding"
        if caps.kernel is not None or caps.group_kernel is not None:
            reference = Placer([WeightedPlugin(build())])
            reference.compiled = False
            assert np.array_equal(
                reference.place(capacity, free.copy(), up, request, **ctx()),
                Placer([WeightedPlugin(build())]).place(
                    capacity, free.copy(), up, request, **ctx()
                ),
            ), f"{where}: compiled kernel and reference framework disagree"


def _check_binds(where, capacity, free, up, request, hosts, after, together) -> None:
    assert hosts.shape == (len(request),) and hosts.dtype == np.int32, f"{where}: hosts array"
    placed = hosts >= 0
    assert np.all(up[hosts[placed]]), f"{where}: bound to a host that is down"
    used = np.zeros_like(free)
    np.add.at(used, hosts[placed], request[placed].astype(np.float64))
    assert np.all(free - used >= -FIT_TOLERANCE * (1 + len(request))), f"{where}: host over-filled"
    assert np.allclose(after, free - used), f"{where}: free capacity not net of the binds"
    if together:
        assert placed.all() or not placed.any(), f"{where}: all-or-nothing placed a part"


def _one_by_one(plugin):
    """A copy of ``plugin`` declared non-monotone, so the framework rescores after every bind."""
    one = copy.copy(plugin)
    caps = capabilities(plugin, PlacementCapabilities)
    one.__capabilities__ = replace(caps, monotone=False, kernel=None, group_kernel=None)
    return one


#: The framework's small protocols: what a plugin declaring each capability must implement.
PROTOCOLS = {
    "filters": ("filter",),
    "groups": ("prepare",),
    "view_hooks": ("on_bind", "on_exit"),
    "selects": ("select",),
}


def _check_protocols(name: str, plugin, caps: PlacementCapabilities) -> None:
    assert callable(getattr(plugin, "score", None)), f"{name}: no score"
    assert callable(getattr(plugin, "normalize", None)), f"{name}: no normalize"
    for capability, methods in PROTOCOLS.items():
        if getattr(caps, capability):
            for method in methods:
                assert callable(getattr(plugin, method, None)), (
                    f"{name}: declares {capability} but has no {method}"
                )
    if caps.observes:  # set by the loop that drives it; None until then
        assert hasattr(plugin, "observe"), f"{name}: declares observes but has no observe"
    if caps.seeded:
        seed = plugin.get_params().get("seed")
        assert isinstance(seed, int), f"{name}: declares seeded but has no int seed setting"
