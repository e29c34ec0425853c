"""Equivalence classes of running workloads: TVW-RL's run-time logic (its Algorithm 1, line 8).

Before each decision the paper predicts the classes of the workloads already running again, from
what has been seen of them, so a workload's label in the state can change as it runs.
:class:`RunningClasses` is fitted on workloads drawn from the training pools: classes of their
full series (``rl.classes``: temporal features + K-Means, or DTW + K-Medoids, k by silhouette),
then one EC classifier from their partial usage at every age 1..A (steps seen since the start).
Called on a sequence it returns each workload's class by age, an (n, A) table that the
environment (``rl.env``) indexes by the workloads' ages at every decision: the classifier runs
once per sequence, never per step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.errors import ReclaimError
from reclaim.rl.classes import (
    INITIALISATIONS,
    classifier,
    equivalence_classes,
    features_by_age,
)
from reclaim.tvw.pool import LEGACY_SCALE, Pool
from reclaim.tvw.scenario import ScenarioSpec, Sequence, load_pools, sample_sequence

DISTANCES = ("temporal", "dtw")
#: --classes: one class (none), or the distance of classes re-predicted as workloads run.
CLASSES = ("none", *DISTANCES)


def check_classes(classes: str) -> str:
    """``classes`` if it is one of CLASSES; else a one-line error."""
    if classes not in CLASSES:
        choices = f"{', '.join(CLASSES[:-1])} or {CLASSES[-1]}"
        raise ReclaimError(f"--classes must be {choices}, not {classes!r}")
    return classes


@dataclass
class RunningClasses:
    """Settings only; :meth:`fit` learns ``classes_`` (G) and ``model_``.

    distance: temporal or dtw; workloads: drawn per pool to fit on; ages: A, the longest age the
    classifier reads (an older workload keeps its class at age A); seed: the draw, the clustering
    and the classifier (same seed and pools, same labeller); initialisations: of the clustering,
    per k.

    The paper's classifier also reads the request's metadata (limits, priority); our stores carry
    none, so partial usage is its only input: at age 1 the usage at arrival, what a waiting
    workload shows (Best-Fit's ``current`` view).
    """

    distance: str = "temporal"
    workloads: int = 100
    ages: int = 20
    seed: int = 0
    initialisations: int = INITIALISATIONS

    def fit(self, pools: list[Pool], spec: ScenarioSpec) -> RunningClasses:
        """Classes of ``workloads`` drawn from each pool as ``spec`` draws them, the classifier."""
        if self.distance not in DISTANCES:
            raise ReclaimError(f"classes must be none, temporal or dtw, not {self.distance!r}")
        drawn = []
        for k, pool in enumerate(pools):
            rng = np.random.default_rng([self.seed, k])
            # the load sets only the arrivals, which the classes do not read
            usage = sample_sequence(pool, replace(spec, jobs=self.workloads), 1.0, rng, rng).usage
            drawn += [usage[i] for i in range(len(usage))]
        series = GroupedArray.from_series(drawn)
        with _one_thread():
            found = equivalence_classes(
                series, self.distance, self.seed, n_init=self.initialisations
            )
            features = features_by_age(series, self.ages)
            lived = series.lengths >= np.arange(1, self.ages + 1)[:, None]  # (A, n) ages reached
            labels = np.broadcast_to(found.labels, lived.shape)
            self.model_ = classifier(features[lived], labels[lived], self.seed)
        self.classes_ = found.k
        self.stores_ = [str(Path(pool.report.store).resolve()) for pool in pools]
        self.spec_ = spec
        self._last = (None, None)
        return self

    def __call__(self, sequence: Sequence) -> NDArray[np.int64]:
        """(n, A) the class (1..G) of each workload of ``sequence`` after 1..A steps seen."""
        # Speed trick: training resets every copy of the env on one sequence, so the table of the
        # last sequence is kept (read only) and the classifier runs once per sequence.
        if self._last[0] is not sequence:
            features = features_by_age(sequence.usage, self.ages)
            with _one_thread():
                labels = self.model_.predict(features.reshape(-1, features.shape[2]))
            table = np.ascontiguousarray(labels.reshape(self.ages, len(sequence)).T) + 1
            self._last = (sequence, table)
        return self._last[1]

    def settings(self) -> dict:
        """What :meth:`rebuild` needs, JSON (a trained policy saves it): settings, stores, spec."""
        return asdict(self) | {"stores": self.stores_, "spec": asdict(self.spec_)}

    @classmethod
    def rebuild(cls, settings: dict) -> RunningClasses:
        """The labeller :meth:`settings` describes, fitted again on its stores (deterministic)."""
        params = labeller_settings(settings)
        # a spec saved before the scale was recorded quantised as the legacy rule did
        saved = {"scale": LEGACY_SCALE} | params.pop("spec")
        stores, spec = params.pop("stores"), ScenarioSpec(**saved)
        return cls(**params).fit(load_pools(stores, spec), spec)


def labeller_settings(settings: dict) -> dict:
    """A labeller's saved settings with what older ones left out: one saved before its
    initialisations were recorded clustered with 10, before the noise settings without noise."""
    out = {"initialisations": 10} | settings
    if "spec" in out:
        out["spec"] = {"background": 0, "jitter": 0} | out["spec"]
    return out


def _one_thread():
    """BLAS and OpenMP on one thread: the problems are small, and on a busy 2-core machine the
    thread pools made a fit 2x and a table 8x slower."""
    return _controller().limit(limits=1)


@cache
def _controller():
    import sklearn.cluster  # noqa: F401  loads the OpenMP runtime K-Means uses, for the scan
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()  # it scans the loaded libraries, which costs ms: once
