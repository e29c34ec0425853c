"""Compiled evaluation of a LightGBM forest: the trees flattened into arrays and walked by a
``numba.njit(cache=True)`` kernel.

Speed trick (LAVA section 3): the paper's 9 µs median reprediction comes from running the model
inside the scheduler rather than behind a library call. ``booster.predict`` costs tens of µs of
fixed overhead per call (argument checks, a C API round trip, thread start), which dominates
when a scheduler repredicts a handful of VMs; the kernel below walks the same trees with none of
that. ``benchmarks/bench_lifetime.py`` measures both; ``tests/lifetime/test_forest.py`` checks
the kernel against ``booster.predict`` (the plain reference).

Decision semantics copied from LightGBM's ``Tree::NumericalDecision`` / ``CategoricalDecision``
(include/LightGBM/tree.h, v4):

* numerical: a NaN is replaced by 0 unless the node's missing type is NaN; a missing value
  (NaN for missing type NaN, |x| <= 1e-35 for missing type Zero) goes to ``default_left``;
  otherwise ``x <= threshold`` goes left.
* categorical: NaN or a negative value goes right; otherwise left iff ``int(x)`` is in the
  node's set of categories (stored here as a bitset of 32-bit words).

Node encoding: all trees' internal nodes share global arrays; a child ``>= 0`` is a node index,
``< 0`` is leaf ``-(child + 1)`` of the global leaf array. ``roots[t]`` encodes tree t's root the
same way (a single-leaf tree has a negative root).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray

_MISSING = {"None": 0, "Zero": 1, "NaN": 2}
_ZERO = 1e-35  # LightGBM's kZeroThreshold


@dataclass(frozen=True)
class FlatForest:
    """A forest as arrays. roots: (T,) int32; per internal node (M,): feature int32, threshold
    float64, left/right int32, default_left bool, missing int8 (0 None, 1 Zero, 2 NaN), is_cat
    bool, cat_start/cat_len int32 (words of ``cat_bits``); cat_bits: (W,) uint32; leaf_value: (L,)
    float64."""

    roots: NDArray[np.int32]
    feature: NDArray[np.int32]
    threshold: NDArray[np.float64]
    left: NDArray[np.int32]
    right: NDArray[np.int32]
    default_left: NDArray[np.bool_]
    missing: NDArray[np.int8]
    is_cat: NDArray[np.bool_]
    cat_start: NDArray[np.int32]
    cat_len: NDArray[np.int32]
    cat_bits: NDArray[np.uint32]
    leaf_value: NDArray[np.float64]

    @property
    def n_trees(self) -> int:
        return len(self.roots)


def flatten(dump: dict[str, Any]) -> FlatForest:
    """Flatten ``booster.dump_model()`` (all its trees) into a :class:`FlatForest`."""
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    default_left: list[bool] = []
    missing: list[int] = []
    is_cat: list[bool] = []
    cat_start: list[int] = []
    cat_len: list[int] = []
    cat_bits: list[int] = []
    leaves: list[float] = []

    def visit(node: dict[str, Any]) -> int:
        if "leaf_value" in node:
            leaves.append(float(node["leaf_value"]))
            return -len(leaves)  # -(index + 1)
        i = len(feature)
        feature.append(int(node["split_feature"]))
        left.append(0)
        right.append(0)
        default_left.append(bool(node.get("default_left", True)))
        missing.append(_MISSING[node.get("missing_type", "None")])
        if node["decision_type"] == "==":
            cats = [int(c) for c in str(node["threshold"]).split("||")]
            words = np.zeros(max(cats) // 32 + 1, np.uint32)
            for c in cats:
                words[c // 32] |= np.uint32(1 << (c % 32))
            is_cat.append(True)
            threshold.append(0.0)
            cat_start.append(len(cat_bits))
            cat_len.append(len(words))
            cat_bits.extend(int(w) for w in words)
        elif node["decision_type"] == "<=":
            is_cat.append(False)
            threshold.append(float(node["threshold"]))
            cat_start.append(0)
            cat_len.append(0)
        else:
            raise ValueError(f"unsupported LightGBM decision type {node['decision_type']!r}")
        left[i] = visit(node["left_child"])
        right[i] = visit(node["right_child"])
        return i

    roots = [visit(tree["tree_structure"]) for tree in dump["tree_info"]]
    return FlatForest(
        roots=np.asarray(roots, np.int32),
        feature=np.asarray(feature, np.int32),
        threshold=np.asarray(threshold, np.float64),
        left=np.asarray(left, np.int32),
        right=np.asarray(right, np.int32),
        default_left=np.asarray(default_left, bool),
        missing=np.asarray(missing, np.int8),
        is_cat=np.asarray(is_cat, bool),
        cat_start=np.asarray(cat_start, np.int32),
        cat_len=np.asarray(cat_len, np.int32),
        cat_bits=np.asarray(cat_bits, np.uint32),
        leaf_value=np.asarray(leaves, np.float64),
    )


@numba.njit(cache=True)
def predict_raw(
    X,
    rows,
    uptime,
    uptime_col,
    roots,
    feature,
    threshold,
    left,
    right,
    default_left,
    missing,
    is_cat,
    cat_start,
    cat_len,
    cat_bits,
    leaf_value,
    out,
):
    """out[i] = sum of tree outputs for feature row ``X[rows[i]]`` (X: (N, F) float32) with
    column ``uptime_col`` replaced by ``uptime[i]`` (float64); out: (n,) float64."""
    # tree-major order: one tree's nodes stay in cache while every row of the batch walks it;
    # each row still sums its trees in booster order, so results match booster.predict
    for i in range(rows.shape[0]):
        out[i] = 0.0
    for t in range(roots.shape[0]):
        root = roots[t]
        for i in range(rows.shape[0]):
            r = rows[i]
            node = root
            while node >= 0:
                f = feature[node]
                x = uptime[i] if f == uptime_col else np.float64(X[r, f])
                if is_cat[node]:
                    go_left = False
                    if not np.isnan(x) and x >= 0.0:
                        c = np.int64(x)
                        w = c >> 5
                        if w < cat_len[node]:
                            go_left = (cat_bits[cat_start[node] + w] >> np.uint32(c & 31)) & 1 == 1
                else:
                    m = missing[node]
                    if np.isnan(x) and m != 2:
                        x = 0.0
                    if (m == 1 and -_ZERO <= x <= _ZERO) or (m == 2 and np.isnan(x)):
                        go_left = default_left[node]
                    else:
                        go_left = x <= threshold[node]
                node = left[node] if go_left else right[node]
            out[i] += leaf_value[-node - 1]
    return out


def predict_flat(
    forest: FlatForest,
    X: NDArray[np.float32],
    rows: NDArray[np.int64],
    uptime: NDArray[np.float64],
    uptime_col: int,
) -> NDArray[np.float64]:
    """(n,) raw forest score for rows (n,) of X (N, F) float32 at uptime (n,) s."""
    out = np.empty(len(rows), np.float64)
    return predict_raw(
        X,
        rows,
        uptime,
        uptime_col,
        forest.roots,
        forest.feature,
        forest.threshold,
        forest.left,
        forest.right,
        forest.default_left,
        forest.missing,
        forest.is_cat,
        forest.cat_start,
        forest.cat_len,
        forest.cat_bits,
        forest.leaf_value,
        out,
    )
