"""REINFORCE for TVW-RL (the paper's training: Adam, learning rate 0.001, 20 trajectories per
iteration, episodes of 200 workloads), batched.

Each iteration replays one training sequence (cycling over ``sequences`` drawn once from the
pools) with ``trajectories`` copies of the environment stepped in lockstep: one forward pass acts
for all of them (the speed trick: 20x fewer network calls than stepping each copy alone); copies
that hold take more decisions than ``jobs``, and those that finish first are padded. The baseline is
DeepRM's: the mean return-to-go over the copies at the same decision; the advantages are then
scaled by their standard deviation, as the penalties run to millions.

Randomness: the network's initialisation from ``seed``, each iteration's action sampling from
(seed, iteration), so a resumed run continues exactly as an uninterrupted one would.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from reclaim.errors import ReclaimError
from reclaim.rl.env import PlacementEnv, require
from reclaim.rl.policy import LinearPolicy, network
from reclaim.rl.rewards import Weights
from reclaim.rl.running_classes import RunningClasses, check_classes, labeller_settings
from reclaim.tvw.scenario import LEGACY_QUANTISATION, sample_sequence

CHECKPOINT = "checkpoint.pt"
POLICY = "policy.npz"


@dataclass(frozen=True)
class TrainConfig:
    """iterations of ``trajectories`` episodes each; ``sequences`` in the training set; Adam's
    learning rate; checkpoint every ``checkpoint_every`` iterations."""

    iterations: int = 2000
    trajectories: int = 20
    sequences: int = 100
    lr: float = 1e-3
    seed: int = 0
    checkpoint_every: int = 10

    def check(self) -> TrainConfig:
        for name in ("iterations", "trajectories", "sequences", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ReclaimError(f"{name} must be at least 1")
        if not self.lr > 0:
            raise ReclaimError("lr must be above 0")
        return self


def training_set(env: PlacementEnv, config: TrainConfig) -> list:
    """The training sequences, drawn from the env's pools with (seed, k)."""
    if not env.pools:
        raise ReclaimError("training needs a pool of workloads")
    out = []
    for k in range(config.sequences):
        rng = np.random.default_rng([config.seed, k])
        pool = env.pools[k % len(env.pools)]
        out.append(sample_sequence(pool, env.spec, env.load, rng, rng))
    return out


def rollout(envs: list, sequence, net, generator):
    """Step ``envs`` in lockstep on ``sequence`` sampling from ``net``; returns observations
    (T, N, D), masks (T, N, A), actions (T, N), rewards (T, N) and alive (T, N) as tensors.
    An episode that ends early (DeepRM's holds make lengths differ) is padded: not alive, reward 0.
    """
    torch = require("torch")
    rng = np.random.default_rng(0)  # unused: the sequence is given
    first = [env.reset(rng, sequence) for env in envs]
    obs = np.stack([o for o, _ in first])
    mask = np.stack([i["action_mask"] for _, i in first])
    observations, masks, actions, rewards, alive = [], [], [], [], []
    done = np.zeros(len(envs), bool)
    while not done.all():
        mask[done] = True  # padding rows: any action, weighted 0 in the loss
        o, m = torch.from_numpy(obs.copy()), torch.from_numpy(mask.copy())  # obs, mask are reused
        with torch.no_grad():
            logits = net(o).masked_fill(~m, -torch.inf)
            a = torch.multinomial(torch.softmax(logits, dim=1), 1, generator=generator)[:, 0]
        r = np.zeros(len(envs))
        alive.append(torch.from_numpy(~done))
        chosen = a.tolist()  # python ints: indexing the tensor per env costs more than a step
        for b, env in enumerate(envs):
            if not done[b]:
                obs[b], r[b], terminated, truncated, info = env.step(chosen[b])
                done[b] = terminated or truncated
                mask[b] = info["action_mask"]
        observations.append(o)
        masks.append(m)
        actions.append(a)
        rewards.append(torch.from_numpy(r))
    stack = torch.stack
    return stack(observations), stack(masks), stack(actions), stack(rewards), stack(alive)


