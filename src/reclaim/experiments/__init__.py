"""Experiments: a TOML spec -> a grid of runs x seeds, executed locally or on Ray, resumable.

``spec`` reads specs, ``kind`` holds what every experiment kind offers (the kinds themselves live
with their systems and are found by name), ``backends`` runs many runs, ``result_store`` keeps
the results and ``runner`` ties them together for ``reclaim experiment run``.
"""

from reclaim.experiments.kind import ExperimentKind, experiment_kind
from reclaim.experiments.runner import Outcome, run_experiment
from reclaim.experiments.spec import ScaledSpec, load_spec, shipped_specs

__all__ = [
    "ExperimentKind",
    "Outcome",
    "ScaledSpec",
    "experiment_kind",
    "load_spec",
    "run_experiment",
    "shipped_specs",
]
