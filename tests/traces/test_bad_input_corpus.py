"""A part of the bad-input corpus (bad_input_corpus.py) through the real CLI, so that its tally
cannot regress: every case tried is a clean one-line error or a filtered row that is counted."""

from __future__ import annotations

from itertools import cycle

from bad_input_corpus import CASES, OTHER_FILES, SPECS, Job, applies, run_jobs

from reclaim import registry

#: Cases the test rotates through; the full corpus (run the script) tries every case.
SAMPLED = (
    "inf",
    "1e300",
    "1e400",
    "negative",
    "NaN",
    "empty value",
    "not a number",
    "unsorted time",
    "duplicate row",
    "header only",
    "truncated gzip",
    "empty file",
    "empty gzip",
    "missing column",
    "random bytes inside",
    "random bytes after rows",
    "UTF-16",
    "times x1e6",
    "times /1000",
    "memory x1024",
)


def sample_jobs(per_format: int = 2) -> list[Job]:
    """``per_format`` cases for each registered format, rotating through SAMPLED so that the
    formats together try a different case each."""
    cases = cycle(SAMPLED)
    jobs = []
    for fmt in registry.names("trace_format"):
        picked: list[str] = []
        for case in cases:
            if applies(case, SPECS[fmt]) and case not in picked:
                picked.append(case)
            if len(picked) == per_format:
                break
        jobs += [Job(fmt, case, SPECS[fmt]) for case in picked]
    return jobs


def test_sampled_cases_are_clean_errors_or_counted():
    assert set(SAMPLED) <= set(CASES)
    jobs = sample_jobs()
    assert len({job.fmt for job in jobs}) == len(registry.names("trace_format"))
    results = run_jobs(jobs)
    bad = [r for r in results if r.outcome not in ("clean", "counted")]
    assert not bad, "\n".join(f"{r.fmt} / {r.case}: {r.outcome}: {r.detail}" for r in bad)


def test_the_other_files_of_multi_file_formats_refuse_what_they_once_stored():
    """Cases the corpus found silently stored in a second file of a format: now clean errors."""
    jobs = [
        Job("alibaba2018", "duplicate row", OTHER_FILES["alibaba2018"][0]),  # machine_meta
        Job("azure2019", "NaN", OTHER_FILES["azure2019"][0]),  # vmtable core bucket
        Job("alibaba-gpu2023", "header only", OTHER_FILES["alibaba-gpu2023"][0]),  # node list
    ]
    results = run_jobs(jobs)
    assert [r.outcome for r in results] == ["clean"] * 3, results
    assert "second event of machine 'm_1932' at time_stamp 0" in results[0].detail
    assert "vm_virtual_core_count_bucket is NaN" in results[1].detail
    assert results[2].detail.endswith("openb_node_list_all_node.csv.gz: the node list has no rows")


def test_every_reader_refuses_random_bytes_and_drops_a_byte_order_mark():
    """Issue 33: a file of random bytes is one line naming the file (no UnicodeDecodeError, no
    byte echoed), and a byte-order mark changes nothing, whichever reader reads it."""
    formats = registry.names("trace_format")
    jobs = [Job(f, case, SPECS[f]) for f in formats for case in ("random bytes", "byte-order mark")]
    results = run_jobs(jobs)
    outcomes = {(r.fmt, r.case): r for r in results}
    for fmt in formats:
        garbage, bom = outcomes[fmt, "random bytes"], outcomes[fmt, "byte-order mark"]
        assert garbage.outcome == "clean", garbage
        assert "\\x" not in garbage.detail and "\ufffd" not in garbage.detail, garbage
        assert bom.outcome == "same", bom
