"""The settings promise every registered component keeps (``check_settings``): scikit-learn's.

``get_params(deep=True)`` names every setting, ``sklearn.base.clone`` makes an equal fresh
instance, building by name from ``get_params(deep=False)`` gives the same settings back, and
``set_params`` changes one setting and refuses a name it does not have.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import clone

from reclaim import registry


def _equal(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    if hasattr(a, "get_params") and hasattr(b, "get_params"):
        return type(a) is type(b) and _equal(a.get_params(), b.get_params())
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


def check_settings(kind: str, name: str, build: Callable[[], object] | None = None) -> None:
    """Raise AssertionError naming the first broken settings promise of ``kind`` ``name``."""
    built = build() if build is not None else registry.build(kind, name)
    where = f"{kind} {name!r}"
    shallow = built.get_params(deep=False)
    deep = built.get_params(deep=True)
    assert set(shallow) <= set(deep), f"{where}: get_params(deep=True) lacks shallow settings"
    twin = clone(built)
    assert type(twin) is type(built), f"{where}: clone is a {type(twin).__name__}"
    assert _equal(twin.get_params(deep=True), deep), f"{where}: clone has other settings"
    if build is None:
        again = registry.build(kind, name, **shallow)
        assert _equal(again.get_params(), shallow), f"{where}: rebuilt from its settings differs"
    try:
        clone(built).set_params(no_such_setting_here=1)
    except ValueError:
        pass
    else:
        raise AssertionError(f"{where}: set_params accepted a setting it does not have")
    for key, value in shallow.items():
        changed = clone(built).set_params(**{key: value})
        assert _equal(changed.get_params(deep=False)[key], value), f"{where}: set_params({key})"
