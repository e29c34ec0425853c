"""Live against simulated: the same workload replayed in the simulator, side by side per
application, so the simulator's model is checked against real processes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl

from reclaim.live.launcher import MODES
from reclaim.live.scenario import LiveScenario, build
from reclaim.sim import run as sim_run
from reclaim.sim.results import SimResult
from reclaim.sim.run import RunSettings
from reclaim.workload.model import Workload

#: The simulator's replays of the scenario over several seeds, beside the live run's one.
SEEDS_FILE = "sim-seeds.parquet"
_BOOTSTRAP = 2000
#: Per-application columns compared, live vs simulated.
COLUMNS = ("turnaround", "queue_time", "run_time", "slack_cpu", "slack_mem", "failures")


def replay_settings(scenario: LiveScenario, mode: str) -> RunSettings:
    """The simulator run equal to live ``mode``: one host of the scenario's size, the same
    controller, forecaster, K1, K2 and grace; the forecast window the agent keeps; memory limits
    soft, as the agent writes them (the simulator's pessimistic default is hard, the paper's
    simulation model; docs/live.md shows both)."""
    shaped = mode == "shaped"
    params = {"k1": scenario.k1, "k2": scenario.k2, "grace_s": scenario.grace_s}
    params = params | {"soft_memory_limits": True} if shaped else {}
    return RunSettings(
        hosts=scenario.hosts,
        controller=MODES[mode]["controller"],
        controller_params=params,
        forecaster=scenario.forecaster if shaped else None,
    )


def replay(workload: Workload, scenario: LiveScenario, mode: str) -> SimResult:
    return sim_run.replay(workload, replay_settings(scenario, mode), extra={"mode": mode})


def side_by_side(live: pl.DataFrame, simulated: pl.DataFrame, mode: str) -> pl.DataFrame:
    """One row per application: each column live and simulated, and live minus simulated."""
    cols = [c for c in COLUMNS if c in live.columns and c in simulated.columns]
    joined = live.select("app", "state", *cols).join(
        simulated.select("app", pl.col("state").alias("state_sim"), *cols),
        on="app",
        suffix="_sim",
        maintain_order="left",
    )
    diffs = [(pl.col(c) - pl.col(f"{c}_sim")).alias(f"{c}_diff") for c in cols]
    return joined.with_columns(diffs).with_columns(pl.lit(mode).alias("mode"))


def summary_rows(table: pl.DataFrame) -> pl.DataFrame:
    """Per mode and column: live and simulated medians over applications finished both ways,
    the median difference, and the applications compared."""
    done = table.filter((pl.col("state") == "done") & (pl.col("state_sim") == "done"))
    out = []
    for (mode,), part in done.group_by(["mode"], maintain_order=True):
        for c in COLUMNS:
            if c not in part.columns:
                continue
            live, sim = part[c].to_numpy(), part[f"{c}_sim"].to_numpy()
            ok = np.isfinite(live) & np.isfinite(sim)
            out.append(
                {
                    "mode": mode,
                    "metric": c,
                    "live_median": float(np.median(live[ok])) if ok.any() else np.nan,
                    "sim_median": float(np.median(sim[ok])) if ok.any() else np.nan,
                    "diff_median": float(np.median(live[ok] - sim[ok])) if ok.any() else np.nan,
                    "apps": int(ok.sum()),
                }
            )
    return pl.DataFrame(out)


def median_change(
    base: pl.DataFrame, other: pl.DataFrame, column: str, seed: int = 0
) -> tuple[float, float, float]:
    """Relative change of the median of ``column`` from ``base`` to ``other`` over applications
    finished in both, with a 95 % paired-bootstrap interval: (change, low, high)."""
    both = base.select("app", column, "state").join(
        other.select("app", column, "state"), on="app", suffix="_o", maintain_order="left"
    )
    both = both.filter((pl.col("state") == "done") & (pl.col("state_o") == "done"))
    a, b = both[column].to_numpy(), both[f"{column}_o"].to_numpy()
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if len(a) == 0 or np.median(a) == 0:
        return np.nan, np.nan, np.nan
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(a), (_BOOTSTRAP, len(a)))
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = np.median(b[picks], axis=1) / np.median(a[picks], axis=1) - 1.0
    low, high = np.nanpercentile(boot, [2.5, 97.5])
    return float(np.median(b) / np.median(a) - 1.0), float(low), float(high)


def seed_changes(scenario: LiveScenario, seeds: int) -> pl.DataFrame:
    """The simulator's answer over ``seeds`` workloads of the scenario (seed 0 is the live
    run's): per seed, the change of the median memory slack and turnaround from reservations to
    shaping, and the applications that failed under shaping."""
    rows = []
    for seed in range(seeds):
        sc = replace(scenario, seed=seed)
        workload, _ = build(sc)
        base, shaped = (replay(workload, sc, mode).apps for mode in MODES)
        killed = shaped["failures"] + shaped["preemptions"] + shaped["component_losses"]
        rows.append(
            {
                "seed": seed,
                "slack_mem": median_change(base, shaped, "slack_mem")[0],
                "turnaround": median_change(base, shaped, "turnaround")[0],
                "failed_apps": float((killed > 0).sum()),
            }
        )
    return pl.DataFrame(rows)
