"""Training behind a progress bar: one sequence per iteration (``rl.reinforce``) or TVW-RL at
the paper's volume (``rl.vector_train``). Kept apart from both trainers because it chooses
between them, and the vectorised one reuses the REINFORCE trainer's pieces."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from reclaim.errors import ReclaimError
from reclaim.rl.env import PlacementEnv
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.reinforce import TrainConfig, train, training_env
from reclaim.rl.rewards import Weights
from reclaim.rl.vector_train import VectorConfig, train_vectorised


def train_with_progress(env, config, out: Path, resume: bool = False, console=None) -> LinearPolicy:
    """:func:`train` (a ``TrainConfig``: one sequence per iteration) or, for a
    ``rl.vector_train.VectorConfig``, the vectorised trainer, behind a progress bar (mean return)."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from reclaim.progress import LoggedProgress

    vectorised = isinstance(config, VectorConfig)
    if vectorised and not isinstance(env, PlacementEnv):
        raise ReclaimError("the vectorised trainer trains TVW-RL's placement, not DeepRM")
    with LoggedProgress(
        TextColumn("training"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("return {task.fields[ret]:,.0f}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
    ) as progress:
        bar = progress.add_task("", total=config.iterations, ret=float("nan"))

        def tick(i: int, mean_return: float) -> None:
            progress.update(bar, completed=i + 1, ret=mean_return)

        trainer = train_vectorised if vectorised else train
        return trainer(env, config, out, resume, tick)


def run_training(
    stores: list[Path],
    load: float,
    jobs: int,
    config: TrainConfig,
    out: Path,
    resume: bool = False,
    console=None,
    agent: str = "tvw-rl",
    weights: Weights | None = None,
    classes: str = "none",
    vectorised: bool = False,
    scale: str | None = None,
    background: int = 0,
    jitter: int = 0,
) -> LinearPolicy:
    """:func:`training_env` trained with ``config`` into ``out``. ``vectorised``: TVW-RL at the
    paper's volume (``rl.vector_train``: every training sequence x ``trajectories`` episodes per
    iteration; the fused first layer with one class) instead of one sequence per iteration."""
    env = training_env(
        stores, load, jobs, agent, weights, classes, scale, config.seed, background, jitter
    )
    if vectorised:
        config = VectorConfig(**asdict(config) | {"fused": classes == "none"})
    return train_with_progress(env, config, out, resume, console)
