"""Name -> factory registries, one per kind; built-ins and plugins join through entry points.

CLI, configs and sweeps build objects by name through :func:`build`, never by import. Every
built-in is listed under ``[project.entry-points."reclaim.<kind>"]`` in pyproject.toml, as a
third-party plugin would list its own, so a fresh interpreter knows every name without importing
any component module: a module is imported when its name is first built. ``register`` adds a
factory in process (a notebook's own controller, a test's).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from reclaim.errors import ReclaimError

#: The kinds of component reclaim builds by name.
KINDS = (
    "controller",
    "defrag",
    "experiment",
    "forecaster",
    "placement",
    "provisioner",
    "trace_format",
)

_REGISTRIES: dict[str, dict[str, Callable[..., Any]]] = {}


def register(kind: str, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: make ``factory`` buildable as ``build(kind, name, **params)``."""

    def decorate(factory: Callable[..., Any]) -> Callable[..., Any]:
        table = _REGISTRIES.setdefault(kind, {})
        if name in table and table[name] is not factory:
            raise ValueError(f"{kind} {name!r} is registered twice")
        table[name] = factory
        factory.registered_name = name
        return factory

    return decorate


@functools.cache
def _entry_points(kind: str) -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=f"reclaim.{kind}")}


def names(kind: str) -> list[str]:
    """Names of one kind, registered or installed, sorted."""
    return sorted(set(_REGISTRIES.get(kind, {})) | set(_entry_points(kind)))


def factory(kind: str, name: str) -> Callable[..., Any]:
    """The factory of ``kind`` ``name``, importing its module on first use."""
    table = _REGISTRIES.setdefault(kind, {})
    if name not in table and name in _entry_points(kind):
        register(kind, name)(_entry_points(kind)[name].load())
    if name not in table:
        known = ", ".join(names(kind)) or "none"
        raise ReclaimError(f"unknown {kind} {name!r} (known: {known})")
    return table[name]


def name_of(component: Any) -> str:
    """The name ``component``'s class is registered under, else the class's own name."""
    return getattr(component, "registered_name", type(component).__name__)


def build(kind: str, name: str, **params: Any) -> Any:
    """Instantiate the ``kind`` registered as ``name`` with ``params``."""
    return factory(kind, name)(**params)
