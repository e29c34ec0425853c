"""Time-varying workloads (TVW-RL): the pool of real usage records in units, the scenario
(sequences of workloads arriving at a target load), the replay on a cluster, and the evaluation."""

from reclaim.tvw.evaluate import Policy, evaluate, run_policy, summarize
from reclaim.tvw.pool import Pool, load_pool
from reclaim.tvw.replay import Replay, ReplayResult
from reclaim.tvw.scenario import ScenarioSpec, Sequence, sample_sequence

__all__ = [
    "Policy",
    "Pool",
    "Replay",
    "ReplayResult",
    "ScenarioSpec",
    "Sequence",
    "evaluate",
    "load_pool",
    "run_policy",
    "sample_sequence",
    "summarize",
]
