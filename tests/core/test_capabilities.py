"""Declared capabilities: a closed set of names per kind, read through one function."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim import registry
from reclaim.core.capabilities import (
    ControllerCapabilities,
    ForecasterCapabilities,
    PlacementCapabilities,
    ProvisionerCapabilities,
    capabilities,
)
from reclaim.core.control import control_step, grace_of, in_grace
from reclaim.errors import ReclaimError
from reclaim.placement import build_placer
from reclaim.placement.framework import Placer, WeightedPlugin
from reclaim.placement.plugins.best_fit import BestFit


def test_a_misspelt_capability_is_an_error_where_it_is_declared():
    with pytest.raises(TypeError, match="monotne"):
        PlacementCapabilities(monotne=True)
    with pytest.raises(TypeError, match="needs_forcast"):
        ControllerCapabilities(needs_forcast=False)


def test_a_misspelt_capability_is_an_error_where_it_is_read():
    caps = capabilities(BestFit(), PlacementCapabilities)
    with pytest.raises(AttributeError):
        _ = caps.monotne


def test_capabilities_cannot_change_after_they_are_declared():
    with pytest.raises(AttributeError):
        capabilities(BestFit(), PlacementCapabilities).monotone = False  # type: ignore[misc]


class LooseFlag:
    """The old way: a loose class attribute, which a misspelling turned into a silent default."""

    needs_forecast = False

    def decide(self, view, forecast):
        raise AssertionError("never reached")


def test_a_component_that_declares_nothing_fails_loudly_in_the_loops():
    with pytest.raises(ReclaimError, match="LooseFlag declares no capabilities"):
        capabilities(LooseFlag(), ControllerCapabilities)
    view = type("V", (), {"running": np.arange(2, dtype=np.int64)})()
    with pytest.raises(ReclaimError, match="declares no capabilities"):
        control_step(view, LooseFlag(), forecast=None, actuator=None)
    with pytest.raises(ReclaimError, match="declares no capabilities"):
        Placer([WeightedPlugin(LooseFlag())]).monotone  # noqa: B018


def test_capabilities_of_another_kind_are_refused():
    with pytest.raises(ReclaimError, match="declares PlacementCapabilities, where Controller"):
        capabilities(BestFit(), ControllerCapabilities)


@pytest.mark.parametrize(
    ("kind", "caps"),
    [
        ("controller", ControllerCapabilities),
        ("defrag", ControllerCapabilities),
        ("forecaster", ForecasterCapabilities),
        ("placement", PlacementCapabilities),
        ("provisioner", ProvisionerCapabilities),
    ],
)
def test_every_registered_component_declares_the_capabilities_of_its_kind(kind, caps):
    for name in registry.names(kind):
        assert isinstance(capabilities(registry.build(kind, name), caps), caps), name


def test_capabilities_that_follow_a_setting():
    shaper = registry.build("controller", "pessimistic", grace_s=30.0, soft_memory_limits=True)
    caps = capabilities(shaper, ControllerCapabilities)
    assert caps.needs_forecast and caps.grace_s == 30.0 and caps.soft_memory_limits
    assert capabilities(registry.build("controller", "reservation"), ControllerCapabilities) == (
        ControllerCapabilities(needs_forecast=False)
    )
    oracle = registry.build("forecaster", "conformal", base="oracle")
    assert capabilities(oracle, ForecasterCapabilities).needs_future
    assert not capabilities(
        registry.build("forecaster", "conformal"), ForecasterCapabilities
    ).needs_future
    dra = registry.build("provisioner", "dra", mode="lend")
    assert not capabilities(dra, ProvisionerCapabilities).redistributes


def test_the_grace_rule():
    start = np.array([0.0, 400.0, 599.0, 600.0])
    assert in_grace(1000.0, start, 600.0).tolist() == [False, False, True, True]
    assert grace_of(registry.build("controller", "optimistic", grace_s=60.0)) == 60.0
    assert grace_of(registry.build("controller", "reservation")) == 0.0


@pytest.mark.parametrize(
    ("kind", "misspelt"),
    [
        (PlacementCapabilities, "seded"),
        (PlacementCapabilities, "observe"),
        (PlacementCapabilities, "select"),
        (ControllerCapabilities, "report"),
        (ForecasterCapabilities, "report"),
    ],
)
def test_the_declarations_that_replaced_probing_are_closed_names_too(kind, misspelt):
    with pytest.raises(TypeError, match=misspelt):
        kind(**{misspelt: True})


def test_a_misspelt_capability_asked_of_a_placer_is_an_error():
    placer = build_placer("random-fit")
    assert placer.declaring("seeded") == [placer.plugins[0].plugin]
    with pytest.raises(AttributeError, match="seded"):
        placer.declaring("seded")


def test_who_declares_what_the_loops_once_probed_for():
    def placement(name):
        return capabilities(registry.build("placement", name), PlacementCapabilities)

    assert placement("random-fit").seeded and not placement("best-fit").seeded
    assert placement("deeprm").selects and not placement("deeprm").observes
    assert placement("tvw-rl").observes and not placement("tvw-rl").selects
    conformal = registry.build("forecaster", "conformal", base="naive")
    assert capabilities(conformal, ForecasterCapabilities).reports
    naive = registry.build("forecaster", "naive")
    assert not capabilities(naive, ForecasterCapabilities).reports
    fixed = registry.build("controller", "pessimistic")
    adaptive = registry.build("controller", "pessimistic", failure_target=0.05)
    assert not capabilities(fixed, ControllerCapabilities).reports
    assert capabilities(adaptive, ControllerCapabilities).reports
