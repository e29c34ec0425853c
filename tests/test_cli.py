"""The command line as a user meets it: exit codes, one-line errors, outputs on disk."""

from __future__ import annotations

import json

import polars as pl
import pytest

from cli_runner import reclaim


def test_simulate_on_the_shipped_sample_writes_results(tmp_path):
    out = tmp_path / "run"
    done = reclaim("simulate", "--apps", "60", "--hosts", "20x32c128g", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "turnaround" in done.stdout and "slack per app" in done.stdout
    # the offered load is stated before the run, by requests and by usage after pairing
    assert "offered load CPU / memory (usage)" in done.stdout
    assert "usage / request after pairing" in done.stdout
    apps = pl.read_parquet(out / "apps.parquet")
    assert len(apps) == 60
    assert set(apps["state"]) <= {"done", "rejected"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["summary"]["apps"] == 60
    assert (out / "timeline.png").stat().st_size > 10_000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["simulate", "--hosts", "12x"], "expected COUNTxCORESgMEMg"),
        (["simulate", "--apps", "5", "--controller", "nope"], "unknown controller 'nope'"),
        (["simulate", "--apps", "5", "--placement", "worst-fit"], "unknown placement 'worst-fit'"),
        (["simulate", "--jobs", "/nonexistent/store"], "not a trace store"),
        (["simulate", "--apps", "5", "--pairing", "/nonexistent/store"], "not a trace store"),
        (["simulate", "--apps", "5", "--controller", "pessimistic"], "needs a forecaster"),
        (["forecast", "eval", "--models", "naive,prophet"], "unknown forecaster 'prophet'"),
        (["forecast", "eval", "--history", "ten"], "--history: expected a whole number >= 1"),
        # lists: an empty item, a value past its bound, nothing at all (issue 33)
        (["forecast", "eval", "--history", "10,,20"], "--history: expected a list like 10,20,40"),
        (["forecast", "eval", "--history", "100000"], "--history: expected a whole number"),
        (["forecast", "eval", "--models", ""], "--models: expected forecaster names"),
        (["place", "eval", "--load", "1000"], "--load: expected a finite number > 0 and <= 100"),
        (["rl", "eval", "--load", "30,,50"], "--load: expected a list like 30,50,80"),
        (["simulate", "--placement", "best-fit:-1"], "--placement: best-fit weight: expected"),
        (["place", "eval", "--machines", "100000000"], "--machines: expected a whole number"),
        (["simulate", "--seed", "-1"], "--seed: expected a whole number >= 0"),
        (["simulate", "--arrival-days", "inf"], "--arrival-days: expected a finite number"),
        (
            ["forecast", "eval", "--history", "-3"],
            "--history: expected a whole number >= 1",
        ),
        (["forecast", "eval", "--store", "/nonexistent/store"], "not a trace store"),
        (["simulate", "--apps", "1000000000"], "--apps: expected a whole number >= 1 and <="),
        (["simulate", "--apps", "5", "--hosts", "1000000000x32c128g"], "GiB available"),
    ],
)
def test_user_errors_are_one_line_without_traceback(tmp_path, args, message):
    done = reclaim(*args, "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["simulate", "--apps", "5", "--stop-days", "-1"],
            "--stop-days: expected a finite number > 0",
        ),
        (
            ["simulate", "--apps", "5", "--arrival-days", "0"],
            "--arrival-days: expected a finite number > 0",
        ),
        (
            ["simulate", "--apps", "5", "--controller", "reservation", "--forecaster", "gp-exp"],
            "controller 'reservation' uses no forecaster",
        ),
        (["live", "run", "--modes", "shaped,bogus"], "--modes: expected modes from"),
    ],
)
def test_options_out_of_range_are_refused_before_any_work(tmp_path, args, message):
    done = reclaim(*args, "-o", str(tmp_path / "out"))
    assert done.returncode == 2
    assert message in done.stderr.replace("Invalid value for ", "")
    assert "Traceback" not in done.stderr + done.stdout
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["simulate", "--apps", "5"],
        ["simulate"],
        ["experiment", "run", "pace-fig3", "--scale", "tiny"],
        ["report", "."],
        ["forecast", "eval"],
        ["traces", "import", "bitbrains", "."],
        ["live", "run", "--apps", "2"],
    ],
)
def test_an_output_that_is_a_file_is_refused_before_any_work(tmp_path, command):
    taken = tmp_path / "taken"
    taken.write_text("keep me")
    done = reclaim(*command, "-o", str(taken))
    assert done.returncode == 2
    assert "is a file, not a directory" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert taken.read_text() == "keep me"


def test_bad_option_is_a_usage_error():
    done = reclaim("simulate", "--bogus")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


def test_forecast_eval_writes_scores_and_plots_and_resumes(tmp_path):
    out = tmp_path / "fc"
    args = ["forecast", "eval", "--models", "naive,conformal", "--conformal-base", "naive"]
    args += ["--history", "10", "--series", "5", "--origins", "30", "-o", str(out)]
    done = reclaim(*args)
    assert done.returncode == 0, done.stderr
    assert "conformal(naive)" in done.stdout
    summary = pl.read_parquet(out / "summary.parquet")
    # 2 stores x 2 resources x 2 models x 1 history
    assert len(summary) == 8
    assert (summary["forecasts"] == 150).all()
    assert (out / "errors.png").stat().st_size > 10_000
    assert (out / "calibration.png").stat().st_size > 10_000
    first = json.loads((out / "parts" / "bitbrains--mem--naive--h10.json").read_text())
    (out / "parts" / "bitbrains--mem--naive--h10.json").unlink()
    again = reclaim(*args)
    assert again.returncode == 0, again.stderr
    redone = json.loads((out / "parts" / "bitbrains--mem--naive--h10.json").read_text())
    assert {k: v for k, v in redone.items() if k not in ("seconds", "series_per_s")} == {
        k: v for k, v in first.items() if k not in ("seconds", "series_per_s")
    }


def test_a_shipped_experiment_at_tiny_scale_and_its_report(tmp_path):
    out = tmp_path / "fig3"
    done = reclaim("experiment", "run", "pace-fig3", "--scale", "tiny", "-o", str(out))
    assert done.returncode == 0, done.stderr
    runs = pl.read_parquet(out / "runs.parquet")
    assert sorted(runs["label"]) == [
        "optimistic/oracle",
        "pessimistic/oracle",
        "reservation",
        "vpa",
    ]
    assert runs.filter(pl.col("label") == "pessimistic/oracle")["failures"].item() == 0
    shown = reclaim("report", str(out))
    assert shown.returncode == 0, shown.stderr
    assert "paper vs ours" in shown.stdout and "37.67%" in shown.stdout
    html = (out / "report" / "index.html").read_text()
    assert "pessimistic/oracle" in html and (out / "report" / "pace-fig3-boxplots.png").exists()


def test_version_and_short_help():
    from reclaim import __version__

    done = reclaim("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"reclaim {__version__}"
    for args in (["-h"], ["simulate", "-h"], ["traces", "import", "-h"]):
        done = reclaim(*args)
        assert done.returncode == 0 and "Usage: reclaim" in done.stdout, args
    assert "{FORMAT} {SOURCE}" in reclaim("traces", "import", "-h").stdout
