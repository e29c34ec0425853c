"""Train a policy again from what it records, and say whether the result is the same.

A trained policy records its environment, the data it learned from (each pool's name and
digest), its training settings and seed, and its curve (``rl.reinforce.settings`` and
``run_record``). Training is deterministic, so the same settings on the same data give the same
weights bit for bit, and a shorter run the first returns of the same curve: ``reclaim rl
retrain`` checks either. Everything is checked before training starts, so a run that could not
reproduce the policy (other data, other defaults in this version) fails at once.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from reclaim.errors import ReclaimError, TraceError
from reclaim.rl.policy import WEIGHTS, LinearPolicy
from reclaim.rl.reinforce import (
    POLICY,
    RUN_KEYS,
    TrainConfig,
    differing_keys,
    older_record,
    settings,
    training_env,
)
from reclaim.rl.rewards import Weights
from reclaim.rl.training import train_with_progress
from reclaim.tvw.scenario import LEGACY_QUANTISATION

AGENTS = {"PlacementEnv": "tvw-rl", "DeepRMEnv": "deeprm"}
# The labeller's stores are paths on the machine that trained it; the pools' digests check the data.
UNCHECKED = ("trainer", "labeler.stores")


class NotReproduced(ReclaimError):
    """A retraining that did not give the recorded policy: a finding, not bad input (exit 1)."""

    exit_code = 1


@dataclass(frozen=True)
class Retrained:
    """iterations run of the ``recorded`` ones; same_curve: their mean returns equal the
    recorded curve's first ones; same_weights: the saved weights (float16, as the recorded ones
    are) equal bit for bit (None for a shorter run, which ends elsewhere)."""

    policy: LinearPolicy
    iterations: int
    recorded: int
    same_curve: bool
    same_weights: bool | None

    @property
    def reproduced(self) -> bool:
        return self.same_curve and self.same_weights is not False


def retrain(
    path: Path,
    out: Path,
    stores: list[Path] | None = None,
    iterations: int | None = None,
    resume: bool = False,
    console=None,
) -> Retrained:
    """Train the policy at ``path`` again into ``out`` from its recorded settings (on ``stores``
    when given, else on the shipped samples it names), for ``iterations`` (default: as many as
    it ran), and compare."""
    recorded = LinearPolicy.load(path)
    saved = recorded.settings
    env = training_env(**_environment_arguments(path, saved, stores))
    _check_environment(path, saved, env)
    config = _config(path, saved, iterations)
    policy = train_with_progress(env, config, out, resume, console)
    ran, done = policy.settings["curve"], saved.get("curve", [])
    same_weights = None
    if config.iterations == saved["iterations"]:
        written = LinearPolicy.load(out / POLICY)  # as saved (float16), as the recorded one is
        same_weights = all(
            getattr(written, k).tobytes() == getattr(recorded, k).tobytes() for k in WEIGHTS
        )
    return Retrained(
        policy, config.iterations, saved["iterations"], ran == done[: len(ran)], same_weights
    )


def _environment_arguments(path: Path, saved: dict, stores: list[Path] | None) -> dict:
    """``training_env``'s arguments that built the environment ``saved`` records."""
    if saved.get("env") not in AGENTS or "config" not in saved:
        raise ReclaimError(f"{path}: records no training run to repeat (trained by an old version)")
    if not stores:
        stores = [_shipped_store(path, s["name"]) for s in _recorded_stores(path, saved)]
    labeler = saved.get("labeler")
    return {
        "stores": stores,
        "load": saved["load"],
        "jobs": saved["jobs"],
        "agent": AGENTS[saved["env"]],
        "weights": Weights(**saved["weights"]) if "weights" in saved else None,
        "classes": labeler["distance"] if labeler else "none",
        "scale": saved.get("quantisation", LEGACY_QUANTISATION)["scale"],
        "seed": saved["seed"],
        "background": saved.get("background", 0),
        "jitter": saved.get("jitter", 0),
    }


def _recorded_stores(path: Path, saved: dict) -> list[dict]:
    if "stores" not in saved:
        raise ReclaimError(
            f"{path}: records no stores (trained before they were recorded); give them with --store"
        )
    return saved["stores"]


def _shipped_store(path: Path, name: str) -> Path:
    from reclaim.traces.store import sample_path

    try:
        return sample_path(name)
    except TraceError:
        raise ReclaimError(
            f"{path}: trained on store {name!r}, no shipped sample; give its folder with --store"
        ) from None


def _check_environment(path: Path, saved: dict, env) -> None:
    """A one-line error naming what differs between the recorded environment and ``env``
    (other data, or defaults that changed since); a policy that records no stores is not
    checked for them."""
    built = settings(env)
    recorded = older_record({k: v for k, v in saved.items() if k not in RUN_KEYS}, built)
    other = [k for k in differing_keys(recorded, built) if k not in UNCHECKED]
    if other:
        raise ReclaimError(
            f"{path}: this run would differ from the recorded one in {', '.join(sorted(other))}"
        )


def _config(path: Path, saved: dict, iterations: int | None):
    """The recorded training settings (``iterations`` instead of the recorded number, if given)."""
    from reclaim.rl.vector_train import VectorConfig

    kind = VectorConfig if saved.get("trainer") == "vector" else TrainConfig
    recorded = dict(saved["config"])
    unknown = recorded.keys() - {f.name for f in fields(kind)}
    if unknown:
        raise ReclaimError(f"{path}: unknown training settings {', '.join(sorted(unknown))}")
    if iterations is not None:
        recorded["iterations"] = iterations
    return kind(**recorded).check()
