"""The agent's TOML config -> typed settings, with one-line errors naming the file and the key.

```toml
[agent]
parent = "reclaim"          # cgroup parent (relative to each hierarchy's root); required
period_s = 60               # monitor-forecast-decide-apply period
grace_s = 600               # a new component keeps its reservation this long
controller = "pessimistic"  # any registered controller
forecaster = "naive"        # any registered forecaster
window = 40                 # samples kept per component for the forecaster
database = "agent.db"       # relative to this file

[[component]]
name = "web-0"              # the cgroup directory under the parent
app = "web"
role = "core"               # or "elastic"
cpu = 0.5                   # reservation, cores
mem_gib = 1.0               # reservation, GiB
```
See docs/agent.md for every key.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from reclaim.core.types import R
from reclaim.errors import ReclaimError
from reclaim.sim.run import RunSettings, build_policies
from reclaim.validation import (
    CORES,
    GIB,
    PORT,
    SAMPLES,
    SECONDS,
    SECONDS_OR_ZERO,
    WEIGHT,
    Quantity,
    check_params,
    read_toml,
)


@dataclass
class Components:
    """The managed components, columnar; row i is component i for the agent's whole life.

    names: cgroup directory (or container) names; app: (W,) int32 index into ``apps`` (config
    order is the scheduling order the pessimistic policy walks); core: (W,) bool;
    request: (W, R) float32 reservation, cores and GiB.
    """

    names: list[str]
    apps: list[str]
    app: NDArray[np.int32]
    core: NDArray[np.bool_]
    request: NDArray[np.float32]

    def __len__(self) -> int:
        return len(self.names)


@dataclass
class AgentSettings:
    """Everything ``reclaim agent run`` needs; defaults are the shaping paper's (section 5)."""

    parent: str
    components: Components
    database: Path
    backend: str = "cgroup"  # or "docker"
    cgroup_root: Path = Path("/sys/fs/cgroup")
    cgroup_version: int | None = None  # None: detect at start
    period_s: float = 60.0
    grace_s: float = 600.0
    stale_after_s: float | None = None  # None: three periods
    # as the simulator's forecast_window: GP with the paper's ten-value history needs 12 to
    # model a series at all and 20 for its ten training patterns; fewer answer by the fallback
    window: int = 40
    retention_s: float = 7 * 86400.0
    controller: str = "pessimistic"
    controller_params: dict[str, Any] = field(default_factory=dict)
    forecaster: str = "naive"
    forecaster_params: dict[str, Any] = field(default_factory=dict)
    k1: float = 0.05
    k2: float = 3.0
    host_cpu: float | None = None  # None: the parent's quota, else the machine's cores
    host_mem_gib: float | None = None  # None: the parent's memory limit, else the machine's
    metrics_port: int = 0  # 0: no Prometheus endpoint
    dry_run: bool = False
    wait_for_cgroups: bool = False  # False: refuse to start while a component has no cgroup

    @property
    def stale_s(self) -> float:
        return 3 * self.period_s if self.stale_after_s is None else self.stale_after_s


