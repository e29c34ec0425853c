"""The agent's state in an embedded SQLite database: observed series, decisions, events.

Why SQLite: one file, in the standard library, safe against a crash mid-write, and readable by
``reclaim agent status`` / ``explain`` while the agent runs (WAL mode lets readers in during a
write). A restarted agent reloads each component's recent samples and first-seen time from here,
so forecasts and grace periods carry on where they stopped.

Tables: ``components`` (id, name, app, core, request, first_seen), ``samples`` (t, component,
cpu cores, mem GiB), ``decisions`` (one row per component per period: usage, forecast and its
std, buffer terms, reservation, the limit chosen, the action and its reason, whether applied) and
``events`` (kills, fail-safe reverts, components appearing or going away, with reasons).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from reclaim.agent.config import Components
from reclaim.core.types import R
from reclaim.errors import ReclaimError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS components (
    id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, app TEXT NOT NULL, core INTEGER NOT NULL,
    req_cpu REAL NOT NULL, req_mem REAL NOT NULL, first_seen REAL);
CREATE TABLE IF NOT EXISTS samples (t REAL NOT NULL, component INTEGER NOT NULL,
    cpu REAL NOT NULL, mem REAL NOT NULL);
CREATE INDEX IF NOT EXISTS samples_by_component ON samples (component, t);
CREATE TABLE IF NOT EXISTS decisions (t REAL NOT NULL, component INTEGER NOT NULL,
    used_cpu REAL, used_mem REAL, mean_cpu REAL, mean_mem REAL, std_cpu REAL, std_mem REAL,
    k1 REAL, k2 REAL, req_cpu REAL, req_mem REAL, limit_cpu REAL, limit_mem REAL,
    action TEXT NOT NULL, reason TEXT NOT NULL, applied INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS decisions_by_component ON decisions (component, t);
CREATE TABLE IF NOT EXISTS events (t REAL NOT NULL, component INTEGER, kind TEXT NOT NULL,
    reason TEXT NOT NULL);
"""
DECISION_COLUMNS = [
    "t",
    "component",
    "used_cpu",
    "used_mem",
    "mean_cpu",
    "mean_mem",
    "std_cpu",
    "std_mem",
    "k1",
    "k2",
    "req_cpu",
    "req_mem",
    "limit_cpu",
    "limit_mem",
    "action",
    "reason",
    "applied",
]


def _nullable(a: NDArray) -> list:
    """Floats for SQLite, with NaN and inf (no forecast, no limit) stored as NULL."""
    return [float(x) if np.isfinite(x) else None for x in a]


