"""Results of one simulation: per-application and per-tick tables, a summary, written as Parquet."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from reclaim.metrics import (
    application_slack,
    application_table,
    summarize_applications,
    summarize_timeline,
    timeline_table,
)
from reclaim.sim.simulator import DONE, QUEUED, REJECTED, RUNNING, WAITING, RunStats, Simulator

STATE_NAMES = {
    QUEUED: "queued",
    RUNNING: "running",
    DONE: "done",
    REJECTED: "rejected",
    WAITING: "not_arrived",
}


@dataclass
class SimResult:
    apps: pl.DataFrame
    timeline: pl.DataFrame
    summary: dict[str, float]
    stats: RunStats
    settings: dict[str, object] = field(default_factory=dict)

    @classmethod
    def from_simulator(cls, sim: Simulator, settings: dict[str, object]) -> SimResult:
        wl = sim.workload
        apps = application_table(
            wl.arrival,
            sim.app_first_start,
            sim.app_start,
            sim.app_end,
            sim.app_state,
            STATE_NAMES,
            components=sim.app_size,
            failures=sim.app_failures,
            preemptions=sim.app_preemptions,
            component_losses=sim.app_component_losses,
            component_ooms=sim.app_component_ooms,
            work_lost=sim.app_work_lost,
            **application_slack(sim.app_allocated, sim.app_used),
        )
        timeline = timeline_table(sim.timeline, sim.hosts.capacity)
        summary = summarize_applications(apps) | summarize_timeline(timeline)
        summary["simulated_days"] = sim.now / 86400.0
        return cls(apps, timeline, summary, sim.stats, settings)

    def write(self, out: Path) -> None:
        """``out``/apps.parquet, timeline.parquet and summary.json (summary, settings, run stats)."""
        out.mkdir(parents=True, exist_ok=True)
        self.apps.write_parquet(out / "apps.parquet")
        self.timeline.write_parquet(out / "timeline.parquet")
        doc = {"summary": self.summary, "settings": self.settings, "stats": vars(self.stats)}
        (out / "summary.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
