"""Placement: the plugin framework and its built-in plugins (imported here to register them)."""

from reclaim.placement import plugins  # noqa: F401
from reclaim.placement.framework import CycleState, Placer, build_placer

__all__ = ["CycleState", "Placer", "build_placer"]
