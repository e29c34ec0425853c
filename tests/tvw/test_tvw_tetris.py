"""Tetris as Tetris defines it: the score over all waiting workloads, its remaining-time term,
and the queue discipline (a workload that fits nowhere is passed)."""

from __future__ import annotations

import numpy as np
from hand_sequences import sequence

from reclaim.tvw.evaluate import Policy, placement_metrics, run_policy
from reclaim.tvw.replay import ReplayResult
from reclaim.tvw.scenario import ScenarioSpec
from reclaim.tvw.tetris import run_tetris, scores


def test_score_is_alignment_minus_scaled_remaining_work():
    capacity = np.full((2, 2), 4.0)
    free = np.array([[4.0, 4.0], [2.0, 0.0]])
    request = np.array([[2, 2], [1, 1]], np.float32)
    duration = np.array([1, 4])
    feasible = np.array([[True, False], [True, True]])
    s = scores(capacity, free, request, duration, feasible)
    align = np.array([[1.0, 0.0], [0.5, 0.125]])
    work = np.array([1.0, 2.0])
    eps = align[feasible].mean() / work.mean()
    expect = np.where(feasible, align - eps * work[:, None], -np.inf)
    assert np.allclose(s, expect) and np.isneginf(s[0, 1])
    # m = 0: alignment alone (the remaining-time term off)
    assert np.allclose(
        scores(capacity, free, request, duration, feasible, m=0.0)[feasible], align[feasible]
    )


def test_less_remaining_work_goes_first_and_a_blocked_workload_is_passed():
    # One machine of 4 units. At step 0: 0 (4, 4) x 3 starts (alone). At step 1: 1 (4, 4) x 2
    # cannot start, 2 (1, 1) x 1 neither (0 fills the machine); at step 3 the machine is free:
    # 2 (less work) starts before 1, and 1 only once 2 has left (they do not fit together).
    seq = sequence([[[4, 4]] * 3, [[4, 4]] * 2, [[1, 1]]], [0, 1, 1])
    spec = ScenarioSpec(machines=1, units=4, max_units=4)
    result = run_tetris(seq, spec)
    assert result.start.tolist() == [0, 4, 3] and (result.host == 0).all()


def test_utilisation_counts_usage_up_to_capacity():
    usage = np.array([[[6, 2]], [[2, 2]]], np.int32)  # (T, H, R): 6 units asked of 4 at step 0
    result = ReplayResult(
        usage, np.ones((2, 1), bool), np.zeros(1, np.int32), np.zeros(1), np.zeros(1, np.int64)
    )
    m = placement_metrics(result, np.array([4, 4]), 300.0)
    assert m["util_cpu"] == (4 + 2) / (2 * 4) and m["util_mem"] == 4 / 8
    assert m["overshoot_cpu"] == 100 * 2 / (2 * 1 * 4)  # the excess, reported on its own


def test_every_policy_passes_a_workload_that_fits_nowhere():
    seq = sequence([[[4, 4]] * 3, [[4, 4]] * 2, [[1, 1]]], [0, 1, 1])
    spec = ScenarioSpec(machines=1, units=5, max_units=4)
    for name in ("best-fit", "first-fit", "tetris"):
        result = run_policy(seq, Policy.parse(name), spec)
        assert result.start[2] == 1, name  # 2 (1, 1) starts beside 0, passing 1
