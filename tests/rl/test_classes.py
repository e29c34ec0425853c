"""Equivalence classes: features, DTW, K-Medoids, silhouette k selection on planted clusters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from reclaim.core.grouped import GroupedArray
from reclaim.errors import ReclaimError
from reclaim.rl import classes


def _planted(k: int, per: int, rng) -> tuple[GroupedArray, np.ndarray]:
    """``k`` usage shapes (phase-shifted square waves, ramps, flat), ``per`` noisy copies each."""
    t = np.arange(60)
    shapes = [
        1 + 4 * (np.sin(2 * np.pi * t / 20 + c * np.pi / 2) > 0)
        if c < 2
        else 1 + (t * (c - 1)) % 6
        if c < 4
        else np.full(60, c % 6 + 1)
        for c in range(k)
    ]
    series, truth = [], []
    for c, shape in enumerate(shapes):
        for _ in range(per):
            noisy = np.clip(shape + rng.integers(-1, 2, 60) * (rng.random(60) < 0.1), 1, 6)
            series.append(np.stack([noisy, 7 - noisy], axis=1).astype(np.int16))
            truth.append(c)
    return GroupedArray.from_series(series), np.array(truth)


def _agree(a, b) -> bool:
    """Same partition up to renaming."""
    pairs = set(zip(a.tolist(), b.tolist(), strict=True))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def test_silhouette_finds_planted_blobs():
    rng = np.random.default_rng(0)
    centres = rng.random((5, 3)) * 10
    truth = np.repeat(np.arange(5), 20)
    points = centres[truth] + rng.normal(0, 0.05, (100, 3))
    found = classes.select_k(points, None, seed=0, n_init=3)
    assert found.k == 5 and _agree(found.labels, truth)
    assert set(found.silhouette) == set(range(3, 16))


def test_dtw_and_k_medoids_find_planted_shapes():
    series, truth = _planted(4, 6, np.random.default_rng(1))
    found = classes.equivalence_classes(series, "dtw", seed=0, ks=range(3, 8))
    assert found.k == 4 and _agree(found.labels, truth)


def test_temporal_features_are_normalised_and_separate_shapes():
    series, truth = _planted(4, 6, np.random.default_rng(2))
    features = classes.temporal_features(series)
    assert features.shape == (24, 12) and features.min() >= 0 and features.max() <= 1
    found = classes.equivalence_classes(series, "temporal", seed=0, ks=range(3, 8))
    assert found.k >= 3


@given(
    st.lists(st.integers(0, 6), min_size=1, max_size=8),
    st.lists(st.integers(0, 6), min_size=1, max_size=8),
)
def test_dtw_kernel_matches_reference(a, b):
    a, b = np.array(a, float), np.array(b, float)
    assert classes.dtw(a, b) == pytest.approx(classes.dtw_reference(a, b))


def test_effective_gain_rewards_classes_that_predict_better():
    series, truth = _planted(4, 6, np.random.default_rng(3))
    eg, f = classes.effective_gain(series, truth)
    assert eg >= 0 and 0 <= f <= 1
    one, _ = classes.effective_gain(series, np.zeros(len(truth), np.int64))
    assert one == 0.0  # one class is the EC-agnostic model itself


def test_classifier_labels_running_workloads_from_partial_usage():
    series, truth = _planted(4, 6, np.random.default_rng(4))
    features = classes.features_by_age(series, 30)[-1]
    model = classes.classifier(features, truth)
    assert (model.predict(features) == truth).mean() > 0.9


def test_too_few_workloads_and_bad_distance_fail_in_one_line():
    with pytest.raises(ReclaimError, match="too few"):
        classes.select_k(np.zeros((3, 2)), None, seed=0)
    series, _ = _planted(3, 2, np.random.default_rng(0))
    with pytest.raises(ReclaimError, match="distance"):
        classes.equivalence_classes(series, "cosine")


def test_compare_distances_gives_the_table_one_rows():
    series, _ = _planted(3, 5, np.random.default_rng(5))
    rows = classes.compare_distances(series, seed=0, ks=range(3, 5))
    assert [r["distance"] for r in rows] == ["aggregate", "temporal", "dtw"]
    assert all(3 <= r["k"] <= 4 and r["eg_pct"] >= 0 and 0 <= r["f"] <= 1 for r in rows)


def test_sample_records_cuts_long_records():
    series, _ = _planted(3, 5, np.random.default_rng(6))
    cut = classes.sample_records(series, 6, 40, np.random.default_rng(0))
    assert len(cut) == 6 and (cut.lengths == 40).all()
    with pytest.raises(ReclaimError, match="fewer than 4"):
        classes.sample_records(series, 6, 61, np.random.default_rng(0))
