"""Why a component has the limit it has, and the state of all of them, read from the database.

Both reports read only the agent's SQLite file, so they work while the agent runs (or after it
stopped) without touching any cgroup.
"""

from __future__ import annotations

import time

from rich.table import Table

from reclaim.agent.store import Store
from reclaim.forecast.base import gaussian_quantile

_COVERAGE = 0.9  # the forecast interval shown


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _num(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def explain(store: Store, name: str, samples: int = 10) -> list[str]:
    """Lines explaining component ``name``'s last decision: recent usage, the forecast with its
    interval, the buffer terms K1*request and K2*std, the limit chosen, and recent events."""
    comp = store.component_id(name)
    app, core, req_cpu, req_mem = store.db.execute(
        "SELECT app, core, req_cpu, req_mem FROM components WHERE id = ?", (comp,)
    ).fetchone()
    role = "core" if core else "elastic"
    lines = [f"{name}: application {app!r}, {role}; reservation {req_cpu:g} cores, {req_mem:g} GiB"]
    recent = store.recent_samples(comp, samples)
    if recent:
        lines.append(f"recent usage, oldest first (last {len(recent)} samples):")
        lines.append("  cpu cores: " + " ".join(f"{c:.3f}" for _, c, _ in recent))
        lines.append("  mem GiB:   " + " ".join(f"{m:.3f}" for _, _, m in recent))
    else:
        lines.append("no usage sample yet")
    decisions = store.decisions_of(comp, 1)
    if not decisions:
        lines.append("no decision yet")
        return lines
    d = decisions[-1]
    z = float(gaussian_quantile(0.5 + _COVERAGE / 2))
    for resource, unit in (("cpu", "cores"), ("mem", "GiB")):
        mean, std, req = d[f"mean_{resource}"], d[f"std_{resource}"], d[f"req_{resource}"]
        if mean is None:
            lines.append(f"{resource}: no forecast (no history yet or the forecaster failed)")
            continue
        spread = "unbounded" if std is None else f"[{mean - z * std:.3f}, {mean + z * std:.3f}]"
        k2std = "inf" if std is None else f"{d['k2'] * std:.3f}"
        lines.append(
            f"{resource}: forecast {mean:.3f} {unit}, {_COVERAGE:.0%} interval {spread}; buffer "
            f"K1*request = {d['k1']:g} x {req:g} = {d['k1'] * req:.3f}, "
            f"K2*std = {d['k2']:g} x {_num(std)} = {k2std}"
        )
    applied = "applied" if d["applied"] else "not applied"
    lines.append(
        f"decision at {_when(d['t'])}: {d['action']} -> cpu {_num(d['limit_cpu'])} cores, "
        f"mem {_num(d['limit_mem'])} GiB ({applied}); usage then cpu {_num(d['used_cpu'])}, "
        f"mem {_num(d['used_mem'])}"
    )
    lines.append(f"reason: {d['reason']}")
    for t, _, kind, reason in store.events_of(comp, 5):
        lines.append(f"event {_when(t)}: {kind}: {reason}")
    return lines


def status_table(store: Store) -> Table:
    """One row per component: reservation, usage, forecast, limit and slack (limit - usage),
    memory in GiB and CPU in cores, from each one's latest decision."""
    table = Table(title=f"reclaim agent: {store.path}")
    for col in ("component", "app", "role", "action"):
        table.add_column(col)
    for col in ("reserved", "used", "forecast", "limit", "slack"):
        table.add_column(f"{col} GiB", justify="right")
    table.add_column("cpu limit", justify="right")
    table.add_column("updated")
    table.add_column("note")
    for r in store.latest_decisions():
        if r["t"] is None:
            table.add_row(r["name"], r["app"], "core" if r["core"] else "elastic", "not seen")
            continue
        used, limit = r["used_mem"], r["limit_mem"]
        slack = None if used is None or limit is None else limit - used
        table.add_row(
            r["name"],
            r["app"],
            "core" if r["core"] else "elastic",
            r["action"],
            _num(r["req_mem"]),
            _num(used),
            _num(r["mean_mem"]),
            _num(limit),
            _num(slack),
            _num(r["limit_cpu"]),
            _when(r["t"]),
            # a fail safe says why the numbers are not the controller's (never a silent zero)
            r["reason"] if str(r["reason"]).startswith("fail safe") else "",
        )
    return table
