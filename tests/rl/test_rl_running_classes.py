"""Equivalence classes re-predicted as workloads run (the paper's Algorithm 1, line 8): the env's
lookup by age, the fixed-label paths unchanged, a seeded labeller, and the --classes option from
training to evaluation."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rl_sequences import episode, sequence, small_env

from cli_runner import reclaim
from reclaim.errors import ReclaimError
from reclaim.rl.env import PlacementEnv, ReferencePlacementEnv
from reclaim.rl.evaluate import Learned
from reclaim.rl.policy import LinearPolicy
from reclaim.rl.reinforce import CHECKPOINT, TrainConfig, make_agent_env, train
from reclaim.rl.running_classes import RunningClasses
from reclaim.traces.store import sample_path
from reclaim.tvw.scenario import ScenarioSpec, sample_sequence

# Four workloads of one unit per resource; w3 arrives after the others are placed.
AGING = sequence([[[1, 1]] * 8, [[1, 1]] * 8, [[1, 1]] * 8, [[1, 1]] * 3], [0, 1, 2, 6])
# Their class after 1..4 steps seen: w0 changes at every age, w3 only after arrival.
TABLE = np.array([[1, 2, 3, 4], [2, 2, 1, 1], [3, 3, 3, 3], [4, 1, 1, 1]])


def _pixel(env, obs, machine, step, unit, resource=0):
    """The observation's image pixel (machine, resource, image row, unit), times G."""
    h, c = env.history, env.spec.units
    return obs[((machine * 2 + resource) * h + step) * c + unit] * env.classes


def _slot(env, obs, slot=0):
    """The class of queue slot ``slot`` (its profile image's first pixel: every workload here
    uses a unit at its first step), times G."""
    base = env.spec.machines * 2 * env.history * env.spec.units
    return obs[base + slot * env.slot_size] * env.classes


def test_running_labels_follow_the_age_table_and_relabel_the_whole_image():
    env = small_env(machines=2, labeler=lambda seq: TABLE, classes=4)
    obs, _ = env.reset(np.random.default_rng(0), AGING)
    assert _slot(env, obs, 0) == 1  # w0 waiting: its class at arrival
    obs, *_ = env.step(0)  # w0 on machine 0 at step 0; the clock runs to w1's arrival
    assert env.replay.now == 1 and env.labels()[0] == 2
    assert _pixel(env, obs, 0, step=3, unit=0) == 2  # now
    assert _pixel(env, obs, 0, step=2, unit=0) == 2  # its step 0, drawn with today's class
    assert _slot(env, obs, 0) == 2  # w1 waiting, age 1
    obs, *_ = env.step(0)
    assert env.replay.now == 2 and env.labels()[:2].tolist() == [3, 2]
    assert (_pixel(env, obs, 0, 3, 0), _pixel(env, obs, 0, 3, 1)) == (3, 2)


def test_age_lookup_is_capped_at_the_longest_age():
    env = small_env(machines=2, labeler=lambda seq: TABLE, classes=4)
    env.reset(np.random.default_rng(0), AGING)
    for machine in (0, 0, 1):
        obs, *_ = env.step(machine)
    # Step 6: w0, w1, w2 have seen 7, 6, 5 steps, past A = 4: their class at age 4.
    assert env.replay.now == 6
    assert env.labels().tolist() == [4, 1, 3, 4]  # w3 waits: age 1
    assert (_pixel(env, obs, 0, 3, 0), _pixel(env, obs, 0, 3, 1)) == (4, 1)
    assert _pixel(env, obs, 1, 3, 0) == 3 and _slot(env, obs, 0) == 4


def test_reference_env_observes_the_same_labels_by_age():
    envs = [
        kind(spec=small_env(machines=2).spec, history=4, labeler=lambda s: TABLE, classes=4)
        for kind in (PlacementEnv, ReferencePlacementEnv)
    ]
    seen = [[env.reset(np.random.default_rng(0), AGING)[0].tobytes()] for env in envs]
    for action in (0, 0, 1, 1):
        for env, obs in zip(envs, seen, strict=True):
            obs.append(env.step(action)[0].tobytes())
    assert seen[0] == seen[1]


def test_fixed_labels_are_a_table_that_never_changes(bitbrains):
    spec = replace(ScenarioSpec(), jobs=40)
    rng = np.random.default_rng(2)
    drawn = sample_sequence(bitbrains, spec, 0.7, rng, rng)
    fixed = 1 + np.arange(len(drawn)) % 3

    def run(labeler, classes):
        return episode(PlacementEnv(spec=spec, labeler=labeler, classes=classes), drawn, 5, 0.0)

    default = run(None, 1)
    assert default == run(lambda s: np.ones((len(s), 6), np.int64), 1)
    assert run(lambda s: fixed, 3) == run(lambda s: np.repeat(fixed[:, None], 6, axis=1), 3)
    assert run(lambda s: fixed, 3) != default  # the labels do reach the observation


SMALL = RunningClasses("temporal", workloads=20, ages=4, seed=3)