class _Reader:
    """Typed access to one TOML table that names ``file`` and the dotted key in every error."""

    def __init__(self, path: Path, table: dict[str, Any], prefix: str) -> None:
        self.path, self.table, self.prefix = path, table, prefix

    def fail(self, key: str, problem: str) -> ReclaimError:
        return ReclaimError(f"{self.path}: {self.prefix}{key}: {problem}")

    def get(
        self, key: str, kind: type, default: Any = ..., quantity: Quantity | None = None
    ) -> Any:
        if key not in self.table:
            if default is ...:
                raise self.fail(key, "missing")
            return default
        value = self.table[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise self.fail(key, f"expected {kind.__name__}, got {value!r}")
        if quantity is not None:
            try:
                quantity.check(value, key)
            except ReclaimError as problem:
                raise ReclaimError(f"{self.path}: {self.prefix}{problem}") from None
        if key.endswith("_params"):
            try:
                check_params(value, key)
            except ReclaimError as problem:
                raise ReclaimError(f"{self.path}: {self.prefix}{problem}") from None
        return value

    def unknown(self, known: set[str]) -> None:
        extra = sorted(set(self.table) - known)
        if extra:
            raise self.fail(extra[0], f"unknown key (known: {', '.join(sorted(known))})")


_AGENT_KEYS = {
    "parent",
    "backend",
    "cgroup_root",
    "cgroup_version",
    "period_s",
    "grace_s",
    "stale_after_s",
    "window",
    "retention_s",
    "controller",
    "controller_params",
    "forecaster",
    "forecaster_params",
    "k1",
    "k2",
    "host_cpu",
    "host_mem_gib",
    "metrics_port",
    "dry_run",
    "wait_for_cgroups",
    "database",
}
_COMPONENT_KEYS = {"name", "app", "role", "cpu", "mem_gib"}


def load_settings(path: Path | str) -> AgentSettings:
    """Read and check an agent config; every mistake is one line naming the file and key."""
    path = Path(path)
    doc = read_toml(path)
    top = _Reader(path, doc, "")
    top.unknown({"agent", "component"})
    a = _Reader(path, top.get("agent", dict), "agent.")
    a.unknown(_AGENT_KEYS)
    parent = a.get("parent", str)
    if not parent.strip("/") or ".." in Path(parent).parts:
        raise a.fail("parent", f"must name a cgroup below the root, got {parent!r}")
    backend = a.get("backend", str, "cgroup")
    if backend not in ("cgroup", "docker"):
        raise a.fail("backend", f"expected 'cgroup' or 'docker', got {backend!r}")
    version = a.get("cgroup_version", int, None)
    if version not in (None, 1, 2):
        raise a.fail("cgroup_version", f"expected 1 or 2, got {version!r}")
    k1, k2 = a.get("k1", float, 0.05, WEIGHT), a.get("k2", float, 3.0, WEIGHT)
    port = a.get("metrics_port", int, 0, PORT)
    database = Path(a.get("database", str, "reclaim-agent.db"))
    settings = AgentSettings(
        parent=parent.strip("/"),
        components=_components(path, top.get("component", list)),
        database=database if database.is_absolute() else path.parent / database,
        backend=backend,
        cgroup_root=Path(a.get("cgroup_root", str, "/sys/fs/cgroup")),
        cgroup_version=version,
        period_s=a.get("period_s", float, 60.0, SECONDS),
        grace_s=a.get("grace_s", float, 600.0, SECONDS_OR_ZERO),
        stale_after_s=a.get("stale_after_s", float, None, SECONDS),
        window=a.get("window", int, 40, SAMPLES),
        retention_s=a.get("retention_s", float, 7 * 86400.0, SECONDS),
        controller=a.get("controller", str, "pessimistic"),
        controller_params=a.get("controller_params", dict, {}),
        forecaster=a.get("forecaster", str, "naive"),
        forecaster_params=a.get("forecaster_params", dict, {}),
        k1=k1,
        k2=k2,
        host_cpu=a.get("host_cpu", float, None, CORES),
        host_mem_gib=a.get("host_mem_gib", float, None, GIB),
        metrics_port=port,
        dry_run=a.get("dry_run", bool, False),
        wait_for_cgroups=a.get("wait_for_cgroups", bool, False),
    )
    try:
        build_controller(settings)  # names and settings checked before any cgroup is touched
    except ReclaimError as problem:
        raise ReclaimError(f"{path}: {problem}") from None
    return settings


def _components(path: Path, entries: list[Any]) -> Components:
    if not entries:
        raise ReclaimError(f"{path}: component: at least one [[component]] is needed")
    names, apps, app, core, request = [], [], [], [], []
    for i, entry in enumerate(entries):
        c = _Reader(path, entry, f"component[{i}].")
        if not isinstance(entry, dict):
            raise c.fail("", "expected a table")
        c.unknown(_COMPONENT_KEYS)
        name = c.get("name", str)
        if not name or "/" in name or name in (".", ".."):
            raise c.fail("name", f"must be one cgroup directory name, got {name!r}")
        if name in names:
            raise c.fail("name", f"{name!r} is listed twice")
        role = c.get("role", str, "core")
        if role not in ("core", "elastic"):
            raise c.fail("role", f"expected 'core' or 'elastic', got {role!r}")
        application = c.get("app", str)
        if application not in apps:
            apps.append(application)
        names.append(name)
        app.append(apps.index(application))
        core.append(role == "core")
        request.append([c.get("cpu", float, quantity=CORES), c.get("mem_gib", float, quantity=GIB)])
    return Components(
        names=names,
        apps=apps,
        app=np.asarray(app, np.int32),
        core=np.asarray(core, bool),
        request=np.asarray(request, np.float32).reshape(-1, R),
    )


def build_controller(settings: AgentSettings):
    """The controller and forecaster named in the settings, built by the same function as a
    simulation's; the agent's k1, k2 and grace_s fill in whichever of them the controller takes
    and its params do not set."""
    run = RunSettings(
        controller=settings.controller,
        controller_params=dict(settings.controller_params),
        forecaster=settings.forecaster,
        forecaster_params=settings.forecaster_params,
    )
    try:
        controller, forecaster = build_policies(run)
        takes = _param_names(controller)
        defaults = {"k1": settings.k1, "k2": settings.k2, "grace_s": settings.grace_s}
        extra = {k: v for k, v in defaults.items() if k in takes and k not in run.controller_params}
        if extra:
            run.controller_params.update(extra)
            controller, forecaster = build_policies(run)
    except (TypeError, ValueError) as err:
        # an unknown or ill-typed setting: refused before the agent touches a cgroup
        raise ReclaimError(f"agent.controller_params / forecaster_params: {err}") from None
    return controller, forecaster


def _param_names(controller) -> set[str]:
    """The parameters a controller takes: its ``get_params()`` keys where it has them (a
    subclass may pass its parent's on as ``**params``), else its constructor's signature."""
    if hasattr(controller, "get_params"):
        return set(controller.get_params())
    return set(inspect.signature(type(controller).__init__).parameters)
