"""The checks every registered defragmenter must pass (``check_defrag``), on random pools.

On pools of resident VMs (:func:`reclaim.testing.placement.random_pool_view`): a round drains
only hosts that hold VMs and are open to placement, at most ``hosts_per_round`` of them, and
only when empty hosts are below the threshold and no drain is under way; the queue holds every
VM waiting on a draining host exactly once, and the round's migrate decisions name those VMs,
each to a host of the pool or to the placer's choice (-1); a clone on an identical pool chooses
and orders the same. Its capabilities ask for no forecast: the pool's control step has none.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import clone

from reclaim import registry
from reclaim.core.capabilities import ControllerCapabilities, capabilities
from reclaim.testing.placement import random_cluster, random_pool_view

TRIALS = 30


def _round(defrag, view) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(defrag.choose_hosts(view)), np.asarray(defrag.queue(view))


def check_defrag(name: str, build: Callable[[], object] | None = None, seed: int = 0) -> None:
    """Raise AssertionError naming the first broken promise of defragmenter ``name``.

    ``build`` makes a fresh instance (default: the registry's ``name`` with default settings).
    """
    build = build or (lambda: registry.build("defrag", name))
    caps = capabilities(build(), ControllerCapabilities)
    assert not caps.needs_forecast, f"{name}: asks for a forecast the pool replay does not make"
    rng = np.random.default_rng(seed)
    for trial in range(TRIALS):
        where = f"{name}, trial {trial}"
        capacity, free, _, request = random_cluster(rng)
        context = random_pool_view(capacity, free, request, rng)
        defrag = build().set_params(threshold=float(rng.choice([0.0, 0.5, 1.0])))
        view = context()["view"]
        open_before = view.draining.copy()
        empty_share = float(np.mean(view.host_count == 0))
        hosts, queue = _round(defrag, view)
        assert len(set(hosts.tolist())) == len(hosts), f"{where}: a host chosen twice"
        assert len(hosts) <= defrag.hosts_per_round, f"{where}: more hosts than a round drains"
        assert np.all(view.host_count[hosts] > 0), f"{where}: drains an empty host"
        assert not open_before[hosts].any(), f"{where}: drains a host already draining"
        if empty_share >= defrag.threshold:
            assert len(hosts) == 0, f"{where}: drains with enough empty hosts"
        assert view.draining[hosts].all(), f"{where}: chosen hosts not marked draining"
        on_draining = view.running[view.draining[view.vm_host[view.running]]]
        assert sorted(queue.tolist()) == sorted(on_draining.tolist()), (
            f"{where}: the queue is not the VMs on draining hosts, once each"
        )
        wanted = defrag.decide(view)
        assert sorted(wanted.migrate_rows.tolist()) == sorted(queue.tolist()), (
            f"{where}: the migrate decisions are not the queue"
        )
        hosts_named = wanted.migrate_hosts
        assert np.all((hosts_named >= -1) & (hosts_named < len(view.capacity))), (
            f"{where}: a migration to a host outside the pool"
        )
        again = clone(defrag)
        twin_hosts, twin_queue = _round(again, context()["view"])
        assert np.array_equal(hosts, twin_hosts), f"{where}: a clone drains other hosts"
        assert np.array_equal(queue, twin_queue), f"{where}: a clone orders otherwise"
        if len(hosts):
            more, _ = _round(defrag, view)
            assert len(more) == 0, f"{where}: a second round starts while hosts drain"