def test_seeded_fit_is_deterministic(bitbrains):
    spec = replace(ScenarioSpec(), jobs=40)
    first, again = (replace(SMALL).fit([bitbrains], spec) for _ in range(2))
    rng = np.random.default_rng(9)
    drawn = sample_sequence(bitbrains, spec, 0.5, rng, rng)
    table = first(drawn)
    assert table.shape == (40, 4) and 1 <= table.min() <= table.max() <= first.classes_
    assert first.classes_ == again.classes_ >= 3 and np.array_equal(table, again(drawn))
    assert first(drawn) is table  # kept for the other copies of the env
    # Age 1 reads the usage at arrival only: workloads that start alike are labelled alike.
    starts = drawn.usage.data[drawn.usage.indptr[:-1]]
    for value in np.unique(starts, axis=0):
        assert len(np.unique(table[(starts == value).all(axis=1), 0])) == 1


def test_labeller_records_its_initialisations_and_old_ones_rebuild_with_ten(bitbrains):
    spec = replace(ScenarioSpec(), jobs=40)
    saved = replace(SMALL).fit([bitbrains], spec).settings()
    assert saved["initialisations"] == 50  # the paper's, per k
    before = {k: v for k, v in saved.items() if k != "initialisations"}
    assert RunningClasses.rebuild(before).initialisations == 10  # what it was fitted with


def test_policy_trained_with_classes_evaluates_with_the_same_labeller(bitbrains, tmp_path):
    pytest.importorskip("torch")
    spec = replace(ScenarioSpec(), jobs=8)
    labeler = replace(SMALL).fit([bitbrains], spec)
    env = PlacementEnv([bitbrains], spec, labeler=labeler, classes=labeler.classes_)
    train(env, TrainConfig(iterations=2, trajectories=2, sequences=1), tmp_path)
    policy = str(tmp_path / "policy.npz")
    evaluated = Learned("tvw-rl", policy, "temporal").environment(spec)
    assert evaluated.labeler is not labeler and evaluated.classes == labeler.classes_
    for k in range(3):
        rng = np.random.default_rng(k)
        drawn = sample_sequence(bitbrains, spec, 0.5, rng, rng)
        assert np.array_equal(evaluated.labeler(drawn), labeler(drawn))
    assert (Learned("tvw-rl", policy, "temporal").run(drawn, spec).host >= 0).all()
    with pytest.raises(ReclaimError, match="trained with --classes temporal, not none"):
        Learned("tvw-rl", policy).run(drawn, spec)


def test_bad_classes_fail_in_one_line(bitbrains):
    spec = replace(ScenarioSpec(), jobs=8)
    with pytest.raises(ReclaimError, match="classes must be none, temporal or dtw"):
        make_agent_env("tvw-rl", [bitbrains], spec, 0.5, "aggregate")
    with pytest.raises(ReclaimError, match="label TVW-RL's state, not DeepRM's"):
        make_agent_env("deeprm", [bitbrains], spec, 0.5, "dtw")
    with pytest.raises(ReclaimError, match="classes must be none, temporal or dtw, not 'DTW'"):
        Learned("tvw-rl", None, "DTW")


@pytest.mark.parametrize("command", ["train", "eval"])
def test_cli_refuses_unknown_classes_up_front(tmp_path, command):
    done = reclaim("rl", command, "--classes", "aggregate", "-o", str(tmp_path / "out"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == "error: --classes must be none, temporal or dtw, not 'aggregate'"
    assert not (tmp_path / "out").exists()


def test_label_names_the_classes_so_both_runs_sit_side_by_side():
    assert Learned("tvw-rl").label == "tvw-rl"
    assert Learned("tvw-rl", None, "temporal").label == "tvw-rl+temporal"


TINY = ["--iterations", "2", "--trajectories", "2", "--sequences", "1", "--jobs", "8"]


def test_cli_records_the_classes_and_resume_refuses_others(tmp_path):
    pytest.importorskip("torch")
    store = ["--store", str(sample_path("bitbrains")), "-o", str(tmp_path)]
    done = reclaim("rl", "train", *TINY, "--classes", "temporal", *store)
    assert done.returncode == 0, done.stderr
    saved = LinearPolicy.load(tmp_path / "policy.npz").settings["labeler"]
    assert saved["distance"] == "temporal" and saved["spec"]["jobs"] == 8
    assert saved["stores"] == [str(sample_path("bitbrains").resolve())]
    done = reclaim("rl", "train", *TINY, "--classes", "none", "--resume", *store)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    error = done.stderr.strip().splitlines()[-1]  # after the progress bar
    assert error.startswith("error:") and error.endswith("other settings (labeler); drop --resume")
    # a checkpoint from before labellers recorded their initialisations clustered with 10
    torch = pytest.importorskip("torch")
    old = torch.load(tmp_path / CHECKPOINT, weights_only=False)
    del old["settings"]["labeler"]["initialisations"]
    torch.save(old, tmp_path / CHECKPOINT)
    done = reclaim("rl", "train", *TINY, "--classes", "temporal", "--resume", *store)
    error = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 2 and error.endswith("(labeler.initialisations); drop --resume")
