"""A sweep interrupted and rerun ends with the same results as one that never stopped."""

from __future__ import annotations

import shutil

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from rich.console import Console

from reclaim.errors import ReclaimError
from reclaim.experiments import runner
from reclaim.experiments.spec import load_spec
from tiny_spec import write_spec


def without_wall(table: pl.DataFrame) -> pl.DataFrame:
    return table.drop("wall_s")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    path = write_spec(tmp_path_factory.mktemp("spec"))
    out = tmp_path_factory.mktemp("full")
    outcome = runner.run_experiment(load_spec(path), "tiny", out, jobs=1)
    return path, out, outcome


def test_a_whole_sweep_writes_every_run(uninterrupted):
    _, out, outcome = uninterrupted
    assert (outcome.runs, outcome.resumed, outcome.scale) == (3, 0, "tiny")
    assert outcome.table.height == 3
    assert_frame_equal(outcome.table, pl.read_parquet(out / "runs.parquet"))


def test_resuming_after_an_interruption_gives_the_same_table(uninterrupted, tmp_path, monkeypatch):
    path, _, full = uninterrupted
    real = runner.run_all

    def interrupted_after_one(*args):
        for n, item in enumerate(real(*args)):
            if n == 1:
                raise KeyboardInterrupt
            yield item

    monkeypatch.setattr(runner, "run_all", interrupted_after_one)
    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(load_spec(path), "tiny", tmp_path, jobs=1)
    assert pl.read_parquet(tmp_path / "runs.parquet").height == 1
    monkeypatch.setattr(runner, "run_all", real)

    resumed = runner.run_experiment(load_spec(path), "tiny", tmp_path, jobs=1)
    assert resumed.resumed == 1
    assert_frame_equal(without_wall(resumed.table), without_wall(full.table))


def test_a_lost_run_is_run_again(uninterrupted, tmp_path):
    path, out, full = uninterrupted
    shutil.copytree(out, tmp_path, dirs_exist_ok=True)
    lost = full.table["run_id"][1]
    shutil.rmtree(tmp_path / "runs" / lost)
    table = pl.read_parquet(tmp_path / "runs.parquet")
    table.filter(pl.col("run_id") != lost).write_parquet(tmp_path / "runs.parquet")

    again = runner.run_experiment(load_spec(path), "tiny", tmp_path, jobs=1)
    assert again.resumed == 2
    assert_frame_equal(without_wall(again.table), without_wall(full.table))
    assert_frame_equal(
        again.table.filter(pl.col("run_id") != lost), table.filter(pl.col("run_id") != lost)
    )


@pytest.mark.parametrize("broken", ["{not json", '{"summary": {}}', ""])
def test_a_run_with_an_unreadable_summary_is_set_aside_and_run_again(
    uninterrupted, tmp_path, broken
):
    path, out, full = uninterrupted
    shutil.copytree(out, tmp_path, dirs_exist_ok=True)
    hit = full.table["run_id"][0]
    (tmp_path / "runs" / hit / "summary.json").write_text(broken)
    console = Console(record=True, width=200)
    again = runner.run_experiment(load_spec(path), "tiny", tmp_path, jobs=1, console=console)
    assert again.resumed == 2
    assert_frame_equal(without_wall(again.table), without_wall(full.table))
    said = console.export_text()
    assert f"{hit}/summary.json unreadable" in said and "rerun" in said
    kept = tmp_path / "runs" / f".unreadable-{hit}" / "summary.json"
    assert kept.read_text() == broken  # nothing is lost


def test_runs_of_another_version_are_not_reused(uninterrupted, tmp_path, monkeypatch):
    path, out, full = uninterrupted
    shutil.copytree(out, tmp_path, dirs_exist_ok=True)
    import reclaim.sim.experiment as spec_module

    monkeypatch.setattr(spec_module, "__version__", "999.0")
    console = Console(record=True, width=200)
    again = runner.run_experiment(load_spec(path), "tiny", tmp_path, jobs=1, console=console)
    assert again.resumed == 0  # every run is made again by the new version
    assert not set(again.table["run_id"]) & set(full.table["run_id"])
    said = console.export_text()
    assert f"{full.table.height} run folder(s) in {tmp_path} come from other settings" in said
    assert_frame_equal(
        without_wall(again.table).drop("run_id"), without_wall(full.table).drop("run_id")
    )


def test_the_count_and_an_estimate_are_said_before_a_run_and_a_big_ask_can_be_stopped(tmp_path):
    spec = load_spec(write_spec(tmp_path))
    console = Console(record=True, width=200)
    asked = []

    def refuse(runs, estimate):
        asked.append((runs, estimate))
        raise ReclaimError("not started")

    with pytest.raises(ReclaimError, match="not started"):
        runner.run_experiment(
            spec, "tiny", tmp_path / "out", jobs=1, console=console, confirm=refuse
        )
    assert asked and asked[0][0] == 3 and asked[0][1].startswith("about ")
    assert "tiny: 3 runs at scale 'tiny', 3 to run: about" in console.export_text()
    assert not list((tmp_path / "out" / "runs").iterdir())  # nothing ran


def test_a_run_stopped_part_way_continues_from_its_checkpoint(uninterrupted, tmp_path, monkeypatch):
    import functools

    from reclaim.sim import experiment
    from reclaim.sim.checkpoint import Checkpoint

    path, _, full = uninterrupted

    def killed_at_tick_20(sim) -> None:
        if sim.stats.ticks == 20:
            raise KeyboardInterrupt

    monkeypatch.setattr(experiment, "Checkpoint", functools.partial(Checkpoint, every_s=0.0))
    monkeypatch.setattr(
        experiment, "replay", functools.partial(experiment.replay, on_tick=killed_at_tick_20)
    )
    with pytest.raises(KeyboardInterrupt):
        runner.run_experiment(load_spec(path), "tiny", tmp_path, jobs=1)
    assert len(list((tmp_path / "checkpoints").iterdir())) == 1
    monkeypatch.undo()

    console = Console(record=True, width=200)
    resumed = runner.run_experiment(load_spec(path), "tiny", tmp_path, jobs=1, console=console)
    assert "1 run(s) continue from their checkpoints" in console.export_text()
    assert_frame_equal(without_wall(resumed.table), without_wall(full.table))
    assert not any((tmp_path / "checkpoints").iterdir())
