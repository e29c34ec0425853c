"""Decisions: the columns a controller fills, their dtypes and the checks on their lengths."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.types import Decisions
from reclaim.errors import ReclaimError


def test_every_kind_of_row_counts_and_keeps_its_dtype():
    d = Decisions(
        [0, 1],
        np.ones((2, 2)),
        [5],
        bind_rows=[7],
        bind_hosts=[3],
        migrate_rows=[8, 9],
        migrate_hosts=[1, -1],
        lend_rows=[2],
        lend_amount=[[0.25, 1.0 / 3.0]],
    )
    assert len(d) == 2 + 1 + 1 + 2 + 1
    assert d.resize_limit.dtype == np.float32 and d.bind_hosts.dtype == np.int32
    # lent amounts feed float64 ledgers: a float32 round trip would change them
    assert d.lend_amount.dtype == np.float64 and d.lend_amount[0, 1] == 1.0 / 3.0


def test_an_empty_decision_has_no_rows_of_any_kind():
    d = Decisions()
    assert len(d) == 0 and d.lend_amount.shape == (0, 2) and d.migrate_hosts.shape == (0,)


def test_a_carrier_refuses_the_kinds_of_row_it_cannot_carry_out():
    both = Decisions([1], [[1.0, 1.0]], lend_rows=[2], lend_amount=[[0.5, 0.0]])
    both.require(("resize", "lend"), "anyone")
    with pytest.raises(ReclaimError, match="the simulator carries out resize and evict .*not lend"):
        both.require(("resize", "evict"), "the simulator")


def test_one_host_is_given_to_every_row():
    d = Decisions(migrate_rows=[4, 5, 6], migrate_hosts=-1)
    assert d.migrate_hosts.tolist() == [-1, -1, -1]


@pytest.mark.parametrize(
    ("kwargs", "what"),
    [
        ({"resize_rows": [1, 2], "resize_limit": np.ones((1, 2))}, "resize"),
        ({"bind_rows": [1, 2, 3], "bind_hosts": [0, 1]}, "bind"),
        ({"bind_rows": [1, 2, 3], "bind_hosts": [5]}, "bind"),  # only a scalar goes with all
        ({"migrate_rows": [1], "migrate_hosts": [0, 1]}, "migrate"),
        ({"lend_rows": [1, 2], "lend_amount": np.ones((3, 2))}, "lend"),
    ],
)
def test_rows_and_their_values_must_match_in_length(kwargs, what):
    with pytest.raises(ValueError, match=what):
        Decisions(**kwargs)
