"""The VM pool replay: bookkeeping, the empty-host time average, rejections, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from lifetime_pools import HOUR, Oracle, random_table, vm_table
from reclaim.core.types import RESOURCES_GPU
from reclaim.errors import ReclaimError
from reclaim.lifetime.replay import PoolView, replay_pool

CAP2 = np.array([[10.0, 100.0, 0.0], [10.0, 100.0, 0.0]])


def two_vms():
    # a fills host 0 over [0, 50), b fills host 1 over [20, 80); the window is [0, 100).
    return vm_table([0, 20], [50, 80], cpu=10, window=(0.0, 100.0))


def test_empty_host_time_average_by_hand():
    result = replay_pool(two_vms(), CAP2, "best-fit", inflation_period_s=None)
    # empty hosts: 1 on [0,20), 0 on [20,50), 1 on [50,80), 2 on [80,100) -> 90 host-s of 200
    assert result.empty_hosts_pct == pytest.approx(45.0)
    assert result.host_of.tolist() == [0, 1]


def test_warm_up_is_not_measured():
    result = replay_pool(two_vms(), CAP2, "best-fit", warmup_s=50, inflation_period_s=None)
    # [50,80): 1 empty, [80,100): 2 -> 70 host-s of 2 x 50
    assert result.empty_hosts_pct == pytest.approx(70.0)
    with pytest.raises(ReclaimError, match="nothing to measure"):
        replay_pool(two_vms(), CAP2, "best-fit", warmup_s=100)


def test_a_vm_that_fits_nowhere_is_rejected_and_counted():
    vms = vm_table([0, 1, 2, 3], [50, 50, 50, 50], cpu=[10, 10, 20, 1], gpu=[0, 0, 0, 1])
    result = replay_pool(vms, CAP2, "best-fit", inflation_period_s=None)
    assert result.rejected == 2  # 20 cores fit no host; a GPU fits no GPU-less host
    assert result.host_of.tolist() == [0, 1, -1, -1]
    assert result.summary()["rejected"] == 2.0


def test_left_censored_vms_are_the_initial_state_placed_in_row_order():
    vms = vm_table([0, 0, 0, 5], [np.inf] * 4, cpu=[4, 6, 4, 6], window=(0.0, 10.0))
    result = replay_pool(vms, CAP2, "first-fit", inflation_period_s=None)
    assert result.host_of.tolist() == [0, 0, 1, 1]


@pytest.mark.parametrize(
    "spec", ["best-fit", "la-binary>best-fit", "las>best-fit", "lava>las>best-fit"]
)
def test_capacity_is_conserved_and_replays_are_deterministic(spec):
    vms = random_table(300, seed=1)
    cap = np.tile([64.0, 512.0, 0.0], (12, 1))
    first = replay_pool(vms, cap, spec, Oracle(vms), defrag="lars", inflation_period_s=6 * HOUR)
    view = first.view
    running = view.running
    used = np.zeros_like(cap)
    np.add.at(used, view.vm_host[running], view.vms.request[running])
    mig = np.flatnonzero(view.vm_dst >= 0)
    np.add.at(used, view.vm_dst[mig], view.vms.request[mig])
    assert np.allclose(view.free, cap - used, atol=1e-3)
    assert np.all(view.free >= -1e-3)
    assert view.hosts.axes == RESOURCES_GPU and np.allclose(view.hosts.allocated, used, atol=1e-3)
    count = np.bincount(view.vm_host[running], minlength=len(cap))
    count += np.bincount(view.vm_dst[mig], minlength=len(cap))
    assert np.array_equal(view.host_count, count)
    assert first.rejected + np.count_nonzero(first.host_of >= 0) == first.vms == len(vms)

    again = replay_pool(vms, cap, spec, Oracle(vms), defrag="lars", inflation_period_s=6 * HOUR)
    assert np.array_equal(first.host_of, again.host_of)
    a, b = first.summary(), again.summary()
    for key in ("wall_s", "model_us_per_vm"):
        a.pop(key), b.pop(key)
    assert a == b
    assert first.timeline.equals(again.timeline)


def test_summary_and_timeline():
    vms = random_table(100, seed=2)
    result = replay_pool(vms, np.tile([64.0, 512.0, 0.0], (8, 1)), "las>best-fit", Oracle(vms))
    summary = result.summary()
    assert set(summary) == {
        "empty_hosts_pct", "stranded_cpu_pct", "stranded_mem_pct", "stranded_gpu_pct",
        "migrations", "rejected", "vms", "model_calls", "model_us_per_vm", "wall_s",
    }  # fmt: skip
    assert all(isinstance(v, float) for v in summary.values())
    assert 0 <= summary["empty_hosts_pct"] <= 100
    assert summary["stranded_gpu_pct"] == 0.0  # the pool has no GPUs
    assert summary["model_calls"] > 0
    assert result.timeline["time"].to_list() == [i * 6 * HOUR for i in range(13)]


def test_one_shot_predictions_are_made_once_per_vm():
    vms = random_table(80, seed=3)
    oracle = Oracle(vms)
    result = replay_pool(vms, np.tile([64.0, 512.0, 0.0], (8, 1)), "la-binary>best-fit", oracle)
    assert result.predictions == result.vms  # one initial prediction per VM, never again
    assert result.model_calls == oracle.calls


def test_lifetime_plugins_need_a_predictor():
    with pytest.raises(ReclaimError, match="predictor"):
        replay_pool(two_vms(), CAP2, "las>best-fit")


def test_view_repredictions_are_cached_per_instant():
    vms = vm_table([0, 0, 0], [10 * HOUR] * 3, cpu=1, window=(0.0, 20 * HOUR))
    oracle = Oracle(vms)
    view = PoolView.with_placements(vms, CAP2, np.array([0, 0, 1]), HOUR, oracle)
    assert view.remaining(np.array([0, 1])).tolist() == [9 * HOUR, 9 * HOUR]
    view.remaining(np.array([1, 2]))
    assert oracle.calls == 2 and view.predictions == 3  # only VM 2 was new at this instant
    view.now = 2 * HOUR
    assert view.remaining(np.array([2])).tolist() == [8 * HOUR]
    assert view.initial(np.array([0, 0])).tolist() == [10 * HOUR] * 2
