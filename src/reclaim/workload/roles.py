"""Roles of components: core (the application fails without them) or elastic (it can lose them).

The traces say nothing about roles, so a rule assigns them, after the paper: its workload mixes
elastic applications (Spark-like: a few core components, the driver and its helpers, and any number
of elastic executors) with rigid ones (TensorFlow-like: every component is needed). Section 5.1
uses 60% elastic and 40% rigid applications, and every Spark template there has 3 core components;
those are the defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from reclaim.errors import ReclaimError


@dataclass
class RoleRule:
    """Which applications are elastic and how many core components they keep.

    elastic_share: fraction of all applications made elastic, chosen at random among those with
        more than ``core_per_elastic_app`` components (an application that small has nothing
        elastic to give). If too few qualify, all that do are elastic and the share falls short.
    core_per_elastic_app: the first this many components of an elastic application are core, the
        rest elastic. Rigid applications are all core.
    """

    elastic_share: float = 0.6
    core_per_elastic_app: int = 3

    def assign(
        self, comp_indptr: NDArray[np.int64], rng: np.random.Generator
    ) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """Roles for applications laid out by ``comp_indptr`` (A+1,).

        Returns core (C,) bool, core components first within each application, and elastic (A,)
        bool, the applications made elastic.
        """
        if not 0.0 <= self.elastic_share <= 1.0:
            raise ReclaimError(f"elastic_share must be in [0, 1], got {self.elastic_share}")
        if self.core_per_elastic_app < 1:
            raise ReclaimError("core_per_elastic_app must be at least 1: an app needs a core")
        sizes = np.diff(comp_indptr)
        n_apps, k = len(sizes), self.core_per_elastic_app
        candidates = np.flatnonzero(sizes > k)
        n_elastic = min(round(self.elastic_share * n_apps), len(candidates))
        chosen = np.sort(rng.choice(candidates, size=n_elastic, replace=False))
        elastic_app = np.zeros(n_apps, dtype=bool)
        elastic_app[chosen] = True
        # Mark +1 where an app's elastic run starts and -1 where it ends; the running sum is 1
        # exactly on elastic components. Runs of different apps never share an endpoint, and int8
        # keeps the temporaries at one byte per component (~1.4e8 components at paper scale).
        marks = np.zeros(comp_indptr[-1] + 1, dtype=np.int8)
        marks[comp_indptr[chosen] + k] = 1
        marks[comp_indptr[chosen + 1]] = -1
        core = np.cumsum(marks[:-1], dtype=np.int8) == 0
        return core, elastic_app
