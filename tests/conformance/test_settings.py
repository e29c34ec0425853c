"""Every registered component, of every kind, keeps scikit-learn's settings promise."""

from __future__ import annotations

import pytest

from reclaim import registry
from reclaim.testing.settings import check_settings

COMPONENTS = [(kind, name) for kind in registry.KINDS for name in registry.names(kind)]


@pytest.mark.parametrize(("kind", "name"), COMPONENTS)
def test_registered_component_keeps_the_settings_promise(kind, name):
    check_settings(kind, name)


class StoresAConvertedSetting(registry.factory("controller", "reservation")):
    """A constructor that rounds what it is given, which clone cannot reproduce."""

    def __init__(self, k1=1.0):
        self.k1 = round(k1, 3)


def test_the_suite_catches_a_constructor_that_converts():
    with pytest.raises(RuntimeError, match="Cannot clone"):
        check_settings("controller", "converting", lambda: StoresAConvertedSetting(k1=0.25))
