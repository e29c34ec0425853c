"""The trained policy: a numpy forward pass equal to torch's, saved and loaded, and a placement
plugin that never picks a masked machine."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rl_sequences import SEQ, small_env

from reclaim.errors import ReclaimError
from reclaim.placement import Placer, build_placer
from reclaim.placement.framework import CycleState
from reclaim.rl.evaluate import run_learned
from reclaim.rl.policy import LinearPolicy, network


def _policy(obs_size: int, machines: int, seed: int = 0) -> LinearPolicy:
    rng = np.random.default_rng(seed)
    return LinearPolicy(
        rng.normal(size=(20, obs_size)).astype(np.float32),
        rng.normal(size=20).astype(np.float32),
        rng.normal(size=(machines, 20)).astype(np.float32),
        rng.normal(size=machines).astype(np.float32),
        {"machines": machines},
    )


@given(st.integers(0, 2**32 - 1))
def test_act_never_picks_a_masked_machine(seed):
    rng = np.random.default_rng(seed)
    policy = _policy(12, 5, seed % 7)
    mask = rng.random((16, 5)) < 0.3
    mask[np.arange(16), rng.integers(0, 5, 16)] = True  # at least one machine fits
    chosen = policy.act(rng.random((16, 12)).astype(np.float32), mask)
    assert mask[np.arange(16), chosen].all()


def test_numpy_forward_equals_torch_and_round_trips(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    net = network(12, 4)
    policy = LinearPolicy.from_network(net, {"machines": 4})
    obs = np.random.default_rng(0).random((3, 12)).astype(np.float32)
    with torch.no_grad():
        expected = net(torch.from_numpy(obs)).numpy()
    np.testing.assert_allclose(policy.logits(obs), expected, rtol=1e-5, atol=1e-5)
    loaded = LinearPolicy.load(policy.save(tmp_path / "p.npz"))
    np.testing.assert_allclose(loaded.logits(obs), expected, atol=2e-2)  # float16 weights
    assert loaded.settings == {"machines": 4}


@pytest.mark.parametrize("hold", [False, True])
def test_plugin_places_only_where_the_environment_allows(tmp_path, monkeypatch, hold):
    # Without the hold action the placer (the tvw-rl plugin) places each subject; with it the
    # policy acts itself, hold included: either way only unmasked actions, every workload placed.
    env = small_env(machines=2, units=4, hold=hold, queue_images=hold)
    path = _policy(env.obs_size, env.actions).save(tmp_path / "p.npz")
    chosen = []
    step = type(env).step

    def checked(self, action):
        assert self.mask()[action], "a masked action was picked"
        chosen.append(action)
        return step(self, action)

    monkeypatch.setattr(type(env), "step", checked)
    placer = Placer.from_config([{"name": "tvw-rl", "params": {"path": str(path)}}])
    result = run_learned(SEQ, placer, env)
    placed = [a for a in chosen if a < 2]
    assert len(placed) == len(SEQ) and (result.host >= 0).all()
    assert hold or len(chosen) == len(SEQ)


def test_policy_with_other_actions_fails_in_one_line(tmp_path):
    env = small_env(machines=2, units=4)
    path = _policy(env.obs_size, 2).save(tmp_path / "p.npz")  # no hold action
    placer = Placer.from_config([{"name": "tvw-rl", "params": {"path": str(path)}}])
    with pytest.raises(ReclaimError, match="2 actions, the environment 3"):
        run_learned(SEQ, placer, env)


def test_plugin_without_state_fails_in_one_line():
    placer = build_placer("tvw-rl")
    state = CycleState(
        np.full((2, 2), 8.0), np.full((2, 2), 8.0), np.ones(2, bool), np.ones((1, 2), np.float32)
    )
    with pytest.raises(ReclaimError, match="rl eval"):
        placer.rank(state)


def test_missing_policy_file_fails_in_one_line(tmp_path):
    with pytest.raises(ReclaimError, match="no trained policy"):
        LinearPolicy.load(tmp_path / "none.npz")


@pytest.mark.parametrize("content", [b"garbage", b"PK\x03\x04truncated"])
def test_a_broken_policy_file_fails_in_one_line_naming_it(tmp_path, content):
    path = tmp_path / "broken.npz"
    path.write_bytes(content)
    with pytest.raises(ReclaimError, match="broken.npz: not a policy saved by reclaim rl train"):
        LinearPolicy.load(path)


def test_a_policy_file_without_weights_fails_in_one_line(tmp_path):
    path = tmp_path / "other.npz"
    np.savez(path, x=np.zeros(3))
    with pytest.raises(ReclaimError, match="other.npz: not a policy"):
        LinearPolicy.load(path)


def test_shipped_policies_place_the_default_scenario(bitbrains):
    from dataclasses import replace

    from reclaim.rl.evaluate import Learned
    from reclaim.tvw.scenario import ScenarioSpec, sample_sequence

    spec = replace(ScenarioSpec(), jobs=20)
    rng = np.random.default_rng(0)
    seq = sample_sequence(bitbrains, spec, 0.5, rng, rng)
    for name in ("tvw-rl", "deeprm"):
        result = Learned(name).run(seq, spec)
        assert (result.host >= 0).all()
    with pytest.raises(ReclaimError, match="trained for 10 machines"):
        Learned("tvw-rl").run(seq, replace(spec, machines=4))


def test_missing_extra_is_one_line(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    with pytest.raises(ReclaimError, match=r"install reclaim\[rl\]"):
        network(4, 2)
    from reclaim.rl.env import make_env

    with pytest.raises(ReclaimError, match=r"install reclaim\[rl\]"):
        make_env()
