from __future__ import annotations

import pytest

from reclaim import registry
from reclaim.errors import ReclaimError
from reclaim.placement import plugins  # noqa: F401
from reclaim.shaping import reservation  # noqa: F401


def test_builtins_are_registered_by_name():
    assert {"best-fit", "first-fit"} <= set(registry.names("placement"))
    assert "reservation" in registry.names("controller")
    assert registry.build("placement", "best-fit").monotone


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(ReclaimError, match="unknown placement 'worst-fit'.*best-fit"):
        registry.build("placement", "worst-fit")


def test_registering_two_factories_under_one_name_fails():
    @registry.register("testing-kind", "x")
    class A:
        pass

    with pytest.raises(ValueError, match="twice"):

        @registry.register("testing-kind", "x")
        class B:
            pass