def loss_of(net, observations, masks, actions, rewards, alive):
    """REINFORCE loss with the time-based baseline (module docstring)."""
    torch = require("torch")
    returns = rewards.flip(0).cumsum(0).flip(0)  # (T, N) return-to-go, undiscounted
    advantage = returns - returns.mean(dim=1, keepdim=True)
    advantage = advantage / (advantage.std() + 1e-8)
    logits = net(observations.flatten(0, 1)).masked_fill(~masks.flatten(0, 1), -torch.inf)
    logp = torch.log_softmax(logits, dim=1).gather(1, actions.reshape(-1, 1))[:, 0]
    weight = alive.reshape(-1).float()
    return -(logp * advantage.reshape(-1).float() * weight).sum() / weight.sum()


def train(
    env: PlacementEnv,
    config: TrainConfig,
    out: Path,
    resume: bool = False,
    on_iteration: Callable[[int, float], None] | None = None,
    sequences: list | None = None,
) -> LinearPolicy:
    """Train, checkpointing to ``out``; returns the policy (also saved as out/policy.npz).

    ``on_iteration(i, mean_return)`` after each iteration (progress); ``sequences``: the training
    set (default: :func:`training_set`).
    """
    torch = require("torch")
    config.check()
    setup = settings(env)  # before training: a labeler it cannot record fails now
    sequences = sequences or training_set(env, config)
    net, optimiser, start, history = start_training(env, config, out, resume, setup)
    envs = [replace(env) for _ in range(config.trajectories)]
    for i in range(start, config.iterations):
        generator = torch.Generator().manual_seed(config.seed * 1_000_003 + i)
        batch = rollout(envs, sequences[i % len(sequences)], net, generator)
        loss = loss_of(net, *batch)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        mean_return = float(batch[3].sum(0).mean())
        history.append(mean_return)
        if on_iteration is not None:
            on_iteration(i, mean_return)
        save_checkpoint(out, i, config, net, optimiser, history, setup)
    policy = LinearPolicy.from_network(net, setup | run_record(env, config, history))
    policy.save(out / POLICY)
    return policy


def start_training(env, config, out: Path, resume: bool, setup: dict, legacy: bool = True):
    """The network (seeded with ``config.seed``) and Adam (``config.lr``) of a training run
    into ``out`` (created), and (first iteration, returns so far): with ``resume`` and a
    checkpoint there, its state (one-line error when it was saved with other settings than
    ``config`` and ``setup``, or ran more iterations), else (0, []). ``legacy``: a checkpoint
    without recorded settings takes them from out/policy.npz."""
    torch = require("torch")
    # The network is tiny: torch's thread pool costs more than it gains (milliseconds per call on
    # two cores, benchmarks/bench_rl.py), and one thread makes runs reproducible.
    torch.set_num_threads(1)
    torch.manual_seed(config.seed)
    net = network(env.obs_size, env.actions)
    optimiser = torch.optim.Adam(net.parameters(), lr=config.lr)
    out.mkdir(parents=True, exist_ok=True)
    if not (resume and (out / CHECKPOINT).is_file()):
        return net, optimiser, 0, []
    state = load_checkpoint(out)
    recorded = state.get("settings") or (_policy_settings(out) if legacy else {})
    if recorded:
        recorded = older_record(recorded, setup)
    if "labeler" in recorded:
        recorded["labeler"] = labeller_settings(recorded["labeler"])
    saved = state["config"] | recorded
    asked = asdict(config) | setup | {"iterations": state["config"]["iterations"]}
    other = sorted(differing_keys(saved, asked))
    if other:
        raise ReclaimError(
            f"{out / CHECKPOINT}: saved with other settings ({', '.join(other)}); drop --resume"
        )
    if state["iteration"] > config.iterations:  # else its policy would pass for a shorter run
        raise ReclaimError(
            f"{out / CHECKPOINT}: {state['iteration']} iterations done, more than the "
            f"{config.iterations} asked for"
        )
    net.load_state_dict(state["net"])
    optimiser.load_state_dict(state["optimiser"])
    return net, optimiser, state["iteration"], state["history"]


