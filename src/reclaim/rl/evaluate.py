"""Learned placers on the TVW scenario, beside the heuristics of ``tvw.evaluate``.

A learned placer is bound to its environment's state, so it replays a sequence one decision at a
time through the placement framework (:func:`run_learned`, DeepRM's :func:`~reclaim.rl.deeprm.
run_deeprm`); :class:`Learned` gives it the ``label``/``run`` of a ``tvw.evaluate`` policy, so the
same sequences, metrics, tables and charts serve both. :func:`paper_comparison` sets our figures
against the paper's claims.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from reclaim.errors import ReclaimError
from reclaim.placement import Placer
from reclaim.rl.deeprm import SHIPPED as DEEPRM_SHIPPED
from reclaim.rl.deeprm import DeepRMEnv, run_deeprm
from reclaim.rl.env import PlacementEnv
from reclaim.rl.policy import SHIPPED, LinearPolicy
from reclaim.tvw.replay import ReplayResult
from reclaim.tvw.scenario import ScenarioSpec, Sequence

#: The paper's claims for TVW-RL (abstract and "Improvements in Operational Excellence").
CLAIMS = {
    "util_vs_deeprm_pct": (30.0, 100.0),
    "frag_vs_deeprm_pct": (-50.0, -5.0),
    "frag_vs_tetris_pct": (-13.0, -6.0),
    "machines_vs_deeprm_pct": (-50.0, -8.0),
}


def run_learned(sequence: Sequence, placer: Placer, env: PlacementEnv) -> ReplayResult:
    """Replay ``sequence`` in ``env`` placing each queue head with ``placer``."""
    for wp in placer.plugins:
        if hasattr(wp.plugin, "observe"):
            wp.plugin.observe = lambda: obs  # late-bound: the observation of the current step
    obs, _ = env.reset(np.random.default_rng(0), sequence)
    replay = env.replay
    while not replay.done:
        head = replay.queue[:1]
        host = placer.place(replay.capacity_, replay.free(), replay.up_, replay.demand(head))[0]
        if host < 0:
            raise ReclaimError("the placer found no machine for a workload the environment fits")
        obs, *_ = env.step(int(host))
    return replay.result()


@dataclass(frozen=True)
class Learned:
    """A learned placer (``tvw-rl`` or ``deeprm``) and its saved policy (None: the shipped one)."""

    name: str
    path: str | None = None

    def __post_init__(self) -> None:
        if self.name not in ("tvw-rl", "deeprm"):
            raise ReclaimError(f"learned placer must be tvw-rl or deeprm, not {self.name!r}")

    @property
    def label(self) -> str:
        return self.name

    def run(self, sequence: Sequence, spec: ScenarioSpec) -> ReplayResult:
        from importlib.resources import files

        default = DEEPRM_SHIPPED if self.name == "deeprm" else SHIPPED
        path = self.path or str(files("reclaim").joinpath("data", default))
        trained = LinearPolicy.load(path).settings
        if trained.get("machines") != spec.machines or trained.get("units") != spec.units:
            raise ReclaimError(
                f"{path}: trained for {trained.get('machines')} machines of "
                f"{trained.get('units')} units, not {spec.machines} of {spec.units}"
            )
        placer = Placer.from_config([{"name": self.name, "params": {"path": path}}])
        shape = {"history": trained["history"], "queue_slots": trained["queue_slots"]}
        if self.name == "deeprm":
            return run_deeprm(sequence, placer, DeepRMEnv(spec=spec, **shape))
        return run_learned(sequence, placer, PlacementEnv(spec=spec, **shape))


def paper_comparison(summary: pl.DataFrame) -> pl.DataFrame:
    """Per store and load, TVW-RL's change in % against DeepRM and Tetris: utilisation (mean of
    CPU and memory), fragmentation (likewise) and machines used, with the paper's claimed range."""
    frame = summary.with_columns(
        util=(pl.col("util_cpu") + pl.col("util_mem")) / 2,
        frag=(pl.col("frag_cpu") + pl.col("frag_mem")) / 2,
        policy=pl.col("policy").str.split("@").list.first(),
    )
    rows = []
    for (store, load), group in frame.group_by("store", "load", maintain_order=True):
        by = {r["policy"]: r for r in group.iter_rows(named=True)}
        if "tvw-rl" not in by:
            continue
        ours = by["tvw-rl"]

        def change(metric, other, by=by, ours=ours):
            base = by.get(other, {}).get(metric)
            return 100.0 * (ours[metric] - base) / base if base else None

        rows.append(
            {
                "store": store,
                "load": load,
                "util_vs_deeprm_pct": change("util", "deeprm"),
                "frag_vs_deeprm_pct": change("frag", "deeprm"),
                "frag_vs_tetris_pct": change("frag", "tetris"),
                "machines_vs_deeprm_pct": change("machines_used", "deeprm"),
                "machines_vs_tetris_pct": change("machines_used", "tetris"),
                "overshoot_tvw_rl": ours["overshoot_pct"],
                "overshoot_best_fit": by.get("best-fit", {}).get("overshoot_pct"),
            }
        )
    return pl.DataFrame(rows)
