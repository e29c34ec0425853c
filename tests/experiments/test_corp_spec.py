"""The corp experiment kind: its spec, its grid, and a run end to end with its report."""

import json
import re

import polars as pl
import pytest

from cli_runner import reclaim
from reclaim.errors import ReclaimError
from reclaim.experiments.spec import load_spec, parse_spec

MINI = """
name = "corp-mini"
kind = "corp"
[scenario]
n_vms = 40
n_pms = 8
n_train = 60
[simulation]
borrowing = "loans"
[scale.tiny]
jobs = [20, 30]
seeds = [0]
[[runs]]
provisioner = ["corp", "dra"]
[[runs]]
provisioner = "corp"
params = { p_threshold = [0.5, 0.9] }
jobs = "max"
"""


def test_the_grid_crosses_methods_jobs_and_settings_and_sweeps_only_the_largest_jobs(tmp_path):
    runs = parse_spec(MINI, tmp_path / "s.toml").runs("tiny")
    assert [(r.label, r.n_jobs) for r in runs] == [
        ("corp", 20),
        ("corp", 30),
        ("dra", 20),
        ("dra", 30),
        ("corp p_threshold=0.5", 30),
        ("corp p_threshold=0.9", 30),
    ]
    assert len({r.run_id for r in runs}) == len(runs)
    assert json.loads(runs[-1].columns()["params"]) == {"p_threshold": 0.9}
    assert runs[0].columns()["slots"] == "hold" and runs[0].columns()["epsilon"] == 0.1


SWEEP = """
[[runs]]
provisioner = "dra"
scenario = { resample = ["hold", "linear"] }
simulation = { epsilon = [0.05, 0.2] }
jobs = "max"
"""


def test_a_group_sweeps_scenario_and_simulation_settings_over_the_specs_own(tmp_path):
    runs = parse_spec(MINI + SWEEP, tmp_path / "s.toml").runs("tiny")[6:]
    assert [r.label for r in runs] == [
        "dra resample=hold epsilon=0.05",
        "dra resample=hold epsilon=0.2",
        "dra resample=linear epsilon=0.05",
        "dra resample=linear epsilon=0.2",
    ]
    last = runs[-1]
    assert last.scenario == {"n_vms": 40, "n_pms": 8, "n_train": 60, "resample": "linear"}
    assert last.simulation == {"window": 6, "epsilon": 0.2, "borrowing": "loans"}
    assert (last.columns()["slots"], last.columns()["epsilon"]) == ("linear", 0.2)
    assert len({r.run_id for r in runs}) == 4


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("resample = [", "resampl = [", "runs[3].scenario.resampl"),
        ('"linear"]', '"smooth"]', "runs[3].scenario.resample"),
        ("epsilon = [0.05, 0.2]", "epsilon = [0.05, 'x']", "runs[3].simulation.epsilon"),
        ("simulation = {", "simulation = { windows = 3,", "runs[3].simulation"),
    ],
)
def test_sweep_mistakes_name_the_group_and_key(tmp_path, old, new, key):
    with pytest.raises(ReclaimError, match=re.escape(key)) as err:
        parse_spec(MINI + SWEEP.replace(old, new), tmp_path / "s.toml")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('provisioner = ["corp", "dra"]', 'provisioner = ["corp", "dre"]', "runs[1].provisioner"),
        ("p_threshold = [", "p_treshold = [", "runs[2].params"),
        ('jobs = "max"', 'jobs = "most"', "runs[2].jobs"),
        ("n_vms = 40", "n_vm = 40", "scenario.n_vm"),
        ("jobs = [20, 30]", "jobs = [0]", "scale.tiny.jobs"),
        ('borrowing = "loans"', 'borrowing = "all"', "simulation.borrowing"),
    ],
)
def test_spec_mistakes_are_one_line_errors_naming_the_key(tmp_path, old, new, key):
    with pytest.raises(ReclaimError, match=re.escape(key)) as err:
        parse_spec(MINI.replace(old, new), tmp_path / "s.toml")
    assert "\n" not in str(err.value)


