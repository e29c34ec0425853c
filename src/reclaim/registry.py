"""Name -> factory registries, one per kind; third-party plugins join through entry points.

CLI, configs and sweeps build objects by name through :func:`build`, never by import.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from reclaim.errors import ReclaimError

_REGISTRIES: dict[str, dict[str, Callable[..., Any]]] = {}
_LOADED_ENTRY_POINTS: set[str] = set()


def register(kind: str, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Class decorator: make ``factory`` buildable as ``build(kind, name, **params)``."""

    def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
        table = _REGISTRIES.setdefault(kind, {})
        if name in table and table[name] is not factory:
            raise ValueError(f"{kind} {name!r} is registered twice")
        table[name] = factory
        factory.registered_name = name
        return factory

    return decorate


def _load_entry_points(kind: str) -> None:
    if kind in _LOADED_ENTRY_POINTS:
        return
    _LOADED_ENTRY_POINTS.add(kind)
    for ep in entry_points(group=f"reclaim.{kind}"):
        register(kind, ep.name)(ep.load())


def names(kind: str) -> list[str]:
    """Registered names of one kind, sorted."""
    _load_entry_points(kind)
    return sorted(_REGISTRIES.get(kind, {}))


def build(kind: str, name: str, **params: Any) -> Any:
    """Instantiate the ``kind`` registered as ``name`` with ``params``."""
    _load_entry_points(kind)
    table = _REGISTRIES.get(kind, {})
    if name not in table:
        known = ", ".join(sorted(table)) or "none"
        raise ReclaimError(f"unknown {kind} {name!r} (known: {known})")
    return table[name](**params)
