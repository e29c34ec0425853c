"""Results of one simulation: per-application and per-tick tables, a summary, written as Parquet."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from reclaim.core.capabilities import ControllerCapabilities, ForecasterCapabilities, capabilities
from reclaim.core.types import CPU, MEM
from reclaim.metrics import (
    application_slack,
    application_table,
    shapeable_share,
    summarize_applications,
    summarize_timeline,
    timeline_table,
)
from reclaim.sim.simulator import RunStats, Simulator
from reclaim.sim.state import DONE, QUEUED, REJECTED, RUNNING, WAITING

#: The shaping paper's grace period (section 5), reported for controllers that shape nothing.
DEFAULT_GRACE_S = 600.0

STATE_NAMES = {
    QUEUED: "queued",
    RUNNING: "running",
    DONE: "done",
    REJECTED: "rejected",
    WAITING: "not_arrived",
}


def tally_table(arrival: np.ndarray, tally) -> pl.DataFrame:
    """The per-application table from a tally holding the simulator's ``app_*`` arrays: the
    simulator's state, or a live run's, so that both write the same columns."""
    return application_table(
        arrival,
        tally.app_first_start,
        tally.app_start,
        tally.app_end,
        tally.app_state,
        STATE_NAMES,
        components=tally.app_size,
        failures=tally.app_failures,
        preemptions=tally.app_preemptions,
        component_losses=tally.app_component_losses,
        component_ooms=tally.app_component_ooms,
        work_lost=tally.app_work_lost,
        work_lost_cpu=tally.app_work_lost_res[:, CPU],
        work_lost_mem=tally.app_work_lost_res[:, MEM],
        **application_slack(tally.app_requested, tally.app_allocated, tally.app_used),
    )


@dataclass
class SimResult:
    apps: pl.DataFrame
    timeline: pl.DataFrame
    summary: dict[str, float]
    stats: RunStats
    settings: dict[str, object] = field(default_factory=dict)

    @classmethod
    def from_simulator(cls, sim: Simulator, settings: dict[str, object]) -> SimResult:
        wl = sim.state.workload
        apps = tally_table(wl.arrival, sim.state)
        timeline = timeline_table(sim.timeline, sim.state.hosts.capacity)
        summary = summarize_applications(apps) | summarize_timeline(timeline)
        grace = capabilities(sim.controller, ControllerCapabilities).grace_s
        grace = DEFAULT_GRACE_S if grace is None else grace
        summary |= shapeable_share(wl.comp_indptr, wl.work, wl.request, grace)
        summary["simulated_days"] = sim.state.now / 86400.0
        if sim.stats.forecasts:
            summary["forecast_fallback_share"] = sim.stats.forecast_fallbacks / sim.stats.forecasts
        # figures of the policies' own, by their declaration (a conformal forecaster's realised
        # coverage, a shaper's failure-target tally)
        for policy, kind in (
            (sim.forecaster, ForecasterCapabilities),
            (sim.controller, ControllerCapabilities),
        ):
            if policy is not None and capabilities(policy, kind).reports:
                summary |= policy.run_summary()
        return cls(apps, timeline, summary, sim.stats, settings)

    def write(self, out: Path) -> None:
        """``out``/apps.parquet, timeline.parquet and summary.json (summary, settings, run stats)."""
        out.mkdir(parents=True, exist_ok=True)
        self.apps.write_parquet(out / "apps.parquet")
        self.timeline.write_parquet(out / "timeline.parquet")
        doc = {"summary": self.summary, "settings": self.settings, "stats": vars(self.stats)}
        (out / "summary.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
