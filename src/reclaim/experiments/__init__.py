"""Experiments: a TOML spec -> a grid of runs x seeds, executed locally or on Ray, resumable.

``spec`` parses and expands specs, ``execute`` runs one, ``backends`` runs many, ``store`` keeps
the results and ``runner`` ties them together for ``reclaim experiment run``.
"""

from reclaim.experiments.runner import Outcome, run_experiment
from reclaim.experiments.spec import ExperimentSpec, Run, load_spec, shipped_specs

__all__ = ["ExperimentSpec", "Outcome", "Run", "load_spec", "run_experiment", "shipped_specs"]
