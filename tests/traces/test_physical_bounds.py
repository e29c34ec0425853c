"""Values no real trace holds (issue 20): inf, 1e300, 1e400 and -1 in a value column are one
error line and exit 2 through the CLI, for every reader, and leave no store behind; the bounds
of schema.PHYSICAL_MAX hold with a wide margin on the shipped sample stores."""

from __future__ import annotations

import sys
from importlib.resources import files
from pathlib import Path

import pytest
from bad_input_corpus import SPECS, prepare

from reclaim import cli
from reclaim.errors import TraceError
from reclaim.traces import import_trace, load_store
from reclaim.traces.schema import PHYSICAL_MAX
from reclaim.traces.validate import physical

#: The value column each corpus spec breaks, as errors name it, and the bound in its unit.
COLUMNS = {
    "bitbrains": ("CPU usage [MHZ]", "6.5536e+08"),
    "alibaba2017": ("plan_cpu", "6.5536e+06"),
    "alibaba2018": ("cpu_util_percent", "1000"),
    "azure2019": ("avg_cpu", "1000"),
    "google2011-derived": ("cpu", "2.5166e+06"),
    "alibaba-gpu2023": ("cpu_milli", "6.5536e+07"),
    "alibaba-gpu2025": ("cpu_request", "65536"),
    "google2019-usage": ("avg_cpu_usage", "2"),
    "google2011-jobs": ("cpu_request", "2"),
}


def run_cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["reclaim", *args])
    with pytest.raises(SystemExit) as done:
        cli.main()
    out, err = capsys.readouterr()
    return done.value.code, out, err


@pytest.mark.parametrize("fmt", COLUMNS)
@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("inf", "{c} is not finite: inf"),
        ("1e300", "{c} is 1e+300, above {bound} ("),
        ("1e400", "{c} is not finite: inf"),  # overflows to inf when parsed
        ("negative", "negative {c}: -1"),
    ],
)
def test_absurd_values_are_one_line_exit_2_and_no_store(
    fmt, case, problem, tmp_path, monkeypatch, capsys
):
    src = prepare(fmt, case, tmp_path / "src")
    out = tmp_path / "out" / "store"
    code, stdout, err = run_cli(
        monkeypatch, capsys, "traces", "import", fmt, str(src), "-o", str(out)
    )
    column, bound = COLUMNS[fmt]
    spec = SPECS[fmt]
    line = 1 + int(spec.header)  # the first data row is broken
    assert code == 2, err
    assert stdout == ""
    assert err.count("\n") == 1 and err.startswith("error: ")
    assert f"{spec.target}, line {line}: " in err
    assert problem.format(c=column, bound=bound) in err
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_bounds_hold_on_the_shipped_samples_with_a_wide_margin():
    """Every store value is below a tenth of its bound, or within the largest machine for
    normalised units (the samples are real trace lines)."""
    quantity = {
        "cores": "cores",
        "GiB": "GiB",
        "GPUs": "GPUs",
        "s": "s",
        "normalised": "normalised",
    }
    checked = 0
    for folder in Path(str(files("reclaim") / "data" / "sample")).iterdir():
        if not (folder / "meta.json").is_file():
            continue
        store = load_store(folder)
        units = {**store.units, "time": "s"}
        tables = {"workloads": store.workloads(), "usage": store.usage()}
        for table, frame in tables.items():
            df = frame.collect()
            for column in df.columns:
                axis = column.split("_")[0]
                if "time" in column:
                    axis = "time"
                unit = units.get(axis)
                if unit not in quantity or not df[column].dtype.is_float():
                    continue
                top = df[column].max()
                if top is None:
                    continue
                bound = PHYSICAL_MAX[quantity[unit]][0]
                # normalised: the bound is twice the largest machine, which nothing exceeds
                margin = 2 if unit == "normalised" else 10
                assert top <= bound / margin, (folder.name, table, column, top, bound)
                checked += 1
    assert checked >= 20


def test_physical_converts_bounds_to_source_units():
    assert physical("cores") == PHYSICAL_MAX["cores"]
    bound, meaning = physical("GiB", 1024)
    assert bound == PHYSICAL_MAX["GiB"][0] * 1024
    assert meaning == f"1.04858e+06 GiB: {PHYSICAL_MAX['GiB'][1]}"


def test_every_registered_reader_has_a_corpus_spec():
    from reclaim import registry

    assert set(registry.names("trace_format")) <= set(SPECS)
    assert set(COLUMNS) | {"azure2017-lifetimes"} == set(SPECS)


def test_bitbrains_refuses_usage_that_a_tiny_capacity_turns_into_absurd_cores(
    fixtures, tmp_path, ungz, gz
):
    lines = ungz(fixtures / "bitbrains" / "2013-7" / "1.csv.gz").split("\n")
    fields = lines[1].split(";")
    fields[2] = "\t1e-300"  # CPU capacity provisioned [MHZ]: positive, so not filtered as 0
    lines[1] = ";".join(fields)
    src = gz(tmp_path / "1.csv.gz", "\n".join(lines))
    with pytest.raises(
        TraceError, match=r"line 2: cpu usage in cores .* is 1\.7556e\+302, above 65536 \("
    ):
        import_trace("bitbrains", src, tmp_path / "s")
    assert not (tmp_path / "s").exists()
