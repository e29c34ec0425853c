"""``reclaim lifetime eval`` as a user runs it."""

from cli_runner import reclaim


def test_eval_prints_the_split_and_the_metrics_and_writes_plots(tmp_path):
    done = reclaim(
        "lifetime", "eval", "sample:alibaba-gpu2025", "--family", "HN", "-o", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    for text in ("honest split in time", "at creation: lives > 7 days", "Fig. 9", "Fig. 10"):
        assert text in done.stdout
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "lifetime_f1_uptime.png",
        "lifetime_pr.png",
        "lifetime_weeks.png",
    ]


def test_a_store_that_is_not_a_lifetime_trace_is_a_one_line_error(tmp_path):
    done = reclaim("lifetime", "eval", "sample:bitbrains")
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    missing = reclaim("lifetime", "eval", str(tmp_path / "nowhere"))
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
