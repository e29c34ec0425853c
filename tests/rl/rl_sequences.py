"""A hand sequence, a small environment and a recorded random episode for the RL tests."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from reclaim.core.grouped import GroupedArray
from reclaim.rl.env import PlacementEnv
from reclaim.tvw.scenario import ScenarioSpec, Sequence


def sequence(series, arrival) -> Sequence:
    """Workloads using ``series[j]`` (steps x (cpu, mem) units), arriving at ``arrival`` steps."""
    usage = GroupedArray.from_series([np.array(s, np.int16) for s in series])
    n = len(series)
    flags, zeros = np.zeros(n, bool), np.zeros(n, np.int64)
    return Sequence(usage, np.array(arrival, np.int64), flags, flags, zeros, zeros, 1.0)


# Workload 0 uses (2, 1) then (3, 1); 1 uses (1, 1) for a step; 2 uses (4, 4) for two steps.
SEQ = sequence([[[2, 1], [3, 1]], [[1, 1]], [[4, 4], [4, 4]]], [0, 0, 1])


def small_env(machines: int = 3, units: int = 8, **params) -> PlacementEnv:
    spec = replace(ScenarioSpec(), machines=machines, units=units, jobs=3, max_units=4)
    return PlacementEnv(spec=spec, history=4, **params)


def episode(env, drawn: Sequence, seed: int, explore: float = 0.3) -> list:
    """Everything an episode of ``env`` on ``drawn`` shows (observations, masks, rewards, penalties,
    ends, the replay), with random actions: a share ``explore`` of them any action (possibly
    masked, or DeepRM's hold), the others unmasked."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(rng, drawn)
    seen, done = [obs.tobytes(), info["action_mask"].tobytes()], False
    while not done:
        if rng.random() < explore:
            action = int(rng.integers(env.actions))
        else:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
        penalties = {k: v for k, v in info.items() if k != "action_mask"}
        seen += [obs.tobytes(), info["action_mask"].tobytes(), reward, penalties]
        seen += [terminated, truncated]
        done = terminated or truncated
    replay = env.replay
    seen += [replay.host_.tolist(), replay.start_.tolist(), replay.now]
    if replay.done:
        seen.append(replay.result().usage.tobytes())
    return seen + [getattr(env, "totals_", None)]