def differing_keys(saved: dict, asked: dict, prefix: str = "") -> list[str]:
    """The keys whose values differ, a nested dict's as ``key.inner`` (so that a refusal says
    which of a labeller's settings changed)."""
    out = []
    for key in saved.keys() | asked.keys():
        a, b = saved.get(key), asked.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += differing_keys(a, b, f"{prefix}{key}.")
        elif a != b:
            out.append(f"{prefix}{key}")
    return out


def run_record(env, config, history: list) -> dict:
    """What a trained policy records of its run beside the env's settings: iterations, workloads
    per episode, seed, the training settings and the curve (the mean return of every iteration)."""
    return {
        "iterations": config.iterations,
        "jobs": env.spec.jobs,
        "seed": config.seed,
        "config": asdict(config),
        "curve": history,
    }


def save_checkpoint(out: Path, i: int, config, net, optimiser, history: list, setup: dict) -> None:
    """After iteration ``i``: write out/checkpoint.pt when due (every ``checkpoint_every``
    iterations, and the last)."""
    if (i + 1) % config.checkpoint_every == 0 or i + 1 == config.iterations:
        state = {
            "net": net.state_dict(),
            "optimiser": optimiser.state_dict(),
            "iteration": i + 1,
            "history": history,
            "config": asdict(config),
            "settings": setup,
        }
        require("torch").save(state, out / CHECKPOINT)


RUN_KEYS = ("iterations", "jobs", "seed", "config", "curve")  # run_record's, not the env's


def older_record(recorded: dict, built: dict) -> dict:
    """A policy's or checkpoint's recorded env settings with what older ones left out: the
    legacy quantisation, no noise, and the stores (not recorded: not checkable) as ``built``
    (the settings of the env now built) has them."""
    before = {"quantisation": LEGACY_QUANTISATION, "background": 0, "jitter": 0}
    return before | {"stores": built.get("stores")} | recorded


def _policy_settings(out: Path) -> dict:
    """The env settings of out/policy.npz, for a checkpoint saved before checkpoints recorded
    them (config only): the policy of the same training does. Neither: a one-line error."""
    if not (out / POLICY).is_file():
        raise ReclaimError(
            f"{out / CHECKPOINT}: checkpoint predates recorded settings; drop --resume"
        )
    saved = LinearPolicy.load(out / POLICY).settings
    return {k: v for k, v in saved.items() if k not in RUN_KEYS}


def load_checkpoint(folder: Path) -> dict:
    """The checkpoint in ``folder``, or a one-line error if it cannot be read (a run killed while
    writing it leaves a truncated file)."""
    path = folder / CHECKPOINT
    try:
        state = require("torch").load(path, weights_only=False)
    except (OSError, EOFError, RuntimeError, ValueError, pickle.PickleError) as err:
        raise ReclaimError(
            f"{path}: unreadable checkpoint ({err}); delete it to start over"
        ) from err
    if not isinstance(state, dict) or "iteration" not in state:
        raise ReclaimError(f"{path}: not a checkpoint written by reclaim rl train")
    return state


def checkpoint_iterations(folder: Path) -> int:
    """Iterations done by the checkpoint in ``folder`` (0: none)."""
    if not (folder / CHECKPOINT).is_file():
        return 0
    return int(load_checkpoint(folder)["iteration"])