def test_run_ids_spell_out_the_simulation_defaults(tmp_path):
    explicit = parse_spec(MINI, tmp_path / "s.toml").runs("tiny")
    implicit = parse_spec(MINI.replace('borrowing = "loans"', ""), tmp_path / "s.toml").runs("tiny")
    shared = parse_spec(MINI.replace('"loans"', '"shared"'), tmp_path / "s.toml").runs("tiny")
    assert [r.run_id for r in explicit] == [r.run_id for r in implicit]
    assert not {r.run_id for r in explicit} & {r.run_id for r in shared}


def test_the_shipped_sensitivity_spec_crosses_slots_epsilon_and_table_ii_readings():
    runs = load_spec("corp-sensitivity").runs("small")
    cells = {
        (r.provisioner, r.scenario["resample"], r.simulation["epsilon"], r.params.get("confidence"))
        for r in runs
    }
    slots = {"calibrated", "window-hold", "percentiles"}
    assert {c[1] for c in cells} == slots
    assert {(s, e, eta) for p, s, e, eta in cells if p == "corp"} == {
        (s, e, eta) for s in slots for e in (0.05, 0.1, 0.2) for eta in (0.95, 0.9)
    }
    assert {r.params["p_threshold"] for r in runs if r.provisioner == "corp"} == {0.95, 0.9}
    assert {r.n_jobs for r in runs} == {300} and len({r.seed for r in runs}) == 5


def test_the_shipped_corp_spec_covers_the_papers_figures():
    spec = load_spec("corp")
    runs = spec.runs("small")
    assert {r.provisioner for r in runs} == {"corp", "rccr", "cloudscale", "dra"}
    assert sorted({r.n_jobs for r in runs}) == [50, 100, 150, 200, 250, 300]
    swept = {k for r in runs for k in r.params}
    assert swept == {"p_threshold", "confidence"}


def test_a_corp_sweep_runs_resumes_and_reports_the_papers_figures(tmp_path):
    spec = tmp_path / "mini.toml"
    spec.write_text(MINI)
    out = tmp_path / "res"
    done = reclaim("experiment", "run", str(spec), "--scale", "tiny", "-o", str(out))
    assert done.returncode == 0, done.stderr
    # Fig. 6 from each method's predictions, young jobs apart, printed with the run
    assert "Fig. 6, CPU predictions" in done.stdout
    assert re.search(r"30 jobs, dra: point \d\.\d+, bound \d\.\d+; \d+ jobs scored", done.stdout)
    runs = pl.read_parquet(out / "runs.parquet")
    assert runs.height == 6
    assert runs["util"].is_between(0, 1).all() and runs["slo_violation_rate"].is_between(0, 1).all()
    again = reclaim("experiment", "run", str(spec), "--scale", "tiny", "-o", str(out))
    assert "6 resumed" in again.stdout
    report = reclaim("report", str(out))
    assert report.returncode == 0, report.stderr
    assert "Fig. 6: prediction error rate" in report.stdout
    figures = {p.name for p in (out / "report").glob("*.png")}
    assert figures == {
        "corp_fig6_prediction_error.png",
        "corp_fig7_utilisation.png",
        "corp_fig8_util_vs_slo.png",
        "corp_fig10_latency.png",
    }


def test_a_sweep_over_corps_predict_settings_reuses_one_fit_and_matches_a_fresh_one(tmp_path):
    from reclaim.corp import experiment
    from reclaim.corp.simulator import WALL_TIME_KEYS

    runs = parse_spec(MINI, tmp_path / "s.toml").runs("tiny")
    plain, strict = runs[1], runs[5]  # corp at 30 jobs: defaults, then p_threshold = 0.9
    assert strict.params == {"p_threshold": 0.9} and strict.n_jobs == plain.n_jobs
    experiment._fitted.clear()
    first = experiment.execute(plain).summary
    reused = experiment.execute(strict).summary
    assert first["fit_s"] > 0 and reused["fit_s"] == 0.0
    experiment._fitted.clear()
    fresh = experiment.execute(strict).summary
    assert fresh["fit_s"] > 0
    for key, value in fresh.items():
        if key not in WALL_TIME_KEYS and key != "fit_s":
            assert reused[key] == value or (value != value and reused[key] != reused[key]), key
