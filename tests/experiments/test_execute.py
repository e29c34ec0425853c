"""One run: deterministic, and a worker builds a workload once for all runs of a seed."""

from __future__ import annotations

from tiny_spec import write_spec

from reclaim.experiments import execute as execute_module
from reclaim.experiments.execute import execute
from reclaim.experiments.spec import load_spec


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
