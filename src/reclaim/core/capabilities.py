"""Capabilities: what a component needs and what it offers, declared once (scikit-learn's tags).

A component answers ``__capabilities__`` with the frozen dataclass of its kind: a class attribute
when the answer is fixed, a property when it follows a setting (a shaper's ``grace_s``). The loops,
the placement framework and the conformance suites read it through :func:`capabilities` and
nowhere else. Each dataclass is a closed set of names, so a misspelt capability fails where it is
written (``TypeError``: unexpected keyword) or read (``AttributeError``), and a component that
declares nothing fails when it is first used, instead of silently taking a default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from reclaim.errors import ReclaimError


@dataclass(frozen=True, slots=True)
class ControllerCapabilities:
    """What a policy on the control step needs (shaping controllers, defragmenters, lenders).

    needs_forecast: the step forecasts the running rows for it (else its forecast is None).
    grace_s: seconds a new workload keeps its reservation: it is neither forecast nor shaped
    before (the core's grace rule, :func:`reclaim.core.control.due_rows`); None for a policy
    without a grace period of its own (one that shapes nothing).
    soft_memory_limits: its memory limits throttle instead of killing while the host has room.
    reports: it adds figures of its own to a run's summary (:class:`Reports`).
    """

    needs_forecast: bool = True
    grace_s: float | None = None
    soft_memory_limits: bool = False
    reports: bool = False


@dataclass(frozen=True, slots=True)
class ForecasterCapabilities:
    """needs_future: the forecaster must be handed the true next value (the oracle).
    spread: its forecasts carry an uncertainty (False: std is always 0, so K2 changes nothing).
    reports: it adds figures of its own to a run's summary (:class:`Reports`)."""

    needs_future: bool = False
    spread: bool = True
    reports: bool = False


@dataclass(frozen=True, slots=True)
class PlacementCapabilities:
    """What a placement plugin promises and which of the framework's small protocols it offers.

    monotone: a host's score never falls as load is added to it (the framework may then fill the
    best host with a run of identical workloads in one step).
    needs_view: it scores from ``CycleState.view``/``items`` (a pool's state).
    filters: its ``filter`` may rule hosts out (False: the framework does not call it).
    groups: its ``prepare(state)`` labels rows to be bound to one host together.
    view_hooks: its ``on_bind``/``on_exit`` keep per-host state of its own.
    min_max: its ``normalize`` is the framework's min-max map to [0, 100].
    kernel: a numba ``kernel(capacity, free, req, out)`` writing one request's raw scores.
    group_kernel: a numba kernel binding a whole batch as the reference path does (see
    ``placement.plugins.corp_packing.corp_group_kernel``).
    stateful: it places only inside a loop of its own that feeds it state (the learned TVW
    placers), so the generic conformance checks cannot drive it.
    seeded: its draws follow its ``seed`` setting (an int), which a run sets to the run's seed.
    observes: it scores from the observation of the loop that drives it, which that loop hands
    it as its ``observe`` (a callable returning the current (D,) observation; TVW-RL).
    selects: its ``select(obs, mask)`` picks which waiting workload is placed next (DeepRM).
    """

    monotone: bool = False
    needs_view: bool = False
    filters: bool = False
    groups: bool = False
    view_hooks: bool = False
    min_max: bool = True
    kernel: Callable | None = None
    group_kernel: Callable | None = None
    stateful: bool = False
    seeded: bool = False
    observes: bool = False
    selects: bool = False


@dataclass(frozen=True, slots=True)
class ProvisionerCapabilities:
    """redistributes: instead of lending, the provisioner's ``demand`` re-splits the VMs'
    capacity every window (DRA as published)."""

    redistributes: bool = False


class Reports(Protocol):
    """A component declaring ``reports``: its figures for the run's summary (names not taken by
    the summary's own), read once the run is over."""

    def run_summary(self) -> dict[str, float]: ...


C = TypeVar("C")


def capabilities(component: Any, kind: type[C]) -> C:
    """The ``kind`` capabilities ``component`` declares; an error names a component that declares
    none, or declares those of another kind."""
    name = type(component).__name__
    try:
        declared = component.__capabilities__
    except AttributeError:
        raise ReclaimError(
            f"{name} declares no capabilities: give it __capabilities__ = {kind.__name__}(...)"
        ) from None
    if not isinstance(declared, kind):
        raise ReclaimError(
            f"{name} declares {type(declared).__name__}, where {kind.__name__} is needed"
        )
    return declared
