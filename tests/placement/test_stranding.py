"""The stranding score: stranded capacity by hand, the scarce resource, costs in whole mean VMs,
and the GPU-pool case where LAVA ranked first strands memory and rejects a VM."""

from __future__ import annotations

import numpy as np
import pytest

from lifetime_pools import Oracle, vm_table
from reclaim.errors import ReclaimError
from reclaim.lifetime.replay import PoolView, replay_pool
from reclaim.placement import CycleState, Placer
from reclaim.placement.framework import WeightedPlugin
from reclaim.placement.plugins.stranding import Stranding, stranded

INF = np.inf


def test_stranded_is_what_no_one_shape_can_use():
    shapes = np.array([[1.0, 10.0, 1.0], [1.0, 90.0, 1.0]])
    free = np.array(
        [
            [10.0, 100.0, 1.0],  # one GPU: the 90 GiB shape uses the most memory, 10 left
            [10.0, 90.0, 0.0],  # no GPU: nothing fits, all stranded
            [10.0, 30.0, 5.0],  # three 10 GiB copies; two GPUs and 7 cores left over
        ]
    )
    assert stranded(free, shapes).tolist() == [
        [9.0, 10.0, 0.0],
        [10.0, 90.0, 0.0],
        [7.0, 0.0, 2.0],
    ]
    # (B, H, R) batches broadcast; negative free counts as none
    assert stranded(free[None] - [[0.0, 0.0, 1.0]], shapes)[0, 0].tolist() == [10.0, 100.0, 0.0]


def _view(request, capacity, hosts, now=0.0):
    """A pool of ``capacity`` rows where VM row v runs on ``hosts[v]`` (-1: arriving)."""
    request = np.asarray(request, np.float64)
    vms = vm_table(
        [0.0] * len(request),
        [INF] * len(request),
        cpu=request[:, 0],
        mem=request[:, 1],
        gpu=request[:, 2],
        window=(0.0, 1e6),
    )
    return PoolView.with_placements(vms, np.asarray(capacity, np.float64), np.asarray(hosts), now)


def _score(view, items):
    items = np.asarray(items, np.int64)
    state = CycleState(view.capacity, view.free, view.up, view.vms.request[items], view, items)
    return Stranding().score(state, np.ones((len(items), len(view.capacity)), bool))


def test_the_scarce_resource_is_the_largest_share_the_mean_vm_asks_for():
    cap = np.tile([100.0, 200.0, 8.0], (2, 1))
    memory_heavy = _view([[1, 90, 1], [1, 90, 1], [1, 10, 1]], cap, [-1, -1, -1])
    shapes, scarce, unit = Stranding().mix(memory_heavy)
    assert scarce == 1 and unit == pytest.approx(190 / 3)  # 63 GiB of 200 > 1 GPU of 8
    gpu_heavy = _view([[1, 10, 4], [1, 10, 2]], cap, [-1, -1])
    assert Stranding().mix(gpu_heavy)[1:] == (2, 3.0)
    # a resource no host has is out of the mix (the placer never sees it)
    cpu_mem = _view([[1, 10, 0], [2, 10, 0]], np.tile([4.0, 100.0, 0.0], (2, 1)), [-1, -1])
    shapes, scarce, unit = Stranding().mix(cpu_mem)
    assert shapes.shape == (2, 2) and (scarce, unit) == (0, 1.5)


def test_cost_counts_the_scarce_resource_stranded_in_whole_mean_vms():
    # Rows 0-2 take room on hosts 0-2; rows 3 (10 GiB) and 4 (90 GiB) arrive. The mix's mean VM
    # asks for 72 GiB (0.36 of a host) and 2.2 GPUs (0.275): memory is scarce.
    request = [[1, 150, 1], [1, 100, 7], [1, 10, 1], [1, 10, 1], [1, 90, 1]]
    cap = np.tile([100.0, 200.0, 8.0], (4, 1))
    view = _view(request, cap, [0, 1, 2, -1, -1])
    assert Stranding().mix(view)[1:] == (1, pytest.approx(72.0))
    raw = _score(view, [3, 4])
    # small VM on host 1 (100 GiB, 1 GPU): 90 GiB without a GPU, 80 more stranded, one mean VM.
    # Host 0 (50 GiB, 7 GPUs) strands nothing; on hosts 2 and 3 it even uses 10 GiB a 90 GiB VM
    # could not, which is not rewarded (packing is the later scores' concern).
    assert raw[0].tolist() == [0, -1, 0, 0]
    # large VM (host 0 lacks room): on host 1 it takes the GPU with the memory
    assert raw[1, 1:].tolist() == [0, 0, 0]


def test_without_a_view_it_raises_a_clear_error():
    cap = np.array([[8.0, 32.0]])
    state = CycleState(cap, cap.copy(), np.ones(1, bool), np.array([[1, 1]], np.float32))
    with pytest.raises(ReclaimError, match="VM mix"):
        Placer([WeightedPlugin(Stranding())]).place(
            cap, cap.copy(), np.ones(1, bool), state.request
        )


def test_ranked_above_lava_it_keeps_the_memory_a_later_vm_needs():
    # Hosts of 100 cores, 200 GiB, 8 GPUs. A long VM (150 GiB) opens host 0; a short one (100 GiB,
    # 7 GPUs) fits only host 1, which opens short. Two short 10 GiB VMs follow: LAVA sends the
    # first to host 1, its open host of their class, taking its last GPU and stranding 90 GiB;
    # the 90 GiB VM that arrives next then fits nowhere. Ranked first, stranding sends both to
    # host 0 and the 90 GiB VM takes host 1's GPU and memory.
    vms = vm_table(
        [0, 0, 1, 2, 3],
        [INF, 1800, 1800, 1800, 1800],
        cpu=1,
        mem=[150, 100, 10, 10, 90],
        gpu=[1, 7, 1, 1, 1],
        window=(0.0, 7200.0),
    )
    cap = np.tile([100.0, 200.0, 8.0], (2, 1))
    runs = {
        spec: replay_pool(vms, cap, spec, Oracle(vms), inflation_period_s=None)
        for spec in ("lava>las>best-fit", "stranding>lava>las>best-fit")
    }
    assert runs["lava>las>best-fit"].host_of.tolist() == [0, 1, 1, 0, -1]
    assert runs["lava>las>best-fit"].rejected == 1
    assert runs["stranding>lava>las>best-fit"].host_of.tolist() == [0, 1, 0, 0, 1]
    assert runs["stranding>lava>las>best-fit"].rejected == 0
