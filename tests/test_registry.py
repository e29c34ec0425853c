from __future__ import annotations

import pytest

from reclaim import registry
from reclaim.core.capabilities import PlacementCapabilities, capabilities
from reclaim.errors import ReclaimError


def test_builtins_are_registered_by_name():
    assert {"best-fit", "first-fit"} <= set(registry.names("placement"))
    assert "reservation" in registry.names("controller")
    assert capabilities(registry.build("placement", "best-fit"), PlacementCapabilities).monotone


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


def _decorated_names() -> set[tuple[str, str]]:
    """(kind, name) of every ``register(kind, name)`` call in reclaim's source."""
    import re
    from pathlib import Path

    import reclaim

    call = re.compile(r'register\(\s*"([a-z_]+)",\s*"([a-z0-9-]+)"\s*\)')
    return {
        m.groups()
        for path in Path(reclaim.__file__).parent.rglob("*.py")
        for m in call.finditer(path.read_text())
    }


def test_every_builtin_is_an_entry_point_and_every_entry_point_a_builtin():
    listed = {(kind, name) for kind in registry.KINDS for name in registry._entry_points(kind)}
    assert listed == _decorated_names()
    for kind, name in sorted(listed):
        assert registry.factory(kind, name).registered_name == name


def test_a_fresh_interpreter_builds_any_builtin_by_name():
    import subprocess
    import sys

    code = (
        "import reclaim; print(type(reclaim.build('forecaster', 'gp-exp')).__name__, "
        "reclaim.build('controller', 'pessimistic', k2=2.0).k2, len(reclaim.names('placement')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["GaussianProcess", "2.0", str(len(registry.names("placement")))]


def test_names_list_installed_builtins_without_importing_them():
    import subprocess
    import sys

    code = (
        "import sys, reclaim; names = reclaim.names('forecaster'); "
        "print('arima' in names, 'reclaim.forecast.arima' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]
