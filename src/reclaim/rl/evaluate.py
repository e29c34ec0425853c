"""Learned placers on the TVW scenario, beside the heuristics of ``tvw.evaluate``.

A learned placer is bound to its environment's state, so it replays a sequence one decision at a
time through the placement framework (:func:`run_learned`, DeepRM's :func:`~reclaim.rl.deeprm.
run_deeprm`); :class:`Learned` gives it the ``label``/``run`` of a ``tvw.evaluate`` policy, so the
same sequences, metrics, tables and charts serve both. :func:`paper_comparison` sets our figures
against the paper's claims.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cache

import numpy as np
import polars as pl

from reclaim.errors import ReclaimError
from reclaim.metrics.intervals import t_half_width
from reclaim.placement import Placer
from reclaim.rl.deeprm import SHIPPED as DEEPRM_SHIPPED
from reclaim.rl.deeprm import DeepRMEnv, run_deeprm
from reclaim.rl.env import PlacementEnv
from reclaim.rl.policy import SHIPPED, LinearPolicy
from reclaim.rl.running_classes import RunningClasses, check_classes
from reclaim.tvw.replay import ReplayResult
from reclaim.tvw.scenario import LEGACY_QUANTISATION, ScenarioSpec, Sequence

#: The paper's claims for TVW-RL (abstract and "Improvements in Operational Excellence").
CLAIMS = {
    "util_vs_deeprm_pct": (30.0, 100.0),
    "frag_vs_deeprm_pct": (-50.0, -5.0),
    "frag_vs_tetris_pct": (-13.0, -6.0),
    "machines_vs_deeprm_pct": (-50.0, -8.0),
}


def run_learned(sequence: Sequence, placer: Placer, env: PlacementEnv) -> ReplayResult:
    """Replay ``sequence`` in ``env`` placing each decision's subject (``PlacementEnv.subject``)
    with ``placer``. An env with the hold action is driven by the policy itself (greedy over the
    mask, hold included): a placer can only name a machine."""
    if env.hold:
        policy = placer.declaring("observes")[0]
        network = LinearPolicy.load(policy.path)
        if network.w2.shape[0] != env.actions:
            raise ReclaimError(
                f"tvw-rl policy has {network.w2.shape[0]} actions, the environment {env.actions}"
            )
        obs, info = env.reset(np.random.default_rng(0), sequence)
        done = False
        while not done:
            action = network.act(obs[None, :], info["action_mask"][None, :])[0]
            obs, _, terminated, truncated, info = env.step(int(action))
            done = terminated or truncated
        return env.replay.result()
    for plugin in placer.declaring("observes"):
        plugin.observe = lambda: obs  # late-bound: the observation of the current step
    obs, _ = env.reset(np.random.default_rng(0), sequence)
    replay = env.replay
    while not replay.done:
        subject = [env.subject()]
        host = placer.place(replay.capacity_, replay.free(), replay.up_, replay.demand(subject))[0]
        if host < 0:
            raise ReclaimError("the placer found no machine for a workload the environment fits")
        obs, *_ = env.step(int(host))
    return replay.result()


@dataclass(frozen=True)
class Learned:
    """A learned placer (``tvw-rl`` or ``deeprm``), its saved policy (None: the shipped one) and
    the equivalence classes it was trained with (none, temporal, dtw: checked against the
    policy's settings, from which its labeller is fitted again). Labelled by its name, its
    classes unless none and its ``tag`` if any (``tvw-rl+temporal``, ``tvw-rl:noise3``), so
    runs with and without them, or of several policies, sit side by side."""

    name: str
    path: str | None = None
    classes: str = "none"
    tag: str = ""

    def __post_init__(self) -> None:
        if self.name not in ("tvw-rl", "deeprm"):
            raise ReclaimError(f"learned placer must be tvw-rl or deeprm, not {self.name!r}")
        check_classes(self.classes)

    @property
    def label(self) -> str:
        label = self.name if self.classes == "none" else f"{self.name}+{self.classes}"
        return f"{label}:{self.tag}" if self.tag else label

    @property
    def policy_path(self) -> str:
        from importlib.resources import files

        default = DEEPRM_SHIPPED if self.name == "deeprm" else SHIPPED
        return self.path or str(files("reclaim").joinpath("data", default))

    @property
    def quantisation(self) -> dict:
        """How the pools it was trained on turned usage into units (``ScenarioSpec.
        quantisation``); a policy that records none was trained before there was a choice."""
        saved = LinearPolicy.load(self.policy_path).settings
        return dict(saved.get("quantisation", LEGACY_QUANTISATION))

    def environment(self, spec: ScenarioSpec) -> PlacementEnv | DeepRMEnv:
        """The environment the policy was trained in, on ``spec``: its shape and labeller."""
        path = self.policy_path
        trained = LinearPolicy.load(path).settings
        if trained.get("machines") != spec.machines or trained.get("units") != spec.units:
            raise ReclaimError(
                f"{path}: trained for {trained.get('machines')} machines of "
                f"{trained.get('units')} units, not {spec.machines} of {spec.units}"
            )
        saved = trained.get("labeler")
        distance = saved["distance"] if saved else "none"
        if distance != self.classes:
            raise ReclaimError(f"{path}: trained with --classes {distance}, not {self.classes}")
        shape = {"history": trained["history"], "queue_slots": trained["queue_slots"]}
        if self.name == "deeprm":
            # A selector trained before the slot images records none: the earlier state.
            return DeepRMEnv(spec=spec, **shape, slot_images=trained.get("slot_images", False))
        # A policy trained before the hold action records neither: the earlier environment.
        mdp = {k: trained.get(k, False) for k in ("hold", "queue_images")}
        env = PlacementEnv(spec=spec, **shape, **mdp, hold_limit=trained.get("hold_limit"))
        if saved is None:
            return env
        labeler = _labeler(json.dumps(saved, sort_keys=True))
        return replace(env, labeler=labeler, classes=labeler.classes_)

    def run(self, sequence: Sequence, spec: ScenarioSpec) -> ReplayResult:
        env = self.environment(spec)
        placer = Placer.from_config([{"name": self.name, "params": {"path": self.policy_path}}])
        return (run_deeprm if self.name == "deeprm" else run_learned)(sequence, placer, env)


def trained_scenario(policies: list, spec: ScenarioSpec) -> ScenarioSpec:
    """``spec`` with the quantisation the learned ``policies`` (those with ``quantisation``)
    were trained in, so that they are evaluated on the units they learned from (and the
    heuristics beside them on the same); learned policies trained on different ones cannot
    share sequences: a one-line error."""
    learned = [p for p in policies if hasattr(p, "quantisation")]
    if not learned:
        return spec
    first = learned[0].quantisation
    for other in learned[1:]:
        if other.quantisation != first:
            raise ReclaimError(
                f"{learned[0].policy_path} was trained on usage quantised as {first}, "
                f"{other.policy_path} as {other.quantisation}: they cannot share sequences"
            )
    return replace(spec, **first).check()


@cache
def _labeler(saved: str) -> RunningClasses:
    """The labeller of a policy's settings (JSON), fitted once per process: a fit takes seconds
    and :meth:`Learned.run` runs once per sequence."""
    return RunningClasses.rebuild(json.loads(saved))


def paired_against(runs: pl.DataFrame, baseline: str = "best-fit") -> pl.DataFrame:
    """Per store, load and TVW-RL policy other than ``baseline`` (a placer's label without its
    view): its overshoot (pp) and machines used minus the baseline's on the same sequences, the
    mean difference with its 95 % t-interval and the paired t-test's two-sided p-value (no
    difference)."""
    frame = runs.with_columns(policy=pl.col("policy").str.split("@").list.first())
    base = frame.filter(pl.col("policy") == baseline)
    rows = []
    labels = frame["policy"].unique(maintain_order=True)
    for label in [p for p in labels if p.startswith("tvw-rl") and p != baseline]:
        ours = frame.filter(pl.col("policy") == label)
        pairs = ours.join(
            base, on=["store", "load", "sequence"], suffix="_base", maintain_order="left"
        )
        for (store, load), group in pairs.group_by("store", "load", maintain_order=True):
            row = {"store": store, "load": load, "tvw_rl": label, "against": baseline}
            row["sequences"] = group.height
            for metric in ("overshoot_pct", "machines_used"):
                d = (group[metric] - group[f"{metric}_base"]).to_numpy()
                half = float(t_half_width(np.std(d, ddof=1), len(d))) if len(d) > 1 else np.nan
                p = _paired_p(d)
                row |= {
                    f"{metric}_diff": float(d.mean()),
                    f"{metric}_diff_lo": float(d.mean() - half),
                    f"{metric}_diff_hi": float(d.mean() + half),
                    f"{metric}_p": float(p),
                }
            rows.append(row)
    return pl.DataFrame(rows)


def _paired_p(d: np.ndarray) -> float:
    """The paired t-test's p for differences ``d``. A difference the same on every sequence (to
    float rounding) has no spread to test; we take it as it is: p 1 when it is zero, else 0 (as
    scipy does for an exact constant, with a warning)."""
    if len(d) < 2:
        return np.nan
    if np.ptp(d) <= 1e-9 * max(1.0, float(np.abs(d).max())):
        return 0.0 if np.abs(d).max() > 1e-9 else 1.0
    from scipy import stats

    return float(stats.ttest_rel(d, np.zeros_like(d)).pvalue)


def paper_comparison(summary: pl.DataFrame) -> pl.DataFrame:
    """Per store, load and TVW-RL policy (``tvw_rl``: its label, with its classes if any), its
    change in % against DeepRM and Tetris: utilisation (mean of CPU and memory), fragmentation
    (likewise) and machines used, with the paper's claimed range."""
    frame = summary.with_columns(
        util=(pl.col("util_cpu") + pl.col("util_mem")) / 2,
        frag=(pl.col("frag_cpu") + pl.col("frag_mem")) / 2,
        policy=pl.col("policy").str.split("@").list.first(),
    )
    rows = []
    for (store, load), group in frame.group_by("store", "load", maintain_order=True):
        by = {r["policy"]: r for r in group.iter_rows(named=True)}
        for label in [p for p in by if p.startswith("tvw-rl")]:
            ours = by[label]

            def change(metric, other, by=by, ours=ours):
                base = by.get(other, {}).get(metric)
                return 100.0 * (ours[metric] - base) / base if base else None

            rows.append(
                {
                    "store": store,
                    "load": load,
                    "tvw_rl": label,
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