def make_agent_env(agent: str, pools, spec, load: float, classes: str = "none", seed: int = 0):
    """The environment ``agent`` learns in: tvw-rl's placement env or DeepRM's selection env.
    ``classes``: none (one class) or the distance of tvw-rl's equivalence classes, re-predicted
    as workloads run (``rl.running_classes``, fitted on ``pools`` with ``seed``)."""
    from reclaim.rl.deeprm import DeepRMEnv

    kinds = {"tvw-rl": PlacementEnv, "deeprm": DeepRMEnv}
    if agent not in kinds:
        raise ReclaimError(f"agent must be tvw-rl or deeprm, not {agent!r}")
    check_classes(classes)
    env = kinds[agent](pools, spec, load)
    if classes == "none":
        return env
    if agent != "tvw-rl":
        raise ReclaimError("equivalence classes label TVW-RL's state, not DeepRM's")
    labeler = RunningClasses(classes, seed=seed).fit(pools, spec)
    return replace(env, labeler=labeler, classes=labeler.classes_)


def settings(env) -> dict:
    """What a saved policy needs to rebuild its environment (a labeler: how to fit it again),
    and the data it learns from (each pool's name and digest, which a retraining checks)."""
    labeler = getattr(env, "labeler", None)  # DeepRM's env has none
    if not (labeler is None or isinstance(labeler, RunningClasses)):
        raise ReclaimError("a policy can record no labeler but rl.running_classes.RunningClasses")
    return {
        "env": type(env).__name__,
        "stores": [{"name": pool.name, "digest": pool.digest()} for pool in env.pools],
        "machines": env.spec.machines,
        "units": env.spec.units,
        "history": env.history,
        "queue_slots": env.queue_slots,
        "load": env.load,
        "quantisation": env.spec.quantisation,
        "background": env.spec.background,
        "jitter": env.spec.jitter,
        **({"weights": asdict(env.weights)} if hasattr(env, "weights") else {}),
        **(
            {"hold": env.hold, "queue_images": env.queue_images, "hold_limit": env.hold_limit}
            if hasattr(env, "hold")
            else {}
        ),
        **({"slot_images": env.slot_images} if hasattr(env, "slot_images") else {}),
        **({"labeler": labeler.settings()} if labeler is not None else {}),
    }


def evaluate_return(env, policy: LinearPolicy, sequence) -> float:
    """Return of one greedy episode of ``policy`` on ``sequence`` (numpy only)."""
    obs, info = env.reset(np.random.default_rng(0), sequence)
    total, done = 0.0, False
    while not done:
        action = policy.act(obs[None, :], info["action_mask"][None, :])[0]
        obs, reward, terminated, truncated, info = env.step(int(action))
        total += reward
        done = terminated or truncated
    return total


def training_env(
    stores: list[Path],
    load: float,
    jobs: int,
    agent: str = "tvw-rl",
    weights: Weights | None = None,
    classes: str = "none",
    scale: str | None = None,
    seed: int = 0,
    background: int = 0,
    jitter: int = 0,
):
    """The environment ``agent`` (tvw-rl or deeprm) learns in: pools from ``stores``, the paper's
    default environment at ``load`` with ``jobs`` per episode. ``weights``: TVW-RL's penalty
    weights (the paper's by default; its Table 3 ablations vary them). ``classes``: TVW-RL's
    equivalence classes, fitted with ``seed`` (:func:`make_agent_env`). ``scale``: how usage
    becomes units (``ScenarioSpec.scale``; None: the default), recorded in the policy.
    ``background``, ``jitter``: the paper's noise (``ScenarioSpec``; its Table 2)."""
    from reclaim.tvw.scenario import ScenarioSpec, load_pools

    noise = {"background": background, "jitter": jitter}
    spec = replace(ScenarioSpec(), jobs=jobs, **({"scale": scale} if scale else {}), **noise)
    spec = spec.check()
    pools = load_pools(stores, spec)
    env = make_agent_env(agent, pools, spec, load, classes, seed)
    if weights is None:
        return env
    if agent != "tvw-rl":
        raise ReclaimError("penalty weights K_c, K_u, K_o, K_w are TVW-RL's, not DeepRM's")
    return replace(env, weights=weights)
