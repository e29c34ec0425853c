"""The agent against fake cgroup trees (v1 and v2 layouts): files, safety rules, store, reports."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import urllib.request

import numpy as np
import pytest
from agent_helpers import write_config
from typer.testing import CliRunner

from reclaim.agent.actuator import DockerActuator, docker_client
from reclaim.agent.cgroups import GIB, CgroupError, Cgroups, detect
from reclaim.agent.cli import agent_app
from reclaim.agent.config import load_settings
from reclaim.agent.fake import make_tree, set_usage
from reclaim.agent.loop import Agent
from reclaim.agent.metrics_http import AgentMetrics
from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.clock import SimClock
from reclaim.core.types import Decisions
from reclaim.errors import ReclaimError

NAN, INF = float("nan"), float("inf")

PARENT = "reclaim"
NAMES = ["web-0", "batch-0", "batch-1"]


@pytest.fixture(params=[1, 2], ids=["v1", "v2"])
def tree(request, tmp_path):
    root = tmp_path / "cgroup"
    make_tree(root, request.param, PARENT, NAMES)
    return root, request.param


def feed(root, version, cpu_s, mem_gib, names=NAMES):
    for name in names:
        set_usage(root, version, PARENT, name, cpu_s, mem_gib)


def make_agent(tmp_path, root, **agent):
    agent.setdefault("period_s", 1.0)
    agent.setdefault("grace_s", 0.0)
    agent.setdefault("host_cpu", 4.0)  # the machine's own cores may not hold 3 x 1 core
    settings = write_config(tmp_path / "agent.toml", PARENT, cgroup_root=root, **agent)
    return Agent(settings, clock=SimClock(1e6))


def run_steady(agent, root, version, periods=4, cores=0.2, mem=0.1):
    """``periods`` periods of constant usage (``cores`` of CPU, ``mem`` GiB)."""
    for _ in range(periods):
        feed(root, version, cores * (agent.clock.t - 1_000_000.0), mem)
        agent.step()
        agent.clock.t += 1.0


def soft_limit_gib(root, version, name):
    if version == 2:
        text = (root / PARENT / name / "memory.high").read_text()
    else:
        text = (root / "memory" / PARENT / name / "memory.soft_limit_in_bytes").read_text()
    return np.inf if text.strip() == "max" or int(text) > 2**62 else int(text) / GIB


def cpu_quota_cores(root, version, name):
    if version == 2:
        quota, period = (root / PARENT / name / "cpu.max").read_text().split()
        return np.inf if quota == "max" else int(quota) / int(period)
    quota = int((root / "cpu" / PARENT / name / "cpu.cfs_quota_us").read_text())
    return np.inf if quota < 0 else quota / 100_000


# ---------------------------------------------------------------------------- cgroup files
def test_detect_reads_the_layout(tree, tmp_path):
    root, version = tree
    assert detect(root) == version
    with pytest.raises(CgroupError, match="neither"):
        detect(tmp_path)


def test_paths_outside_the_parent_are_refused(tree, tmp_path):
    root, version = tree
    cg = Cgroups(root, PARENT)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    parent = root / PARENT if version == 2 else root / "memory" / PARENT
    (parent / "sneaky").symlink_to(outside)
    for name in ("../escape", "sneaky", "."):
        with pytest.raises(CgroupError, match="outside the managed parent"):
            cg.dirs(name)


def test_reads_writes_and_kills(tree):
    root, version = tree
    cg = Cgroups(root, PARENT)
    set_usage(root, version, PARENT, "web-0", cpu_s=12.5, mem_gib=0.5, pids=(11, 12))
    cpu_s, mem, ooms, throttled, procs = cg.read_usage(["web-0", "missing"])
    assert cpu_s[0] == pytest.approx(12.5) and mem[0] == pytest.approx(0.5)
    assert procs.tolist() == [2, -1] and ooms[0] == 0
    ok = cg.write_limits(["web-0", "missing"], np.array([[0.25, 0.5], [1.0, 1.0]]))
    assert ok.tolist() == [True, False]
    assert soft_limit_gib(root, version, "web-0") == pytest.approx(0.5)
    assert cpu_quota_cores(root, version, "web-0") == pytest.approx(0.25)
    assert cg.read_limits(["web-0"]).tolist() == [[0.25, 0.5]]
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        set_usage(root, version, PARENT, "batch-1", 0.0, 0.0, pids=(victim.pid,))
        assert cg.kill("batch-1") == 1
        assert victim.wait(timeout=10) == -9
    finally:
        victim.kill()
        victim.wait()


# ---------------------------------------------------------------------------- the loop
def test_limits_follow_usage_plus_buffer(tree, tmp_path):
    root, version = tree
    agent = make_agent(tmp_path, root)
    run_steady(agent, root, version)
    # K1 = 5 % of 1 GiB on top of 0.1 GiB, no spread: 0.15 GiB instead of the 1 GiB reservation
    for name in NAMES:
        assert soft_limit_gib(root, version, name) == pytest.approx(0.15, abs=1e-3)
        assert cpu_quota_cores(root, version, name) == pytest.approx(0.25, abs=1e-3)
    assert agent.store.latest_decisions()[0]["reason"] == "pessimistic: keeps the current limit"


def test_grace_period_keeps_the_reservation(tree, tmp_path):
    root, version = tree
    agent = make_agent(tmp_path, root, grace_s=10.0)
    run_steady(agent, root, version, periods=4)
    assert soft_limit_gib(root, version, "web-0") == pytest.approx(1.0)
    run_steady(agent, root, version, periods=8)
    assert soft_limit_gib(root, version, "web-0") < 0.2


def test_gp_forecasts_shape_with_the_default_window(tree, tmp_path):
    # GP on the paper's ten-value history needs 12 samples to model a series: with a window of
    # 10 (the old default) every forecast was the fallback and nothing was ever shaped
    root, version = tree
    agent = make_agent(tmp_path, root, forecaster="gp-exp")
    run_steady(agent, root, version, periods=11)
    assert soft_limit_gib(root, version, "web-0") == pytest.approx(1.0)
    run_steady(agent, root, version, periods=3)
    assert soft_limit_gib(root, version, "web-0") < 0.2


def test_failing_forecaster_reverts_to_reservations(tree, tmp_path):
    root, version = tree
    agent = make_agent(tmp_path, root)
    run_steady(agent, root, version)
    assert soft_limit_gib(root, version, "web-0") < 0.2

    class Broken:
        def forecast(self, *args, **kwargs):
            raise RuntimeError("model diverged")

    agent.forecaster = Broken()
    report = agent.step()
    assert "model diverged" in report.fail_safe and report.killed == []
    for name in NAMES:
        assert soft_limit_gib(root, version, name) == pytest.approx(1.0)
    kinds = agent.store.db.execute("SELECT kind, reason FROM events").fetchall()
    assert any(kind == "fail-safe" and "model diverged" in why for kind, why in kinds)


def test_stale_observations_revert_to_reservation(tree, tmp_path):
    root, version = tree
    agent = make_agent(tmp_path, root, stale_after_s=2.0)
    run_steady(agent, root, version)
    usage_file = "memory.current" if version == 2 else "memory.usage_in_bytes"
    d = root / PARENT / "web-0" if version == 2 else root / "memory" / PARENT / "web-0"
    for _ in range(4):
        (d / usage_file).unlink(missing_ok=True)  # the cgroup is there but cannot be read
        agent.step()
        agent.clock.t += 1.0
    assert soft_limit_gib(root, version, "web-0") == pytest.approx(1.0)
    assert soft_limit_gib(root, version, "batch-0") < 0.2
    reason = agent.store.latest_decisions()[0]["reason"]
    assert reason.startswith("fail safe: no usage read")


def test_limits_never_drop_below_usage_plus_buffer(tree, tmp_path):
    root, version = tree
    agent = make_agent(tmp_path, root)
    run_steady(agent, root, version, periods=2)

    class Greedy:
        __capabilities__ = ControllerCapabilities(needs_forecast=False)

        def decide(self, view, forecast):
            rows = view.running
            return Decisions(rows, np.zeros((len(rows), 2)))

    agent.controller = Greedy()
    run_steady(agent, root, version, periods=1)
    # usage 0.1 GiB + K1 * 1 GiB (no forecast: no K2 term)
    assert soft_limit_gib(root, version, "web-0") == pytest.approx(0.15, abs=1e-3)
    assert "held at usage + buffer" in agent.store.latest_decisions()[0]["reason"]


def test_dry_run_only_records(tree, tmp_path):
    root, version = tree
    agent = make_agent(tmp_path, root, dry_run=True)
    run_steady(agent, root, version)
    assert soft_limit_gib(root, version, "web-0") == np.inf
    last = agent.store.latest_decisions()[0]
    assert last["action"] == "resize" and last["applied"] == 0
    assert last["limit_mem"] == pytest.approx(0.15, abs=1e-3)


def test_pessimistic_preempts_the_youngest_elastic_when_capacity_shrinks(tree, tmp_path):
    root, version = tree
    agent = make_agent(tmp_path, root)
    run_steady(agent, root, version)
    # three components at 0.15 GiB each; 0.4 GiB leaves no room for the (only) elastic one
    if version == 2:
        (root / PARENT / "memory.max").write_text(str(int(0.4 * GIB)))
    else:
        (root / "memory" / PARENT / "memory.limit_in_bytes").write_text(str(int(0.4 * GIB)))
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        set_usage(root, version, PARENT, "batch-1", 0.0, 0.1, pids=(victim.pid,))
        report = agent.step()
        assert report.killed == ["batch-1"]
        assert victim.wait(timeout=10) == -9
    finally:
        victim.kill()
        victim.wait()
    events = agent.store.db.execute(
        "SELECT component, kind, reason FROM events WHERE kind = 'kill'"
    )
    (component, _, reason), *rest = events.fetchall()
    assert component == 2 and rest == [] and "youngest first" in reason


def test_restart_resumes_history(tree, tmp_path):
    root, version = tree
    agent = make_agent(tmp_path, root)
    run_steady(agent, root, version, periods=5)
    count, start = agent.collector.view.count.copy(), agent.collector.view.workloads.start.copy()
    t = agent.clock.t
    agent.close()
    again = Agent(agent.settings, clock=SimClock(t))
    assert again.collector.view.count.tolist() == count.tolist()
    np.testing.assert_allclose(again.collector.view.workloads.start, start)
    again.step()  # still running: same start, history kept, limits stay shaped
    np.testing.assert_allclose(again.collector.view.workloads.start, start)
    assert again.collector.view.count.tolist() == count.tolist()
    assert soft_limit_gib(root, version, "web-0") < 0.2


# ---------------------------------------------------------------------------- operator interfaces
@pytest.mark.parametrize("from_start", [False, True], ids=["after-samples", "from-start"])
def test_a_usage_file_holding_text_falls_back_to_the_reservation_and_says_so(
    tree, tmp_path, from_start, caplog
):
    """Issue 33: memory.current holding text was never flagged (a silent zero); now the
    component keeps its reservation at once, the log warns and agent status says why."""
    root, version = tree
    agent = make_agent(tmp_path, root)
    usage_file = "memory.current" if version == 2 else "memory.usage_in_bytes"
    d = root / PARENT / "web-0" if version == 2 else root / "memory" / PARENT / "web-0"
    if not from_start:
        run_steady(agent, root, version)
    with caplog.at_level("WARNING", logger="reclaim.agent"):
        for _ in range(2):
            feed(root, version, 0.2 * (agent.clock.t - 1_000_000.0), 0.1)
            (d / usage_file).write_text("not a number\n")
            agent.step()
            agent.clock.t += 1.0
    first = agent.store.latest_decisions()[0]
    assert first["name"] == "web-0"
    assert first["reason"] == "fail safe: usage files hold no number: reservation"
    assert first["limit_mem"] == pytest.approx(1.0) and first["limit_cpu"] == pytest.approx(1.0)
    assert "web-0: fail-safe: usage files hold no number" in caplog.text
    agent.close()
    status = CliRunner().invoke(
        agent_app, ["status", "--config", str(tmp_path / "agent.toml")], env={"COLUMNS": "250"}
    )
    cells = " ".join(
        line.split("│")[-2].strip() for line in status.output.splitlines() if "│" in line
    )
    assert "usage files hold no number" in cells, status.output


def test_status_and_explain_read_the_database(tree, tmp_path):
    root, version = tree
    agent = make_agent(tmp_path, root)
    run_steady(agent, root, version)
    agent.close()
    runner = CliRunner()
    config = str(tmp_path / "agent.toml")
    status = runner.invoke(agent_app, ["status", "--config", config], env={"COLUMNS": "200"})
    assert status.exit_code == 0, status.output
    assert "web-0" in status.output and "slack" in status.output
    explained = runner.invoke(agent_app, ["explain", "batch-1", "--config", config])
    assert explained.exit_code == 0, explained.output
    text = explained.output
    assert "recent usage" in text and "90% interval" in text
    assert "K1*request = 0.05 x 1 = 0.050" in text and "K2*std" in text
    assert "reason: pessimistic" in text
    missing = runner.invoke(agent_app, ["explain", "nobody", "--config", config])
    assert isinstance(missing.exception, ReclaimError) and "nobody" in str(missing.exception)


def test_cli_run_with_dry_run(tree, tmp_path):
    root, version = tree
    feed(root, version, 1.0, 0.1)
    write_config(
        tmp_path / "agent.toml", PARENT, cgroup_root=root, period_s=0.05, grace_s=0.0, host_cpu=4.0
    )
    result = CliRunner().invoke(
        agent_app, ["run", "--config", str(tmp_path / "agent.toml"), "--dry-run", "--periods", "3"]
    )
    assert result.exit_code == 0, result.output
    db = sqlite3.connect(tmp_path / "reclaim-agent.db")
    assert db.execute("SELECT COUNT(*), MAX(applied) FROM decisions").fetchone() == (9, 0)
    assert soft_limit_gib(root, version, "web-0") == np.inf


def test_metrics_endpoint_serves_the_same_figures(tree, tmp_path):
    root, version = tree
    metrics = AgentMetrics()
    settings = write_config(
        tmp_path / "agent.toml", PARENT, cgroup_root=root, grace_s=0.0, host_cpu=4.0
    )
    agent = Agent(settings, clock=SimClock(1e6), metrics=metrics)
    run_steady(agent, root, version)
    metrics.serve(_free_port())
    try:
        port = metrics.server.server_address[1]
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        metrics.close()
    line = 'reclaim_agent_limit{app="web",component="web-0",resource="mem"}'
    value = float(next(x for x in body.splitlines() if x.startswith(line)).split()[-1])
    assert value == pytest.approx(soft_limit_gib(root, version, "web-0"), rel=1e-4)
    assert "reclaim_agent_slack" in body and "reclaim_agent_running_components 3.0" in body


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------- config and docker
@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ({"period_s": -1}, "agent.period_s: expected a finite number > 0"),
        ({"period_s": NAN}, "agent.period_s: expected a finite number > 0"),
        ({"grace_s": -5}, "agent.grace_s: expected a finite number >= 0"),
        ({"stale_after_s": INF}, "agent.stale_after_s: expected a finite number"),
        ({"k1": NAN}, "agent.k1: expected a finite number >= 0"),
        ({"k2": -1.0}, "agent.k2: expected a finite number >= 0"),
        ({"host_mem_gib": NAN}, "agent.host_mem_gib: expected a finite number > 0"),
        ({"host_cpu": INF}, "agent.host_cpu: expected a finite number > 0"),
        ({"window": 0}, "agent.window: expected a whole number >= 1"),
        ({"controller": 3}, "agent.controller: expected str"),
        ({"metrics_port": 70000}, "agent.metrics_port"),
        ({"colour": "red"}, "agent.colour: unknown key"),
        ({"controller_params": {"k1": NAN}}, r"agent.controller_params.k1: expected a finite"),
        ({"controller_params": {"colour": 1}}, "colour"),
        ({"forecaster_params": {"history": -3}}, "agent.forecaster_params.history: expected"),
        ({"controller": "no-such"}, "no-such"),
    ],
)
def test_config_mistakes_are_one_line_errors(tmp_path, agent, message):
    with pytest.raises(ReclaimError, match=message) as err:
        write_config(tmp_path / "agent.toml", PARENT, **agent)
    assert str(err.value).startswith(str(tmp_path / "agent.toml")) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("cpu", "mem", "message"),
    [
        (NAN, 1.0, r"component\[0\]\.cpu: expected a finite number > 0"),
        (INF, 1.0, r"component\[0\]\.cpu: expected a finite number > 0"),
        (1.0, NAN, r"component\[0\]\.mem_gib: expected a finite number > 0"),
        (1.0, float(1 << 31), r"component\[0\]\.mem_gib: .* got 2,147,483,648"),  # bytes
        (0.0, 1.0, r"component\[0\]\.cpu"),
    ],
)
def test_config_refuses_absurd_reservations(tmp_path, cpu, mem, message):
    """A reservation in the wrong unit, or not a number, would make the agent kill; refused."""
    with pytest.raises(ReclaimError, match=message):
        write_config(tmp_path / "a.toml", PARENT, components=[("w", "web", "core", cpu, mem)])


def test_config_that_is_no_toml_is_one_line(tmp_path):
    path = tmp_path / "agent.toml"
    for data, message in [
        (bytes(range(256)), "binary data, not a text file"),
        (b"[agent\nparent=", "not valid TOML"),
        (b"", "empty file"),
    ]:
        path.write_bytes(data)
        with pytest.raises(ReclaimError, match=message) as err:
            load_settings(path)
        assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_config_refuses_bad_components(tmp_path):
    bad = [("../etc", "web", "core", 1.0, 1.0)]
    with pytest.raises(ReclaimError, match=r"component\[0\]\.name"):
        write_config(tmp_path / "a.toml", PARENT, components=bad)
    bad = [("w", "web", "leader", 1.0, 1.0)]
    with pytest.raises(ReclaimError, match=r"component\[0\]\.role"):
        write_config(tmp_path / "a.toml", PARENT, components=bad)


def test_unknown_controller_is_a_user_error(tree, tmp_path):
    root, _ = tree
    with pytest.raises(ReclaimError, match="unknown controller"):
        make_agent(tmp_path, root, controller="nope")


def test_docker_actuator_same_decisions():
    class Container:
        def __init__(self, log):
            self.log = log

        def update(self, **kw):
            self.log.append(("update", kw))

        def kill(self):
            self.log.append(("kill", {}))

    class Client:
        def __init__(self):
            self.log = []
            self.containers = self

        def get(self, name):
            if name == "gone":
                raise KeyError(name)
            return Container(self.log)

    client = Client()
    act = DockerActuator(["a", "b", "gone"], client=client, api_error=KeyError)
    status = act.apply(Decisions([0, 2], [[0.5, 0.25], [1, 1]], evict=[1]))
    assert status.tolist() == [0, 6, 0]
    assert client.log[0] == ("kill", {})
    assert client.log[1] == (
        "update",
        {"cpu_period": 100_000, "cpu_quota": 50_000, "mem_reservation": 2**28},
    )


def test_docker_extra_missing_is_one_line():
    try:
        import docker  # noqa: F401
    except ImportError:
        with pytest.raises(ReclaimError, match=r"pip install 'reclaim\[docker\]'"):
            docker_client()
    else:
        pytest.skip("the docker extra is installed here")


# ---------------------------------------------------------------------------- throttling
def test_a_throttled_component_gets_its_cpu_reservation_back_at_once(tree, tmp_path):
    root, version = tree
    agent = make_agent(tmp_path, root, k2=0.0)
    run_steady(agent, root, version, periods=4)
    assert cpu_quota_cores(root, version, "web-0") < 0.5  # shaped to usage + buffer
    # usage now reads as the quota and the kernel counts throttled periods for web-0 only
    t = agent.clock.t - 1_000_000.0
    feed(root, version, 0.2 * t + 0.3, 0.1)
    set_usage(root, version, PARENT, "web-0", 0.2 * t + 0.3, 0.1, throttled=7)
    agent.step()
    assert cpu_quota_cores(root, version, "web-0") == pytest.approx(1.0)
    assert cpu_quota_cores(root, version, "batch-0") < 1.0  # not throttled: still shaped
    reason = agent.store.latest_decisions()[0]["reason"]
    assert reason.startswith("CPU throttled"), reason
    # the count stays where it was: throttling is over and shaping resumes
    agent.clock.t += 1.0
    t = agent.clock.t - 1_000_000.0
    feed(root, version, 0.2 * t + 0.3, 0.1)
    set_usage(root, version, PARENT, "web-0", 0.2 * t + 0.3, 0.1, throttled=7)
    agent.step()
    assert cpu_quota_cores(root, version, "web-0") < 1.0


def test_missing_cgroups_are_named_and_refused(tree, tmp_path):
    root, version = tree
    components = [*((n, "web", "core", 1.0, 1.0) for n in NAMES), ("web-9", "web", "core", 1, 1)]
    config = tmp_path / "agent.toml"
    settings = write_config(config, PARENT, components=components, cgroup_root=root)
    with pytest.raises(CgroupError, match=r"1 of 4 configured components have no cgroup .*web-9"):
        Agent(settings, clock=SimClock(1e6))
    result = CliRunner().invoke(agent_app, ["run", "-c", str(config), "--periods", "1"])
    assert result.exit_code != 0 and "web-9" in str(result.exception)
    waiting = write_config(
        config, PARENT, components=components, cgroup_root=root, wait_for_cgroups=True
    )
    agent = Agent(waiting, clock=SimClock(1e6))
    assert agent.step().running == 0
    agent.close()


@pytest.mark.parametrize("name", ["pessimistic", "optimistic"])
def test_the_agents_k1_k2_and_grace_reach_its_controller(tmp_path, name):
    """A controller that passes the shaper's parameters on as ``**params`` (pessimistic) takes
    the agent's K1, K2 and grace as one that declares them does: a grace left at its 600 s
    default would keep every component on its reservation in a compressed live run."""
    from dataclasses import replace

    from reclaim.agent.config import AgentSettings, Components
    from reclaim.agent.loop import build_controller

    comps = Components(names=["c"], apps=["a"], app=np.zeros(1, np.int64), core=np.ones(1, bool),
                       request=np.ones((1, 2), np.float32))  # fmt: skip
    settings = AgentSettings(parent=PARENT, components=comps, database=tmp_path / "a.db")
    settings = replace(settings, controller=name, k1=0.2, k2=1.5, grace_s=30.0)
    controller, _ = build_controller(settings)
    params = controller.get_params()
    assert (params["k1"], params["k2"], params["grace_s"]) == (0.2, 1.5, 30.0)
