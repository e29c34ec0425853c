"""One run: deterministic, and a worker builds a workload once for all runs of a seed."""

from __future__ import annotations

from reclaim.experiments.spec import load_spec
from reclaim.sim import experiment as execute_module
from reclaim.sim.experiment import execute
from tiny_spec import write_spec


def test_runs_of_one_seed_share_one_build_and_match_a_fresh_build(tmp_path, monkeypatch):
    runs = load_spec(write_spec(tmp_path)).runs("tiny")
    built = []
    real = execute_module.build_workload
    monkeypatch.setattr(execute_module, "build_workload", lambda *a: built.append(a) or real(*a))
    monkeypatch.setattr(execute_module, "_cached", None)
    results = [execute(run) for run in runs]
    assert len(built) == 1
    monkeypatch.setattr(execute_module, "_cached", None)
    again = execute(runs[-1])  # on a fresh build, as another worker would
    assert len(built) == 2
    assert again.apps.equals(results[-1].apps) and again.timeline.equals(results[-1].timeline)
    assert again.settings["experiment"]["run_id"] == runs[-1].run_id
    assert again.settings["workload"]["seed"] == 2


PAPER_WORLD = """
name = "paper-world"
[workload]
source = "pace-paper"
[cluster]
placement = "random-fit"
horizon_days = 1
rules = { throttle_cpu = false, refuse_whole_resize = false }
[scale.tiny]
apps = 100
hosts = "1x32c64g"
seeds = [0]
[[runs]]
controller = "reservation"
[[runs]]
controller = "optimistic"
forecaster = "oracle"
controller_params = { k1 = 0.0, grace_s = 0.0, max_failures = 5, soft_memory_limits = false }
[[runs]]
controller = "pessimistic"
forecaster = "oracle"
controller_params = { k1 = 0.0, grace_s = 0.0, max_failures = 5, fit_on = "mem" }
"""


def test_the_papers_world_runs_its_rules_and_counts_failures_its_way(tmp_path, monkeypatch):
    monkeypatch.setattr(execute_module, "_cached", None)
    runs = load_spec(write_spec(tmp_path, PAPER_WORLD)).runs("tiny")
    base, optimistic, pessimistic = (execute(run) for run in runs)
    # a flood on one host for a day: the paper's 60 s loop, stopped at the horizon
    assert base.summary["apps_done"] < 100 and len(base.timeline) == 1441  # 0 s to 1 day
    # pessimistic preempts (which the paper does not count) and loses no core component to OOM
    assert pessimistic.summary["core_oom_rate"] == 0.0
    assert pessimistic.summary["preempted_rate"] > 0.0
    # optimistic with hard limits: raises refused on a full host end in core OOM kills
    assert optimistic.summary["core_oom_rate"] > 0.0
    again = execute(runs[1])
    assert again.apps.equals(optimistic.apps)
