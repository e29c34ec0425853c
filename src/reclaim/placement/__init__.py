"""Placement: the plugin framework; plugins are built by name through the registry."""

from reclaim.placement.framework import CycleState, Placer, build_placer

__all__ = ["CycleState", "Placer", "build_placer"]
