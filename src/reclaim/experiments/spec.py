"""Experiment specs: a TOML file -> its kind's spec -> the ordered list of runs it asks for at
one scale.

Every spec has a ``name`` (letters, digits, . _ -), a ``description``, a ``kind`` (default
``shaping``) and scales (``[scale.NAME]``, one per size; ``--scale`` picks one); the kind parses
everything else (``reclaim.experiments.kind``: kinds are found by name in the registry).
docs/experiments.md is the reference of each kind's keys. Every problem is a ReclaimError naming
the spec file and the key, raised before anything runs.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NoReturn

from reclaim import registry
from reclaim.errors import ReclaimError
from reclaim.experiments.kind import DEFAULT_KIND, EXPERIMENT, experiment_kind
from reclaim.placement import build_placer
from reclaim.traces.store import load_store, sample_path
from reclaim.validation import SEED, Quantity, check_params, read_text

SPEC_DIR = Path(__file__).parent / "specs"
SAMPLE_PREFIX = "sample:"


@dataclass(frozen=True)
class ScaledSpec:
    """What every kind of spec has: its name and description, the file and text it was read
    from, and its scales (``scales``: name -> scale) with the default among them; ``kind``: the
    experiment kind that parsed it. A kind's spec adds ``runs(scale)``: the runs at a scale."""

    name: str
    description: str
    path: Path
    text: str
    scales: dict[str, Any]

    kind: ClassVar[str]

    @property
    def default_scale(self) -> str:
        return "small" if "small" in self.scales else next(iter(self.scales))

    def headline(self, table: Any) -> list[str]:
        """Lines ``reclaim experiment run`` prints after the runs: the kind's key numbers from
        ``table`` (runs.parquet as a polars frame). None by default."""
        return []

    def scale(self, name: str | None) -> Any:
        """The scale called ``name`` (None: the default); a ReclaimError naming the known ones."""
        name = self.default_scale if name is None else name
        if name not in self.scales:
            known = ", ".join(self.scales)
            raise ReclaimError(f"{self.path}: no scale {name!r} (scales: {known})")
        return self.scales[name]


def load_spec(ref: str | Path) -> ScaledSpec:
    """The spec at path ``ref``, or the shipped spec of that name."""
    path = Path(ref)
    if not path.is_file():
        shipped = SPEC_DIR / f"{ref}.toml"
        if not shipped.is_file():
            names = ", ".join(p.stem for p in sorted(SPEC_DIR.glob("*.toml")))
            raise ReclaimError(
                f"no experiment spec {str(ref)!r}: no such file or shipped spec ({names})"
            )
        path = shipped
    return parse_spec(read_text(path), path)


def shipped_specs() -> list[ScaledSpec]:
    return [load_spec(p) for p in sorted(SPEC_DIR.glob("*.toml"))]


