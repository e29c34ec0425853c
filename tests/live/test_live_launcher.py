"""The launcher's admission bookkeeping, without processes: what it counts as allocated."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from reclaim.live.launcher import UP, _State
from reclaim.live.scenario import LiveScenario
from reclaim.sim.state import RUNNING
from tiny_workloads import tiny_workload


def _agent_reading(limits: np.ndarray, used: np.ndarray, running: np.ndarray):
    """What ``_State.account`` reads of an agent: its view's limits, usage and sample counts."""
    workloads = SimpleNamespace(
        limit=limits.astype(np.float32),
        used=used.astype(np.float32),
        host=np.where(running, 0, -1),
    )
    view = SimpleNamespace(workloads=workloads, count=running.astype(np.int64))
    return SimpleNamespace(collector=SimpleNamespace(view=view))


def test_an_exact_fit_is_admitted_after_limits_come_back_through_float32():
    """Two applications of 8 x 0.5 cores fill the 8-core host exactly, as the simulator admits
    them. The agent's limits of the first (its requests, read back from the cgroup files as
    float32 live cores) must not count as a hair more than the requests, or the second waits
    for the first to end."""
    half = (0.5, 1.0, 600, True, 0, 0)
    wl = tiny_workload([(0.0, [half] * 8), (60.0, [half] * 8)], period=60.0)
    sc = LiveScenario(n_apps=2)
    state = _State(wl, np.array([sc.host_cores, sc.host_mem_gib]))
    state.arrive(0.0)
    first = state.admit(0.0, steps=0)
    assert first == list(range(8))
    state.comp_state[first] = UP
    state.held[first] = wl.request[first]
    running = state.comp_state == UP
    limits = np.where(running[:, None], wl.request * sc.scale, np.inf)
    used = np.where(running[:, None], 0.5 * wl.request * sc.scale, 0.0)
    state.account(60.0, _agent_reading(limits, used, running), sc.scale, sc.period_s, steps=1)
    assert np.all(state.held[first] <= wl.request[first])
    state.arrive(60.0)
    assert state.admit(60.0, steps=1) == list(range(8, 16))
    assert state.app_state.tolist() == [RUNNING, RUNNING]
