"""TVW-RL's policy network (one hidden layer of 20 ReLUs, a softmax over machines) and the trained
policy as a placement plugin.

Training builds the network in torch (:func:`network`); a trained policy is saved as four numpy
arrays and its settings (:class:`LinearPolicy`), and placement runs that forward pass in numpy, so
a trained policy places without torch or Gymnasium.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import PlacementCapabilities
from reclaim.core.component import Component
from reclaim.errors import ReclaimError
from reclaim.placement.framework import CycleState, min_max_normalize
from reclaim.registry import register

HIDDEN = 20
#: The policy shipped for the default scenario (docs/rl.md says how it was trained).
SHIPPED = "tvw_rl_policy.npz"


def network(obs_size: int, machines: int, hidden: int = HIDDEN):
    """The paper's network in torch: logits over the env's actions, ``machines`` of them (the
    machines, and hold when the env has it: ``PlacementEnv.actions``); softmax applied by the
    caller, after the mask."""
    from reclaim.rl.env import require

    nn = require("torch").nn
    return nn.Sequential(nn.Linear(obs_size, hidden), nn.ReLU(), nn.Linear(hidden, machines))


WEIGHTS = ("w1", "b1", "w2", "b2")  # a LinearPolicy's arrays, as saved


@dataclass(frozen=True)
class LinearPolicy:
    """Weights w1 (hidden, D), b1 (hidden,), w2 (M, hidden), b2 (M,) and the env settings it was
    trained on (``settings``: machines, units, history, queue_slots, classes, ...)."""

    w1: NDArray[np.float32]
    b1: NDArray[np.float32]
    w2: NDArray[np.float32]
    b2: NDArray[np.float32]
    settings: dict

    @classmethod
    def from_network(cls, net, settings: dict) -> LinearPolicy:
        first, last = net[0], net[2]
        arrays = [p.detach().cpu().numpy().astype(np.float32) for p in (first.weight, first.bias)]
        arrays += [p.detach().cpu().numpy().astype(np.float32) for p in (last.weight, last.bias)]
        return cls(*arrays, settings=settings)

    def logits(self, obs: NDArray) -> NDArray[np.float32]:
        """(B, M) logits of observations (B, D)."""
        hidden = np.maximum(obs @ self.w1.T + self.b1, 0.0)
        return hidden @ self.w2.T + self.b2

    def act(self, obs: NDArray, mask: NDArray[np.bool_]) -> NDArray[np.int64]:
        """(B,) the most probable unmasked machine of each observation (greedy placement)."""
        return np.where(mask, self.logits(obs), -np.inf).argmax(axis=1)

    def save(self, path: str | Path) -> Path:
        """Compressed npz, weights in float16 (the shipped file stays small)."""
        path = Path(path)
        arrays = {k: getattr(self, k).astype(np.float16) for k in WEIGHTS}
        np.savez_compressed(path, settings=json.dumps(self.settings), **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path | None = None) -> LinearPolicy:
        """From ``path`` (default: the shipped policy)."""
        path = Path(path) if path else Path(str(files("reclaim").joinpath("data", SHIPPED)))
        if not path.is_file():
            raise ReclaimError(f"{path}: no trained policy there (train one: reclaim rl train)")
        try:
            with np.load(path) as z:
                arrays = {k: z[k].astype(np.float32) for k in WEIGHTS}
                settings = json.loads(str(z["settings"]))
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
            # a truncated, empty or foreign file: say which, not how numpy failed to read it
            # (EOFError too: the command line would print only "Aborted.")
            problem = str(err) or type(err).__name__
            raise ReclaimError(
                f"{path}: not a policy saved by reclaim rl train ({problem})"
            ) from None
        return cls(**arrays, settings=settings)


@register("placement", "tvw-rl")
class TVWRL(Component):
    """The trained policy as a placement plugin: scores are its logits over machines.

    It needs the TVW state (machine images, queue), which a CycleState does not hold: the caller
    that steps the replay (``rl.evaluate``) sets ``observe`` to a function returning the current
    (D,) observation. ``path``: a saved policy (default: the shipped one).
    """

    # not monotone: the score depends on the whole cluster state, not on free capacity alone;
    # stateful: it needs ``observe``, so the generic plugin checks cannot drive it
    __capabilities__ = PlacementCapabilities(stateful=True, observes=True)

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.observe = None

    def score(self, state: CycleState, feasible):
        """(B, H) the policy's logits for the current state, the same for every row."""
        if self.observe is None:
            raise ReclaimError("tvw-rl places from the TVW state; run it with reclaim rl eval")
        if not hasattr(self, "policy_"):
            self.policy_ = LinearPolicy.load(self.path)
        logits = self.policy_.logits(self.observe()[None, :])[0]
        if len(logits) != feasible.shape[1]:
            raise ReclaimError(
                f"tvw-rl policy has {len(logits)} actions, not {feasible.shape[1]} machines (a "
                "policy with the hold action places through rl.evaluate.run_learned)"
            )
        return np.broadcast_to(logits, feasible.shape)

    normalize = staticmethod(min_max_normalize)
