"""Experiment kinds are a registry kind: the four built-ins are found by name, and a new kind
joins from three files (a kind module, a report module, a spec) plus the entry point that lists
it, as a third-party package would ship it."""

from __future__ import annotations

import sys
import textwrap

import polars as pl
import pytest

from reclaim import registry
from reclaim.errors import ReclaimError
from reclaim.experiments import experiment_kind, load_spec, run_experiment
from reclaim.report.experiment_report import write_report

KIND = '''
"""Dice: a run rolls ``sides``-sided dice ``rolls`` times; its summary is their mean."""
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import polars as pl

from reclaim.experiments.kind import IDENTITY_COLUMNS, ExperimentKind, KindRun, RunResult
from reclaim.experiments.kind import identity, unique
from reclaim.experiments.spec import ScaledSpec, SpecErrors


@dataclass(frozen=True)
class DiceRun(KindRun):
    sides: int
    rolls: int
    kind = "dice"

    def columns(self):
        return self.identity() | {"sides": self.sides}


@dataclass(frozen=True)
class DiceSpec(ScaledSpec):
    sides: tuple
    kind = "dice"

    def runs(self, scale=None):
        sc = self.scale(scale)
        return unique(
            [
                DiceRun(**identity(self, sc.name, f"d{s}", seed, f"d{s}", {"s": s}), sides=s,
                        rolls=sc.rolls)
                for s in self.sides
                for seed in sc.seeds
            ],
            self.path,
        )


class DiceKind(ExperimentKind):
    columns = IDENTITY_COLUMNS | {"sides": pl.Int64, "wall_s": pl.Float64}
    report_module = "dice_report"

    def parse(self, doc, path, text):
        err = SpecErrors(path)
        err.keys(doc, ("name", "kind", "description", "sides", "scale"), "top level")
        scale = err.typed(doc.get("scale"), dict, "scale")
        scales = {n: SimpleNamespace(name=n, **t) for n, t in scale.items()}
        return DiceSpec(**err.head(doc, text), scales=scales, sides=tuple(doc["sides"]))

    def run(self, run):
        rolls = np.random.default_rng(run.seed).integers(1, run.sides + 1, run.rolls)
        return RunResult({"mean": float(rolls.mean())}, {}, 0.0)
'''

REPORT = '''
"""The dice report: one row per die, the mean roll over seeds."""
import polars as pl

from reclaim.report.experiment_data import ResultStore, read_store
from reclaim.report.experiment_report import sectioned_report
from reclaim.report.html import Section

SOURCE = "probability"


def sections(store, out):
    means = store.runs.group_by("sides", maintain_order=True).agg(pl.col("mean").mean())
    rows = [[str(s), f"{m:.2f}"] for s, m in means.iter_rows()]
    return [Section(store.name, [], (["sides", "mean"], rows))], (["die", "expected"], [])


def write(root, out):
    runs, meta, pending = read_store(root, ["run_id", "sides", "mean"])
    store = ResultStore(root, meta["name"], meta["scale"], "", runs, pending)
    return sectioned_report(root, out, store, sections, SOURCE)
'''

SPEC = """
name = "dice"
kind = "dice"
sides = [6, 20]
[scale.tiny]
rolls = 2000
seeds = [0, 1]
"""


@pytest.fixture
def dice(tmp_path, monkeypatch):
    """The three files in a folder on sys.path, and a dist-info listing the kind's entry point."""
    (tmp_path / "dice_kind.py").write_text(textwrap.dedent(KIND))
    (tmp_path / "dice_report.py").write_text(textwrap.dedent(REPORT))
    (tmp_path / "dice.toml").write_text(SPEC)
    meta = tmp_path / "dice_kind-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: dice-kind\nVersion: 1.0\n")
    (meta / "entry_points.txt").write_text("[reclaim.experiment]\ndice = dice_kind:DiceKind\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._entry_points.cache_clear()
    yield tmp_path / "dice.toml"
    registry._entry_points.cache_clear()
    registry._REGISTRIES.get("experiment", {}).pop("dice", None)
    for module in ("dice_kind", "dice_report"):
        sys.modules.pop(module, None)


def test_the_four_kinds_are_found_by_name():
    assert {"corp", "lava", "shaping", "tvw"} <= set(registry.names("experiment"))
    for name in ("corp", "lava", "shaping", "tvw"):
        kind = experiment_kind(name)
        assert {"run_id", "seed"} <= set(kind.columns) and kind.report_module


def test_a_new_kind_from_three_files_runs_and_reports(dice, tmp_path):
    spec = load_spec(dice)
    assert spec.kind == "dice" and [r.label for r in spec.runs("tiny")] == ["d6"] * 2 + ["d20"] * 2
    outcome = run_experiment(spec, "tiny", tmp_path / "out", jobs=1)
    assert outcome.table.columns[:6] == ["run_id", "experiment", "scale", "label", "seed", "sides"]
    means = outcome.table.group_by("sides").agg(pl.col("mean").mean()).sort("sides")
    assert means["mean"].to_list() == pytest.approx([3.5, 10.5], abs=0.3)
    report = write_report(outcome.out, tmp_path / "report")
    assert report.source == "probability" and report.html.is_file()
    assert [row[0] for row in report.sections[0].table[1]] == ["6", "20"]


def test_an_unknown_kind_names_the_known_ones(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text('name = "x"\nkind = "dice"\n')
    with pytest.raises(ReclaimError, match=r"unknown experiment kind 'dice' \(known: corp, lava"):
        load_spec(path)
