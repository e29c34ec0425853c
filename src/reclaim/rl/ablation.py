"""The paper's penalty ablation (Mondal et al. 2021, "Ablation Study": "Sensitivity with
Reward/Penalty Components" and Table 3): one TVW-RL policy per penalty setting, all evaluated on
the same test sequences, beside the paper's figures.

The grid is the paper's: one coefficient varied at a time, the others at their defaults
(:class:`~reclaim.rl.rewards.Weights`), so the three axes share the default setting, trained once
(10 settings). Each setting trains into its own folder, resuming from its checkpoint; one whose
policy.npz has the requested iterations is not trained again. Every folder is checked before any
training starts: one trained otherwise, or further than asked, fails in one line.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import polars as pl
from rich.console import Console

from reclaim.errors import ReclaimError
from reclaim.processes import in_processes
from reclaim.progress import count_progress
from reclaim.rl.evaluate import Learned
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.reinforce import (
    CHECKPOINT,
    POLICY,
    TrainConfig,
    checkpoint_iterations,
)
from reclaim.rl.rewards import Weights
from reclaim.rl.training import run_training
from reclaim.traces.store import load_store
from reclaim.tvw.evaluate import METRICS, run_evaluation
from reclaim.tvw.replay import ReplayResult
from reclaim.tvw.scenario import ScenarioSpec, Sequence

#: Each axis and the field of :class:`Weights` it varies.
AXES = {"k_u": "underuse", "k_o": "overshoot", "k_c": "contention"}
#: The values the paper tried on each axis.
VALUES = {
    "k_u": (0.0, 1.0, 2.0, 3.0),
    "k_o": (0.0, 15000.0, 30000.0, 45000.0),
    "k_c": (0.0, 0.1, 1.0, 10.0),
}
#: rl eval's test sequences: not the training ones.
TEST_SEED = 1000
RESULT = "ablation.parquet"

#: The paper's figures at each of VALUES (None: not given). K_u: Table 3 (Alibaba traces); K_o
#: and K_c: the text of "Sensitivity with Reward/Penalty Components" (traces not named).
PAPER = {
    "k_u": {
        "util_cpu": (0.103, 0.117, 0.130, 0.179),
        "util_mem": (0.171, 0.195, 0.216, 0.298),
        "frag_cpu": (0.701, 0.695, 0.689, 0.627),
        "frag_mem": (0.646, 0.64, 0.635, 0.581),
        "machines_used": (8.967, 7.867, 7.1, 5.167),
        "overshoot_pct": (0.0, 0.0, 0.0, 0.145),
    },
    "k_o": {
        "util_cpu": (0.455, None, None, None),
        "util_mem": (0.752, None, None, None),
        "machines_used": (2.0, None, None, 6.2),
        "overshoot_pct": (2.20, 0.20, 0.15, 0.09),
    },
    "k_c": {
        "util_cpu": (0.17, None, None, 0.12),
        "util_mem": (0.28, None, None, 0.2),
    },
}


@dataclass(frozen=True)
class Point:
    """One coefficient (``axis``) at ``value``, the others at the paper's defaults."""

    axis: str
    value: float

    @property
    def weights(self) -> Weights:
        return replace(Weights(), **{AXES[self.axis]: self.value})

    @property
    def name(self) -> str:
        """Its policy's folder and label; every axis shares the default setting's."""
        return "default" if self.weights == Weights() else f"{self.axis}={self.value:g}"


def grid(axes: list[str] | None = None) -> list[Point]:
    """The paper's points on ``axes`` (default: all three), in the order of AXES and VALUES."""
    chosen = list(AXES) if axes is None else axes
    unknown = [a for a in chosen if a not in AXES]
    if unknown or not chosen:
        raise ReclaimError(f"--only: axes are {', '.join(AXES)}; got {', '.join(chosen) or 'none'}")
    return [Point(a, v) for a in AXES if a in chosen for v in VALUES[a]]


@dataclass(frozen=True)
class Trained:
    """A setting's policy under the setting's name, as a ``tvw.evaluate`` policy."""

    label: str
    path: Path

    def run(self, sequence: Sequence, spec: ScenarioSpec) -> ReplayResult:
        return Learned("tvw-rl", str(self.path)).run(sequence, spec)


def is_trained(folder: Path, iterations: int, weights: Weights, load: float, jobs: int) -> bool:
    """Whether ``folder`` holds a policy of ``iterations`` (reinforce writes policy.npz once
    training ends, with its settings). Fewer iterations: not yet (its checkpoint resumes). More,
    or other penalty weights, load or jobs: a one-line error, as training would not undo them."""
    path = folder / POLICY
    if not path.is_file():
        return False
    # policies written before policy.npz recorded jobs rely on ablation.json's (claim_output)
    trained = {"jobs": jobs} | LinearPolicy.load(path).settings
    asked = {"weights": asdict(weights), "load": load, "jobs": jobs}
    if other := [k for k, v in asked.items() if trained.get(k) != v]:
        raise ReclaimError(
            f"{folder}: trained with another {', '.join(other)}; use another --output"
        )
    return _within(path, trained.get("iterations", 0), iterations)


def _within(path: Path, done: int, iterations: int) -> bool:
    """Whether ``done`` iterations are the ``iterations`` asked for; more fail in one line."""
    if done > iterations:
        raise ReclaimError(f"{path}: {done} iterations done, more than the {iterations} asked for")
    return done == iterations