class Store:
    """One agent database; ids of components are their rows in the agent's tables."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            # no fsync per commit: WAL stays consistent on a crash, and losing the last period's
            # rows on power loss costs one sample, where an fsync per period cost ~100 ms
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as err:
            raise ReclaimError(f"{self.path}: cannot open the agent database: {err}") from None

    @classmethod
    def open_existing(cls, path: Path | str) -> Store:
        if not Path(path).is_file():
            raise ReclaimError(f"{path}: no agent database (has `reclaim agent run` run yet?)")
        return cls(path)

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ components
    def sync_components(self, comps: Components) -> NDArray[np.float64]:
        """Record the configured components (ids = their rows) and return each one's first-seen
        time (NaN if never seen). A config whose component list changed order or names is
        refused: ids would no longer match rows and history would be attributed wrongly."""
        rows = self.db.execute("SELECT id, name FROM components ORDER BY id").fetchall()
        known = [name for _, name in rows]
        if known and known != comps.names[: len(known)]:
            raise ReclaimError(
                f"{self.path}: components differ from the ones this database was made for "
                "(append new ones at the end, or start a new database)"
            )
        with self.db:
            self.db.executemany(
                "INSERT OR IGNORE INTO components (id, name, app, core, req_cpu, req_mem) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        i,
                        n,
                        comps.apps[comps.app[i]],
                        int(comps.core[i]),
                        *map(float, comps.request[i]),
                    )
                    for i, n in enumerate(comps.names)
                ],
            )
            self.db.executemany(
                "UPDATE components SET app = ?, core = ?, req_cpu = ?, req_mem = ? WHERE id = ?",
                [
                    (comps.apps[comps.app[i]], int(comps.core[i]), *map(float, comps.request[i]), i)
                    for i in range(len(comps))
                ],
            )
        first = np.full(len(comps), np.nan)
        for i, t in self.db.execute("SELECT id, first_seen FROM components"):
            if i < len(comps) and t is not None:
                first[i] = t
        return first

    def set_first_seen(self, ids: NDArray[np.integer], t: NDArray[np.float64]) -> None:
        with self.db:
            self.db.executemany(
                "UPDATE components SET first_seen = ? WHERE id = ?",
                [(float(a), int(i)) for i, a in zip(ids, t, strict=True)],
            )

    def component_id(self, name: str) -> int:
        row = self.db.execute("SELECT id FROM components WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise ReclaimError(f"{self.path}: no component {name!r} in the agent database")
        return int(row[0])

    # ------------------------------------------------------------------ series
    def add_samples(self, t: float, ids: NDArray[np.integer], used: NDArray) -> None:
        """``used``: (n, R) cores and GiB of components ``ids`` over the period ending at ``t``."""
        with self.db:
            self.db.executemany(
                "INSERT INTO samples VALUES (?, ?, ?, ?)",
                zip(
                    [t] * len(ids),
                    ids.tolist(),
                    *(used[:, r].tolist() for r in range(R)),
                    strict=True,
                ),
            )

    def history(
        self, n: int, window: int
    ) -> tuple[NDArray[np.float32], NDArray[np.int64], NDArray[np.float64]]:
        """The last ``window`` samples of components 0..n-1 as (n, window, R) float32, right-
        aligned (oldest first), with counts (n,) and the time of each one's last sample (n,)."""
        hist = np.zeros((n, window, R), np.float32)
        count = np.zeros(n, np.int64)
        last = np.full(n, np.nan)
        rows = self.db.execute(
            "SELECT component, t, cpu, mem FROM (SELECT component, t, cpu, mem, ROW_NUMBER() "
            "OVER (PARTITION BY component ORDER BY t DESC) AS k FROM samples) WHERE k <= ? "
            "ORDER BY component, t",
            (window,),
        ).fetchall()
        for comp, t, cpu, mem in rows:
            if comp >= n:
                continue
            hist[comp, :-1] = hist[comp, 1:]
            hist[comp, -1] = (cpu, mem)
            count[comp] += 1
            last[comp] = t
        return hist, count, last

    def recent_samples(self, component: int, n: int) -> list[tuple[float, float, float]]:
        rows = self.db.execute(
            "SELECT t, cpu, mem FROM samples WHERE component = ? ORDER BY t DESC LIMIT ?",
            (component, n),
        ).fetchall()
        return rows[::-1]

    # ------------------------------------------------------------------ decisions and events
    def add_decisions(self, columns: dict[str, NDArray | list]) -> None:
        """One row per component from columnar ``columns`` keyed by :data:`DECISION_COLUMNS`."""
        n = len(columns["component"])
        data = []
        for name in DECISION_COLUMNS:
            col = columns[name]
            if name in ("t", "action", "reason"):
                data.append(list(col) if not isinstance(col, str | float) else [col] * n)
            elif name in ("component", "applied"):
                data.append([int(x) for x in np.broadcast_to(col, n)])
            else:
                data.append(_nullable(np.broadcast_to(np.asarray(col, np.float64), n)))
        with self.db:
            self.db.executemany(
                f"INSERT INTO decisions VALUES ({', '.join('?' * len(DECISION_COLUMNS))})",
                zip(*data, strict=True),
            )

    def add_event(self, t: float, component: int | None, kind: str, reason: str) -> None:
        with self.db:
            self.db.execute("INSERT INTO events VALUES (?, ?, ?, ?)", (t, component, kind, reason))

    def prune(self, before: float) -> None:
        """Forget samples, decisions and events older than ``before`` (bounded disk use)."""
        with self.db:
            for table in ("samples", "decisions", "events"):
                self.db.execute(f"DELETE FROM {table} WHERE t < ?", (before,))

    # ------------------------------------------------------------------ reports
    def latest_decisions(self) -> list[sqlite3.Row]:
        """Per component, its newest decision row joined with its name, app and role."""
        self.db.row_factory = sqlite3.Row
        try:
            return self.db.execute(
                "SELECT c.name, c.app, c.core, d.* FROM components c LEFT JOIN decisions d "
                "ON d.component = c.id AND d.t = (SELECT MAX(t) FROM decisions WHERE component = c.id) "
                "ORDER BY c.id"
            ).fetchall()
        finally:
            self.db.row_factory = None

    def decisions_of(self, component: int, n: int) -> list[sqlite3.Row]:
        self.db.row_factory = sqlite3.Row
        try:
            rows = self.db.execute(
                "SELECT * FROM decisions WHERE component = ? ORDER BY t DESC LIMIT ?",
                (component, n),
            ).fetchall()
        finally:
            self.db.row_factory = None
        return rows[::-1]

    def events_of(self, component: int | None, n: int) -> list[tuple[float, int | None, str, str]]:
        if component is None:
            query, args = "SELECT * FROM events ORDER BY t DESC LIMIT ?", (n,)
        else:
            query = "SELECT * FROM events WHERE component = ? ORDER BY t DESC LIMIT ?"
            args = (component, n)
        return self.db.execute(query, args).fetchall()[::-1]
