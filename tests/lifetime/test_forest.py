"""The compiled forest kernel against booster.predict (categorical splits, missing values)."""

from __future__ import annotations

import numpy as np
import polars as pl

from reclaim.lifetime._forest import flatten, predict_flat
from reclaim.lifetime.model import LifetimeModel
from reclaim.lifetime.vms import VmTable


def _table(n: int, rng: np.random.Generator, n_apps: int = 40) -> VmTable:
    """Lifetimes driven by a 40-valued category (bitsets over two 32-bit words), a category with
    nulls, a numeric column with NaN and a numeric one with many zeros."""
    app = rng.integers(0, n_apps, n)
    role = np.where(rng.random(n) < 0.5, "CN", "HN")
    cpu = rng.choice([1.0, 2.0, 4.0, 8.0, np.nan], n)
    gpu = np.where(rng.random(n) < 0.5, 0.0, rng.random(n))
    scale = np.exp((app % 7) + (role == "HN") * 2 + np.nan_to_num(cpu) / 4 + gpu)
    life = rng.exponential(scale * 600.0)
    arrival = np.sort(rng.uniform(0, 30 * 86400, n))
    exit_ = arrival + life
    end = 30 * 86400.0
    right = exit_ > end
    feats = pl.DataFrame(
        {
            "job_id": [f"app_{a}" for a in app],
            "category": pl.Series([None if i % 17 == 0 else r for i, r in enumerate(role)]),
            "cpu": cpu.astype(np.float32),
            "gpu": gpu.astype(np.float32),
        }
    )
    return VmTable(
        id=np.array([f"vm{i}" for i in range(n)]),
        family=role,
        arrival=arrival,
        exit=np.where(right, np.inf, exit_),
        left_censored=np.zeros(n, bool),
        right_censored=right,
        request=np.zeros((n, 3), np.float32),
        features=feats,
        window=(0.0, end),
    )


def test_kernel_matches_booster_predict():
    rng = np.random.default_rng(1)
    vms = _table(3000, rng)
    model = LifetimeModel(n_estimators=40, num_leaves=15, min_child_samples=5).fit(vms)
    dump = model.booster_.dump_model()
    kinds = {n["decision_type"] for t in dump["tree_info"] for n in _nodes(t["tree_structure"])}
    assert kinds == {"<=", "=="}  # both split kinds exercised
    # score a different table: unseen apps (-> missing), nulls, NaN
    other = _table(2000, np.random.default_rng(2), n_apps=50)
    pred = model.predictor(other)
    rows = rng.integers(0, len(other), 4000)
    uptime = rng.exponential(86400.0, 4000)
    uptime[::5] = 0.0
    fast = pred.remaining(rows, uptime)
    ref = pred.remaining_reference(rows, uptime)
    np.testing.assert_allclose(fast, ref, rtol=1e-5, atol=1e-9)
    assert np.isnan(pred.X[:, 0]).any()  # unseen app codes are missing


def test_flatten_single_leaf_tree_and_bitset():
    dump = {
        "tree_info": [
            {"tree_structure": {"leaf_value": 1.5}},
            {
                "tree_structure": {
                    "split_feature": 0,
                    "threshold": "3||33",
                    "decision_type": "==",
                    "default_left": False,
                    "missing_type": "None",
                    "left_child": {"leaf_value": 10.0},
                    "right_child": {"leaf_value": -10.0},
                }
            },
        ]
    }
    forest = flatten(dump)
    assert forest.roots[0] < 0 and forest.cat_len[0] == 2
    X = np.array([[3], [33], [4], [np.nan], [-1]], np.float32)
    out = predict_flat(forest, X, np.arange(5), np.zeros(5), uptime_col=1)
    np.testing.assert_array_equal(out, [11.5, 11.5, -8.5, -8.5, -8.5])


def _nodes(node):
    if "leaf_value" in node:
        return []
    return [node, *_nodes(node["left_child"]), *_nodes(node["right_child"])]
