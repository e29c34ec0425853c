"""A tiny experiment: about a second per run on the shipped sample, so sweeps fit in a test."""

from pathlib import Path

TINY = """
name = "tiny"
description = "three cheap runs"
[workload]
elastic_share = 0.6
[scale.tiny]
apps = 40
hosts = "2x32c128g"
seeds = [2]
[scale.other]
apps = 30
hosts = "2x32c128g"
seeds = [2]
[[runs]]
controller = "reservation"
[[runs]]
controller = "pessimistic"
forecaster = "naive"
controller_params = { k1 = [0.05, 0.5] }
"""


def write_spec(folder: Path, text: str = TINY, name: str = "spec.toml") -> Path:
    """A spec file in ``folder``. (A helper, not a conftest fixture: tests/conftest.py is
    imported by name elsewhere, and a second conftest module would shadow it.)"""
    path = folder / name
    path.write_text(text)
    return path
