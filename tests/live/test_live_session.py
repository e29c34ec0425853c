"""A live session's folder holds one scenario: a rerun with the same settings resumes, another
scenario is refused before anything runs."""

from __future__ import annotations

import json

import pytest

from reclaim.errors import ReclaimError
from reclaim.live.scenario import LiveScenario
from reclaim.live.session import SCENARIO_FILE, check_scenario


def test_one_scenario_per_folder(tmp_path):
    check_scenario(tmp_path, LiveScenario())
    assert json.loads((tmp_path / SCENARIO_FILE).read_text())["n_apps"] == 100
    check_scenario(tmp_path, LiveScenario())  # the same again: resumes
    with pytest.raises(ReclaimError, match="differs in seed, time_factor"):
        check_scenario(tmp_path, LiveScenario(seed=1, time_factor=10.0))
