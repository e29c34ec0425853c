"""The lava experiment kind: spec checks, pool sizing, and what the model may see."""

import re
import shutil

import numpy as np
import polars as pl
import pytest

from reclaim.errors import ReclaimError
from reclaim.experiments.spec import load_spec, parse_spec
from reclaim.lifetime.experiment import (
    Pool,
    lifetime_plugins,
    peak_demand,
    pool_capacity,
    resolve_store,
    uses_lifetimes,
)
from reclaim.lifetime.vms import VmTable
from reclaim.traces import sample_path

SPEC = """
name = "mini-lava"
kind = "lava"
[model]
train_fraction = 0.5
[[pools]]
name = "hn"
store = "sample:alibaba-gpu2025"
family = "HN"
host = "96c384g8gpu"
[scale.tiny]
days = 2
[[runs]]
placement = ["best-fit", "las>best-fit"]
lifetimes = ["model", "oracle"]
"""


def table(arrival, exit_, request) -> VmTable:
    n = len(arrival)
    exit_ = np.asarray(exit_, float)
    return VmTable(
        id=np.array([f"vm{i}" for i in range(n)]),
        family=np.array(["f"] * n),
        arrival=np.asarray(arrival, float),
        exit=exit_,
        left_censored=np.zeros(n, bool),
        right_censored=np.isinf(exit_),
        request=np.asarray(request, np.float32),
        features=pl.DataFrame({"cpu": [float(r[0]) for r in request]}),
        window=(0.0, 100.0),
    )


def test_a_lava_spec_expands_its_grid_once_per_distinct_run(tmp_path):
    spec = parse_spec(SPEC, tmp_path / "s.toml")
    runs = spec.runs("tiny")
    # best-fit ignores lifetimes: asked with model and oracle, it is one run
    assert [r.label for r in runs] == [
        "best-fit",
        "las>best-fit (model)",
        "las>best-fit (oracle)",
    ]
    assert len({r.run_id for r in runs}) == 3
    assert runs[0].columns()["pool"] == "hn"
    assert spec.kind == "lava"


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ('kind = "lava"', 'kind = "lavva"', "unknown experiment kind 'lavva'"),
        ('host = "96c384g8gpu"', 'host = "96 cores"', "pools[1].host"),
        ("train_fraction = 0.5", "train_fraction = 1.5", "model.train_fraction"),
        ('"las>best-fit"]', '"las>worst-fit"]', "runs[1].placement"),
        ('lifetimes = ["model", "oracle"]', 'lifetimes = "none"', "needs lifetimes"),
        ("[scale.tiny]", "[defrag]\ndrain_share = 2.0\n[scale.tiny]", "defrag.drain_share"),
        ("days = 2", "days = 2\nseeds = 3", "scale.tiny.seeds"),
    ],
)
def test_spec_mistakes_are_one_line_errors_naming_the_key(tmp_path, old, new, problem):
    text = SPEC.replace(old, new)
    with pytest.raises(ReclaimError, match=re.escape(problem)) as err:
        parse_spec(text, tmp_path / "s.toml")
    assert "\n" not in str(err.value)


def test_a_shipped_sample_store_is_named_not_placed_so_run_ids_follow_no_checkout(
    tmp_path, monkeypatch
):
    runs = parse_spec(SPEC, tmp_path / "s.toml").runs("tiny")
    assert {r.pool.store for r in runs} == {"sample:alibaba-gpu2025"}
    assert resolve_store("sample:alibaba-gpu2025") == str(sample_path("alibaba-gpu2025"))
    with pytest.raises(ReclaimError, match="pools\\[1\\].store"):
        parse_spec(SPEC.replace("alibaba-gpu2025", "no-such-sample"), tmp_path / "s.toml")
    # the samples of another checkout name the same runs
    moved = tmp_path / "checkout" / "alibaba-gpu2025"
    shutil.copytree(sample_path("alibaba-gpu2025"), moved)
    monkeypatch.setattr("reclaim.experiments.spec.sample_path", lambda name: moved)
    elsewhere = parse_spec(SPEC, tmp_path / "s.toml").runs("tiny")
    assert [r.run_id for r in elsewhere] == [r.run_id for r in runs]


def test_the_shipped_lava_spec_parses_with_every_pool():
    spec = load_spec("lava")
    assert set(spec.pools) == {"dlrm-cn", "dlrm-hn", "openb"}
    labels = {r.label for r in spec.runs("small")}
    # every placer ranks the stranding score first (docs/lava.md)
    assert "stranding>best-fit" in labels
    assert "stranding>lava>las>best-fit (model)" in labels
    assert "stranding>las>best-fit (oracle) defrag=lars" in labels


def test_uses_lifetimes_reads_every_level_of_a_placer_spec():
    assert uses_lifetimes("lava>las>best-fit")
    assert uses_lifetimes("tetris:1+las:2")
    assert not uses_lifetimes("best-fit")
    assert lifetime_plugins("stranding>lava>las>best-fit") == "lava>las"
    assert lifetime_plugins("tetris:1+las:2") == "las"
    assert lifetime_plugins("stranding>best-fit") == ""


def test_peak_demand_counts_overlap_and_frees_exits_before_arrivals_at_one_instant():
    vms = table([0, 10, 20, 20], [20, 30, 40, np.inf], [[1, 1, 0], [2, 1, 0], [4, 0, 1], [1, 1, 0]])
    # at t=20 the first VM leaves as two arrive: 2 + 4 + 1 cores
    assert peak_demand(vms, 100.0).tolist() == [7.0, 2.0, 1.0]
    assert peak_demand(vms, 15.0).tolist() == [3.0, 2.0, 0.0]


def test_pool_capacity_sizes_hosts_to_the_load_on_the_tightest_resource():
    vms = table([0, 0], [50, 50], [[8, 10, 1], [8, 10, 1]])
    pool = Pool("p", "unused", None, "96c384g8gpu", 0.25)
    capacity = pool_capacity(pool, vms, 100.0)
    # 2 GPUs at 25 % of 8 GPUs per host: one host; CPU and memory need no more
    assert capacity.tolist() == [[96.0, 384.0, 8.0]]
    small = Pool("p", "unused", None, "4c384g8gpu", 0.9)
    with pytest.raises(ReclaimError, match="does not fit"):
        pool_capacity(small, vms, 100.0)