def parse_spec(text: str, path: Path) -> ScaledSpec:
    """Validate ``text`` (read from ``path``) as its kind's spec."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ReclaimError(f"{path}: not valid TOML ({err})") from None
    kind = doc.get("kind", DEFAULT_KIND)
    if not isinstance(kind, str) or kind not in registry.names(EXPERIMENT):
        known = ", ".join(registry.names(EXPERIMENT))
        raise ReclaimError(f"{path}: kind: unknown experiment kind {kind!r} (known: {known})")
    return experiment_kind(kind).parse(doc, path, text)


def settings_of(kind: str, name: str) -> dict[str, Any]:
    """Default settings of a registered ``name`` (its ``get_params``; none without one)."""
    built = registry.build(kind, name)
    return built.get_params() if hasattr(built, "get_params") else {}


class SpecErrors:
    """Checks that fail with one line naming the spec file and the key."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, problem: str) -> NoReturn:
        raise ReclaimError(f"{self.path}: {key}: {problem}")

    def keys(self, table: dict, allowed: tuple[str, ...], where: str) -> None:
        unknown = [k for k in table if k not in allowed]
        if unknown:
            self.fail(where, f"unknown key {unknown[0]!r} (known: {', '.join(allowed)})")

    def typed(self, value: Any, kind: type, key: str) -> Any:
        if value is None:
            self.fail(key, "missing")
        if not isinstance(value, kind):
            names = {str: "a string", dict: "a table", list: "a list", bool: "true or false"}
            self.fail(key, f"expected {names[kind]}, got {value!r}")
        return value

    def number(self, value: Any, key: str, integer: bool = False) -> Any:
        ok = int if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, ok):
            self.fail(key, f"expected {'a whole number' if integer else 'a number'}, got {value!r}")
        return value if integer else float(value)

    def quantity(self, value: Any, key: str, quantity: Quantity) -> Any:
        """``value`` checked against its declaration in :mod:`reclaim.validation`."""
        try:
            return quantity.check(value, key)
        except ReclaimError as problem:
            raise ReclaimError(f"{self.path}: {problem}") from None

    def head(self, doc: dict, text: str) -> dict[str, Any]:
        """The fields every kind of spec starts with (:class:`ScaledSpec`'s but the scales): its
        ``name`` (letters, digits, '.', '_' and '-': it names result folders), ``description``,
        and the file and ``text`` it was read from."""
        name = self.typed(doc.get("name"), str, "name")
        if not re.fullmatch(r"[A-Za-z0-9._-]+", name):
            self.fail("name", f"use letters, digits, '.', '_' and '-' only, got {name!r}")
        description = self.typed(doc.get("description", ""), str, "description")
        return {"name": name, "description": description, "path": self.path, "text": text}

    def seeds(self, value: Any, key: str) -> tuple[int, ...]:
        """A non-empty list of distinct whole numbers."""
        seeds = [self.quantity(s, key, SEED) for s in self.typed(value, list, key)]
        if not seeds or len(set(seeds)) != len(seeds):
            self.fail(key, "expected a non-empty list of distinct whole numbers")
        return tuple(seeds)

    def axis(self, value: Any, key: str) -> list[Any]:
        """A grid axis: a list of values (non-empty), or one value."""
        if not isinstance(value, list):
            return [value]
        if not value:
            self.fail(key, "an empty list leaves no runs")
        return value

    def name(self, kind: str, value: Any, key: str) -> str:
        known = registry.names(kind)
        if value not in known:
            self.fail(key, f"unknown {kind} {value!r} (known: {', '.join(known)})")
        return value

    def build(self, kind: str, name: str, params: dict, key: str) -> Any:
        """Build ``name`` with ``params`` (constructors only store settings, so this is cheap)."""
        known = settings_of(kind, name)
        for param, value in params.items():
            if param not in known:
                names = ", ".join(known) or "none"
                self.fail(key, f"{kind} {name!r} has no setting {param!r} (settings: {names})")
            default = known[param]
            if isinstance(default, bool | str):
                self.typed(value, type(default), f"{key}.{param}")
            elif isinstance(default, int | float):
                self.number(value, f"{key}.{param}", integer=isinstance(default, int))
        try:
            check_params(params, key)
        except ReclaimError as problem:
            raise ReclaimError(f"{self.path}: {problem}") from None
        try:
            return registry.build(kind, name, **params)
        except (TypeError, ValueError, ReclaimError) as problem:
            self.fail(key, str(problem))

    def placement(self, value: Any, key: str) -> str:
        self.typed(value, str, key)
        try:
            build_placer(value)
        except (ReclaimError, ValueError) as problem:
            self.fail(key, str(problem))
        return value

    def store(self, ref: str, key: str) -> str:
        """The folder of a ``sample:NAME`` or a path relative to the spec's folder."""
        try:
            if ref.startswith(SAMPLE_PREFIX):
                return str(sample_path(ref.removeprefix(SAMPLE_PREFIX)))
            path = (self.path.parent / ref).resolve()
            load_store(path)
            return str(path)
        except ReclaimError as problem:
            self.fail(key, str(problem))
