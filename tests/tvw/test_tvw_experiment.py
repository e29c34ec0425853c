"""The tvw experiment kind: the runs of ``reclaim place eval`` as a spec, the same numbers."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.errors import ReclaimError
from reclaim.experiments import load_spec, run_experiment
from reclaim.traces.store import sample_path
from reclaim.tvw.evaluate import Policy, evaluate
from reclaim.tvw.scenario import ScenarioSpec, load_pools

SPEC = """
name = "tvw-small"
kind = "tvw"
stores = ["sample:bitbrains"]
seed = 3
[scenario]
machines = 4
[scale.tiny]
jobs = 20
loads = [50]
sequences = 2
[[runs]]
policy = ["best-fit", "tetris"]
"""


def test_a_tvw_spec_runs_what_place_eval_runs(tmp_path):
    path = tmp_path / "tvw.toml"
    path.write_text(SPEC)
    spec = load_spec(path)
    runs = spec.runs("tiny")
    assert [(r.policy, r.seed) for r in runs] == [
        ("best-fit@current", 0), ("best-fit@current", 1), ("tetris@peak", 0), ("tetris@peak", 1),
    ]  # fmt: skip
    table = run_experiment(spec, "tiny", tmp_path / "out", jobs=1).table
    scenario = ScenarioSpec(machines=4, jobs=20)
    pools = load_pools([sample_path("bitbrains")], scenario)
    policies = [Policy.parse("best-fit"), Policy.parse("tetris")]
    direct = evaluate(pools, scenario, [0.5], policies, 2, 3).sort("policy", "sequence")
    ours = table.sort("policy", "seed")
    for column in ("util_cpu", "frag_mem", "machines_used", "overshoot_pct", "wait_mean_h"):
        np.testing.assert_array_equal(ours[column].to_numpy(), direct[column].to_numpy())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("policy = [", 'policy = ["worst-fit", '), "runs[1].policy: "),
        (("machines = 4", "machines = 0"), "scenario: machines must be at least 1"),
        (("machines = 4", "racks = 4"), "[scenario]: unknown key 'racks'"),
        (("loads = [50]", "loads = [150]"), "loads in (0, 100]"),
        (("machines = 4", 'machines = "four"'), "scenario.machines: expected a whole number"),
    ],
)
def test_a_bad_tvw_spec_is_one_line_naming_the_key(tmp_path, change, message):
    path = tmp_path / "tvw.toml"
    path.write_text(SPEC.replace(*change))
    with pytest.raises(ReclaimError) as err:
        load_spec(path)
    assert message in str(err.value) and str(path) in str(err.value)
