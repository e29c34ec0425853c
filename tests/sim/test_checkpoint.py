"""Checkpoints: a run stopped part-way and resumed from its last checkpoint gives the results of
the run never stopped, bit for bit; a checkpoint that cannot be used says so in one line."""

from __future__ import annotations

import pytest

from reclaim.errors import ReclaimError
from reclaim.sim.checkpoint import Checkpoint
from reclaim.sim.run import replay
from reclaim.workload.paper_world import PaperInputs, PaperWorldSpec, build_paper_world
from tiny_workloads import tiny_paper_world


class Stop(Exception):
    """The process dies (a stand-in for a kill between two checkpoints)."""


def stop_after(ticks: int):
    """An ``on_tick`` that stops the run at its ``ticks``-th tick."""

    def on_tick(sim) -> None:
        if sim.stats.ticks == ticks:
            raise Stop

    return on_tick


@pytest.mark.parametrize("label", ["pessimistic/gp-exp", "optimistic/oracle"])
def test_a_run_stopped_and_resumed_gives_the_results_of_the_run_never_stopped(label, tmp_path):
    workload, settings = tiny_paper_world(label, days=0.25)
    whole = replay(workload, settings)
    saved = Checkpoint(tmp_path / "run.pkl", every_s=0.0)  # a checkpoint at every tick
    with pytest.raises(Stop):
        replay(workload, settings, on_tick=stop_after(200), checkpoint=saved)
    assert saved.path.exists()
    resumed = replay(workload, settings, checkpoint=Checkpoint(saved.path, every_s=1e9))
    assert whole.stats.ticks == resumed.stats.ticks > 300
    assert whole.stats.forecasts == resumed.stats.forecasts > 0
    assert resumed.apps.equals(whole.apps)
    assert resumed.timeline.equals(whole.timeline)
    assert resumed.summary == whole.summary
    saved.clear()
    assert not any(tmp_path.iterdir())


def test_a_damaged_checkpoint_is_a_one_line_error_naming_it(tmp_path):
    workload, settings = tiny_paper_world("reservation", days=0.05)
    broken = tmp_path / "run.pkl"
    broken.write_bytes(b"\x80\x05 not a pickle")
    with pytest.raises(ReclaimError, match=r"run\.pkl: cannot resume") as err:
        replay(workload, settings, checkpoint=Checkpoint(broken))
    assert "\n" not in str(err.value)


def test_a_checkpoint_of_another_workload_is_refused(tmp_path):
    workload, settings = tiny_paper_world("reservation", days=0.05)
    saved = Checkpoint(tmp_path / "run.pkl", every_s=0.0)
    with pytest.raises(Stop):
        replay(workload, settings, on_tick=stop_after(5), checkpoint=saved)
    fewer = build_paper_world(PaperWorldSpec(n_apps=300, seed=0), PaperInputs.load())
    with pytest.raises(ReclaimError, match="another workload"):
        replay(fewer, settings, checkpoint=saved)


def test_a_spec_run_saves_under_its_run_id_and_resumes_from_there(tmp_path, monkeypatch):
    import functools
    from dataclasses import replace

    from reclaim.experiments.backends import execute
    from reclaim.experiments.spec import load_spec
    from reclaim.sim import experiment

    run = next(r for r in load_spec("pace-paper").runs("tiny") if r.label == "optimistic/oracle")
    run = replace(run, settings=replace(run.settings, horizon_s=0.1 * 86400.0))
    whole = execute(run)
    monkeypatch.setattr(experiment, "Checkpoint", functools.partial(Checkpoint, every_s=0.0))
    monkeypatch.setattr(
        experiment, "replay", functools.partial(experiment.replay, on_tick=stop_after(50))
    )
    with pytest.raises(Stop):
        execute(run, tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [f"{run.run_id}.pkl"]
    monkeypatch.undo()
    resumed = execute(run, tmp_path)
    assert resumed.stats.ticks == whole.stats.ticks > 100
    assert resumed.apps.equals(whole.apps) and resumed.summary == whole.summary


def test_a_checkpoint_written_by_other_code_is_refused(tmp_path, monkeypatch):
    from reclaim.sim import checkpoint

    workload, settings = tiny_paper_world("reservation", days=0.05)
    saved = Checkpoint(tmp_path / "run.pkl", every_s=0.0)
    with pytest.raises(Stop):
        replay(workload, settings, on_tick=stop_after(5), checkpoint=saved)
    monkeypatch.setattr(checkpoint, "code_hash", lambda: "edited since")
    with pytest.raises(ReclaimError, match="other reclaim code"):
        replay(workload, settings, checkpoint=saved)


def test_a_save_that_fails_is_a_warning_and_the_run_goes_on(tmp_path):
    workload, settings = tiny_paper_world("reservation", days=0.05)
    whole = replay(workload, settings)
    (tmp_path / "run.pkl.partial").mkdir()  # where the save writes: it cannot
    with pytest.warns(UserWarning, match="checkpoint not saved"):
        unsaved = replay(workload, settings, checkpoint=Checkpoint(tmp_path / "run.pkl", 0.0))
    assert unsaved.apps.equals(whole.apps) and unsaved.summary == whole.summary
    assert not (tmp_path / "run.pkl").exists()
