"""Training curves of learned placers: the mean episode return of every REINFORCE iteration, as a
trained policy.npz records it, with a rolling mean (an iteration that replays one training
sequence moves with that sequence: the mean then spans one pass over the training set)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display is needed or assumed

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from reclaim.errors import ReclaimError  # noqa: E402
from reclaim.rl.policy import LinearPolicy  # noqa: E402

WINDOW = 20  # iterations in the rolling mean where each replays every training sequence


def curve(path: Path) -> tuple[str, np.ndarray, int]:
    """(title, returns, window of the rolling mean) of the policy at ``path``; a one-line error if
    it records no curve (those trained before policies kept one)."""
    settings = LinearPolicy.load(path).settings
    returns = np.asarray(settings.get("curve", []), np.float64)
    if not len(returns):
        raise ReclaimError(f"{path}: records no training curve (trained before policies kept one)")
    agent = "DeepRM" if settings.get("env") == "DeepRMEnv" else "TVW-RL"
    every = settings.get("trainer") == "vector"
    trainer = "every sequence per iteration" if every else "one sequence per iteration"
    window = WINDOW if every else settings.get("config", {}).get("sequences", WINDOW)
    seed = settings.get("seed", "not recorded")
    title = f"{agent}, {settings.get('load', 0):.0%} load, {trainer}, seed {seed}"
    return title, returns, window


def rolling_mean(values: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """Mean of the last ``window`` values at each point (fewer at the start)."""
    sums = np.cumsum(np.concatenate([[0.0], values]))
    ends = np.arange(1, len(values) + 1)
    starts = np.maximum(ends - window, 0)
    return (sums[ends] - sums[starts]) / (ends - starts)


def plot_curves(paths: list[Path], out: Path) -> Path:
    """One panel per policy (their returns differ in scale by agent): every iteration's mean
    return and its rolling mean."""
    curves = [curve(p) for p in paths]
    fig, axes = plt.subplots(len(curves), 1, figsize=(8, 3 * len(curves)), squeeze=False)
    for ax, (title, returns, window) in zip(axes[:, 0], curves, strict=True):
        x = np.arange(1, len(returns) + 1)
        ax.plot(x, returns, color="0.75", lw=0.6, label="iteration")
        ax.plot(x, rolling_mean(returns, window), color="C0", label=f"mean of {window}")
        ax.set(title=title, xlabel="iteration", ylabel="mean episode return")
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=110)
    except OSError as err:
        raise ReclaimError(f"{out}: cannot write the chart ({err.strerror or err})") from err
    finally:
        plt.close(fig)
    return out
