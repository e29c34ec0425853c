"""Every registered placement plugin passes the same checks (reclaim.testing.placement)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from reclaim import registry
from reclaim.core.capabilities import PlacementCapabilities
from reclaim.placement.framework import min_max_normalize
from reclaim.placement.plugins.best_fit import BestFit
from reclaim.testing.placement import check_plugin


@pytest.mark.parametrize("name", registry.names("placement"))
def test_registered_plugin_conforms(name):
    # a stateful plugin (scoring from an environment's state) is held to its declarations here,
    # and placed with its environment in tests/rl
    check_plugin(name)


def test_every_baseline_is_registered():
    assert {"best-fit", "first-fit", "tetris", "corp-packing"} <= set(registry.names("placement"))


class Unbounded(BestFit):
    """Returns raw scores where normalised ones are due."""

    normalize = staticmethod(lambda raw, feasible: np.where(feasible, raw, 0.0))


class IgnoresRoom:
    """Scores every host alike and filters nothing: the framework's own room test alone must keep
    it from binding where a workload does not fit."""

    __capabilities__ = PlacementCapabilities()

    def score(self, state, feasible):
        return np.zeros(feasible.shape)

    normalize = staticmethod(min_max_normalize)


class FalselyMonotone(BestFit):
    """Worst-fit (most free first) claiming to be monotone: filling a run is then wrong."""

    __capabilities__ = replace(BestFit.__capabilities__, kernel=None)

    def score(self, state, feasible):
        return -super().score(state, feasible)


def test_the_suite_catches_scores_outside_0_100():
    with pytest.raises(AssertionError, match="outside"):
        check_plugin("unbounded", Unbounded)


def test_the_suite_catches_a_broken_monotone_promise():
    with pytest.raises(AssertionError, match="monotone"):
        check_plugin("falsely-monotone", FalselyMonotone)


def test_masks_only_narrow_so_a_plugin_cannot_bind_where_there_is_no_room():
    check_plugin("ignores-room", IgnoresRoom)


class GroupsWithoutPrepare(BestFit):
    """Declares the group protocol but does not implement it."""

    __capabilities__ = replace(BestFit.__capabilities__, groups=True)


class SquaresItsScores(BestFit):
    """Declares min-max normalisation but squares the min-max scores (still within [0, 100])."""

    def normalize(self, raw, feasible):
        return min_max_normalize(raw, feasible) ** 2 / 100.0


def test_the_suite_catches_a_declared_protocol_left_unimplemented():
    with pytest.raises(AssertionError, match="declares groups but has no prepare"):
        check_plugin("groups-without-prepare", GroupsWithoutPrepare)


def test_the_suite_catches_a_false_min_max_declaration():
    with pytest.raises(AssertionError, match="declares min_max"):
        check_plugin("squares-its-scores", SquaresItsScores)


class SeededWithoutSeed(BestFit):
    """Declares that its draws follow a seed setting it does not have."""

    __capabilities__ = replace(BestFit.__capabilities__, seeded=True)


class SelectsWithoutSelect(BestFit):
    """Declares DeepRM's selection without implementing it."""

    __capabilities__ = replace(BestFit.__capabilities__, stateful=True, selects=True)


def test_the_suite_catches_a_seeded_declaration_without_a_seed():
    with pytest.raises(AssertionError, match="declares seeded but has no int seed"):
        check_plugin("seeded-without-seed", SeededWithoutSeed)


def test_the_suite_holds_a_stateful_plugin_to_its_declarations():
    with pytest.raises(AssertionError, match="declares selects but has no select"):
        check_plugin("selects-without-select", SelectsWithoutSelect)
