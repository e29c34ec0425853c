"""The core/elastic rule on hand-made application layouts."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.errors import ReclaimError
from reclaim.workload.roles import RoleRule


def layout(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def test_elastic_apps_keep_their_first_components_core_and_small_apps_stay_rigid():
    core, elastic = RoleRule(elastic_share=1.0).assign(
        layout([1, 3, 4, 6]), np.random.default_rng(0)
    )
    assert elastic.tolist() == [False, False, True, True]
    assert core.tolist() == [True] * 4 + [True] * 3 + [False] + [True] * 3 + [False] * 3


def test_share_is_exact_among_apps_large_enough():
    sizes = np.random.default_rng(1).integers(1, 50, size=10_000)
    indptr = layout(sizes)
    core, elastic = RoleRule(0.6, 3).assign(indptr, np.random.default_rng(2))
    assert elastic.sum() == 6_000 and np.all(sizes[elastic] > 3)
    starts = indptr[:-1]
    for a in np.flatnonzero(elastic)[:50]:
        assert (
            core[starts[a] : starts[a] + 3].all() and not core[starts[a] + 3 : indptr[a + 1]].any()
        )
    rigid = np.repeat(~elastic, sizes)
    assert core[rigid].all()
    assert core.sum() == (~elastic * sizes).sum() + 3 * elastic.sum()


def test_rule_is_configurable_and_falls_short_when_too_few_apps_qualify():
    core, elastic = RoleRule(0.5, 1).assign(layout([2, 2, 2, 2]), np.random.default_rng(0))
    assert elastic.sum() == 2 and core.sum() == 4 + 2
    _, elastic = RoleRule(1.0, 5).assign(layout([2, 6, 9]), np.random.default_rng(0))
    assert elastic.tolist() == [False, True, True]


def test_same_generator_state_same_roles():
    indptr = layout(np.arange(1, 200))
    a = RoleRule().assign(indptr, np.random.default_rng(7))
    b = RoleRule().assign(indptr, np.random.default_rng(7))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("rule", [RoleRule(elastic_share=1.5), RoleRule(core_per_elastic_app=0)])
def test_bad_settings_are_refused(rule):
    with pytest.raises(ReclaimError):
        rule.assign(layout([5]), np.random.default_rng(0))
