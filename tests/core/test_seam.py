"""Every loop runs the core's control step: each is run small with a spy in its step's place."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from lifetime_pools import HOUR, Oracle, random_table
from reclaim import registry
from reclaim.core import control
from reclaim.core.grouped import GroupedArray
from tiny_workloads import tiny_workload

#: The five loops: the module that runs each, the kinds of decision it applies, and a small run.
LOOPS = {
    "shaping simulator": ("reclaim.sim.simulator", {"resize", "evict"}),
    "CORP slots": ("reclaim.corp.simulator", {"lend"}),
    "TVW replay": ("reclaim.tvw.evaluate", {"bind"}),
    "LAVA pool": ("reclaim.lifetime.replay", {"migrate"}),
    "live agent": ("reclaim.agent.loop", {"resize", "evict"}),
}

KINDS = {
    "resize": "resize_rows",
    "evict": "evict",
    "bind": "bind_rows",
    "migrate": "migrate_rows",
    "lend": "lend_rows",
}


def run_shaping_simulator(tmp_path) -> None:
    from reclaim.core.tables import HostTable
    from reclaim.placement import build_placer
    from reclaim.shaping.pessimistic import Pessimistic
    from reclaim.sim.simulator import Simulator

    wl = tiny_workload([(0.0, [(2, 4, 3600, True, 0, 0), (1, 2, 3600, False, 0, 0)])])
    controller = Pessimistic(k1=0.0, k2=0.0, grace_s=0.0)
    oracle = registry.build("forecaster", "oracle")
    Simulator(wl, HostTable.parse("1x4c8g"), controller, build_placer("best-fit"), oracle).run()


def run_corp_slots(tmp_path) -> None:
    from reclaim.corp.scenario import build_scenario
    from reclaim.corp.simulator import simulate

    scenario = build_scenario(n_jobs=40, n_vms=6, n_pms=2, n_train=40, seed=0)
    simulate(scenario, "rccr", window=3)


def run_tvw_replay(tmp_path) -> None:
    from reclaim.tvw.evaluate import Policy, run_policy
    from reclaim.tvw.scenario import ScenarioSpec, Sequence

    usage = GroupedArray.from_series([np.array([[2, 1], [3, 1]], np.int16)] * 3)
    flags, zeros = np.zeros(3, bool), np.zeros(3, np.int64)
    seq = Sequence(usage, np.array([0, 0, 1], np.int64), flags, flags, zeros, zeros, 1.0)
    run_policy(seq, Policy.parse("best-fit"), ScenarioSpec(machines=2, units=8))


def run_lava_pool(tmp_path) -> None:
    from reclaim.lifetime.replay import replay_pool

    vms = random_table(300, seed=1)
    cap = np.tile([32.0, 128.0, 8.0], (12, 1))
    replay_pool(vms, cap, "best-fit", Oracle(vms), defrag="lars", inflation_period_s=6 * HOUR)


def run_live_agent(tmp_path) -> None:
    from reclaim.agent.config import load_settings
    from reclaim.agent.fake import make_tree, set_usage
    from reclaim.agent.loop import Agent
    from reclaim.core.clock import SimClock

    root, names = tmp_path / "cgroup", ["web-0", "batch-0"]
    make_tree(root, 2, "reclaim", names)
    lines = ["[agent]", 'parent = "reclaim"', f'cgroup_root = "{root}"', "grace_s = 0.0"]
    lines += ["period_s = 1.0", "host_cpu = 4.0"]
    for i, name in enumerate(names):
        lines += ["[[component]]", f'name = "{name}"', f'app = "a{i}"', 'role = "core"']
        lines += ["cpu = 1.0", "mem_gib = 1.0"]
    (tmp_path / "agent.toml").write_text("\n".join(lines) + "\n")
    agent = Agent(load_settings(tmp_path / "agent.toml"), clock=SimClock(1e6))
    for _ in range(4):
        for name in names:
            set_usage(root, 2, "reclaim", name, 0.2 * (agent.clock.t - 1e6), 0.1)
        agent.step()
        agent.clock.t += 1.0


RUNS = {
    "shaping simulator": run_shaping_simulator,
    "CORP slots": run_corp_slots,
    "TVW replay": run_tvw_replay,
    "LAVA pool": run_lava_pool,
    "live agent": run_live_agent,
}


@pytest.mark.parametrize("loop", list(LOOPS))
def test_every_loop_runs_the_core_control_step(loop, monkeypatch, tmp_path):
    module_name, kinds = LOOPS[loop]
    module = importlib.import_module(module_name)
    assert module.control_step is control.control_step, f"{loop}: a step of its own"
    applied: set[str] = set()

    def spy(*args, **kwargs):
        step = control.control_step(*args, **kwargs)
        applied.update(k for k, column in KINDS.items() if len(getattr(step.decisions, column)))
        return step

    monkeypatch.setattr(module, "control_step", spy)
    RUNS[loop](tmp_path)
    assert applied, f"{loop}: no decision went through the core's step"
    assert applied <= kinds, f"{loop}: applied {applied}, expected among {kinds}"
