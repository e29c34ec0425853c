"""The lava experiment end to end, as a user runs it: the tiny scale, then its report."""

import polars as pl

from cli_runner import reclaim


def test_lava_tiny_runs_resumes_and_reports_against_the_paper(tmp_path):
    out = tmp_path / "lava"
    done = reclaim("experiment", "run", "lava", "--scale", "tiny", "-o", str(out), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    runs = pl.read_parquet(out / "runs.parquet")
    assert runs.height == 9
    assert set(runs["pool"]) == {"dlrm-hn"}
    # every run measures the same span on the same pool
    assert runs["hosts"].n_unique() == 1 and runs["measured_days"].n_unique() == 1
    baseline = runs.filter(pl.col("label") == "stranding>best-fit")
    assert baseline["migrations"].item() == 0 and baseline["model_calls"].item() == 0
    lars = runs.filter(pl.col("defrag") == "lars")
    assert lars["list_migrations_baseline"].item() > 0
    assert lars["list_migrations_lars"].item() <= lars["list_migrations_baseline"].item()

    again = reclaim("experiment", "run", "lava", "--scale", "tiny", "-o", str(out))
    assert "9 resumed" in again.stdout

    report = reclaim("report", str(out))
    assert report.returncode == 0, report.stderr
    for text in ("vs best-fit", "Fig. 6, mean of 24 C2 pools", "Table 2", "dlrm-hn"):
        assert text in report.stdout
    figures = {p.name for p in (out / "report").glob("*.png")}
    assert figures == {"lava_empty_host_gain.png", "lava_timeline_dlrm-hn.png"}
    html = (out / "report" / "index.html").read_text()
    assert "lava_empty_host_gain.png" in html and "LARS" in html