def claim_output(out: Path, meta: dict) -> None:
    """Record in ``out`` what all its policies share; refuse an ``out`` trained otherwise, which
    would mix policies (only the iterations may grow: the checkpoints resume)."""
    path = out / "ablation.json"
    try:
        saved = json.loads(path.read_text()) if path.is_file() else meta
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ReclaimError(f"{path}: not the JSON an ablation writes ({err})") from None
    if not isinstance(saved, dict):
        raise ReclaimError(f"{path}: not the JSON an ablation writes (no object)")
    if other := [k for k in meta if saved.get(k) != meta[k]]:
        raise ReclaimError(f"{path}: trained with another {', '.join(other)}; use another --output")
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(meta, indent=2) + "\n")


def train_all(
    stores: list[Path],
    load: float,
    jobs: int,
    config: TrainConfig,
    settings: dict[str, Weights],
    out: Path,
    workers: int,
    console: Console,
) -> None:
    """Train each of ``settings`` (name -> weights) into out/name unless already trained: in this
    process one after another, or on ``workers`` local processes. Every folder is checked first
    (:func:`is_trained`, and its checkpoint's iterations), so a bad one fails before any training.
    """
    todo = {}
    for name, weights in settings.items():
        folder = out / name
        if is_trained(folder, config.iterations, weights, load, jobs):
            console.print(f"{name}: trained ({config.iterations} iterations), kept")
            continue
        _within(folder / CHECKPOINT, checkpoint_iterations(folder), config.iterations)
        todo[name] = weights
    if workers == 1 or len(todo) <= 1:
        for name, weights in todo.items():
            console.print(f"{name}: training")
            run_training(stores, load, jobs, config, out / name, True, console, "tvw-rl", weights)
        return
    tasks = [(name, (stores, load, jobs, config, out / name, w)) for name, w in todo.items()]
    with count_progress("settings", console) as progress:
        bar = progress.add_task("training", total=len(todo))
        # train() pins torch to one thread per worker
        for name, _ in in_processes(_train_quietly, tasks, workers):
            progress.console.print(f"{name}: trained")
            progress.advance(bar)


def _train_quietly(
    stores: list[Path], load: float, jobs: int, config: TrainConfig, folder: Path, weights: Weights
) -> None:
    """A worker's training: its own progress bar would garble the parent's."""
    run_training(stores, load, jobs, config, folder, True, Console(quiet=True), "tvw-rl", weights)


def ablation_frame(summary: pl.DataFrame, points: list[Point]) -> pl.DataFrame:
    """One row per store and point: axis, value, setting and the summary's metrics with their
    95 % half-widths over the test sequences (``<metric>_half``; the default setting's row
    appears on every axis)."""
    by = {(r["store"], r["policy"]): r for r in summary.iter_rows(named=True)}
    cols = ["sequences", *METRICS, *(f"{m}_half" for m in METRICS)]
    rows = [
        {"store": store, "load": row["load"], "axis": p.axis, "value": p.value, "setting": p.name}
        | {c: row[c] for c in cols}
        for store in summary["store"].unique(maintain_order=True)
        for p in points
        if (row := by.get((store, p.name)))
    ]
    return pl.DataFrame(rows)


def run_ablation(
    stores: list[Path],
    load: float,
    jobs: int,
    config: TrainConfig,
    points: list[Point],
    sequences: int,
    workers: int,
    out: Path,
    console: Console,
) -> pl.DataFrame:
    """Train every setting of ``points`` at ``load`` with ``jobs`` per episode (resuming, keeping
    finished ones), evaluate each on ``sequences`` test sequences at that load, and write
    out/ablation.parquet (:func:`ablation_frame`), which it returns. The evaluation's runs and
    summary land in ``out`` too."""
    config.check()
    if workers < 1 or sequences < 1:
        raise ReclaimError("workers and sequences must be at least 1")
    stores = [
        load_store(p).path.resolve() for p in stores
    ]  # unreadable stores fail before any writing
    spec = replace(ScenarioSpec(), jobs=jobs)
    meta = {"stores": [str(p) for p in stores], "load": load, "jobs": jobs} | asdict(config)
    meta["quantisation"] = spec.quantisation  # policies of one folder learn from the same units
    del meta["iterations"], meta["checkpoint_every"]
    claim_output(out, meta)
    settings = {p.name: p.weights for p in points}
    train_all(stores, load, jobs, config, settings, out, workers, console)
    policies = [Trained(name, out / name / POLICY) for name in settings]
    _, summary = run_evaluation(stores, spec, [load], policies, sequences, TEST_SEED, out, console)
    frame = ablation_frame(summary, points)
    frame.write_parquet(out / RESULT)
    return frame


def trends(frame: pl.DataFrame) -> list[dict]:
    """Per store, axis and metric the paper gives at both ends of the axis: whether it rises (1),
    falls (-1) or stays (0) from the smallest coefficient to the largest, ours and the paper's."""
    rows = []
    for (store, axis), group in frame.group_by("store", "axis", maintain_order=True):
        group = group.sort("value")
        for metric, paper in PAPER[axis].items():
            if paper[0] is None or paper[-1] is None:
                continue
            ours = group[metric]
            rows.append(
                {
                    "store": store,
                    "axis": axis,
                    "metric": metric,
                    "ours": _direction(ours[-1] - ours[0]),
                    "paper": _direction(paper[-1] - paper[0]),
                }
            )
    return rows


def _direction(change: float) -> int:
    """1 (rises), -1 (falls) or 0 (stays, within float noise: the metrics are means)."""
    return 0 if abs(change) <= 1e-9 else int(np.sign(change))
