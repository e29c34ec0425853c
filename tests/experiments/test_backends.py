"""Backends: this process, a process pool and Ray give the same results."""

from __future__ import annotations

import sys

import pytest
from polars.testing import assert_frame_equal

from reclaim.errors import ReclaimError
from reclaim.experiments.backends import on_ray, run_all
from reclaim.experiments.runner import run_experiment
from reclaim.experiments.spec import load_spec
from tiny_spec import write_spec


@pytest.fixture(scope="module")
def in_process(tmp_path_factory):
    path = write_spec(tmp_path_factory.mktemp("spec"))
    spec = load_spec(path)
    return spec, run_experiment(spec, "tiny", tmp_path_factory.mktemp("one"), jobs=1).table


def test_process_pool_matches_this_process(in_process, tmp_path):
    spec, expected = in_process
    table = run_experiment(spec, "tiny", tmp_path, jobs=2).table
    assert_frame_equal(table.drop("wall_s"), expected.drop("wall_s"))


def test_ray_matches_this_process(in_process, tmp_path):
    ray = pytest.importorskip("ray")
    spec, expected = in_process
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        table = run_experiment(spec, "tiny", tmp_path, backend="ray").table
    finally:
        ray.shutdown()
    assert_frame_equal(table.drop("wall_s"), expected.drop("wall_s"))


def test_without_ray_installed_the_ray_backend_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(ReclaimError, match=r"install reclaim\[ray\]"):
        next(on_ray([]))


def test_unknown_backend_and_bad_jobs_are_user_errors():
    with pytest.raises(ReclaimError, match="unknown backend 'dask'"):
        run_all([], "dask")
    with pytest.raises(ReclaimError, match="at least 1"):
        run_all([], "local", jobs=0)
