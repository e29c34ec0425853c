"""A short live run on real cgroups, both modes: the launcher, the agent and the kernel together.

Needs root and writable cgroups (v1 or v2 with memory and cpu); skipped elsewhere. Three
applications on one host of 8 cores and 64 GiB, time 300x faster (a period is 0.2 s):
under reservations the second application (2 x 16 GiB) waits for the first (2 x 20 GiB) to
finish; shaped, it starts once the first one's limits have come down. One component is pushed
over its hard memory limit once, so the kernel's OOM killer acts and the run must count it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from reclaim.agent.cgroups import CgroupError, Cgroups
from reclaim.live.host import LiveHost
from reclaim.live.launcher import LiveRun
from reclaim.live.scenario import LiveScenario
from tiny_workloads import tiny_workload

# usage as a share of the request: CPU 30 %, memory 50 % then 60 % (60 s samples)
SHAPE = np.array([[0.3, 0.5]] * 10 + [[0.3, 0.6]] * 10, np.float32)
APPS = [
    (0.0, [(2, 20, 2400, True, 0, 0), (2, 20, 2400, True, 0, 0)]),
    (60.0, [(2, 16, 1200, True, 0, 0), (2, 16, 1200, True, 0, 0)]),
    (120.0, [(1, 4, 1200, True, 0, 0), (1, 4, 1200, False, 0, 0)]),
]
SCENARIO = LiveScenario(n_apps=3, time_factor=300.0, live_cores=1.0, live_mem_gib=2.0)


def _writable(parent: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to create cgroups")
    try:
        cg = Cgroups("/sys/fs/cgroup", parent)
        cg.create("probe")
        cg.remove("probe")
        cg.remove_parent()
    except (CgroupError, OSError) as err:
        pytest.skip(f"cgroups not writable here: {err}")


def _components_alive(folder: Path) -> list[int]:
    """Pids of the component processes of the run writing to ``folder``."""
    out, mark = [], str(folder).encode()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"live/component.py" in cmd and mark in cmd:
                out.append(int(pid))
    return out


def _parent_gone(parent: str) -> bool:
    root = Path("/sys/fs/cgroup")
    return not (root / parent).exists() and not any(root.glob(f"*/{parent}"))


def _squeeze_once(parent: str, name: str):
    """An ``on_period`` hook that, once the component runs at its 50 % phase, sets its hard
    memory limit just above what it holds: its rise to 60 % is then an OOM kill."""
    done = []

    def hook(now, state):
        if done or now < 300.0 or state.comp_state[0] != 1:
            return
        cg = Cgroups("/sys/fs/cgroup", parent)
        mem = cg.dirs(name)["memory"]
        if cg.version == 1:
            usage = int(Path(mem, "memory.usage_in_bytes").read_text())
            Path(mem, "memory.limit_in_bytes").write_text(str(usage + (4 << 20)))
        else:
            usage = int(Path(mem, "memory.current").read_text())
            Path(mem, "memory.max").write_text(str(usage + (4 << 20)))
        done.append(now)

    return hook


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    parent = f"reclaim-live-test-{os.getpid()}"
    _writable(parent)
    workload = tiny_workload(APPS, [SHAPE], period=60.0)
    out = {}
    for mode in ("reservation", "shaped"):
        hook = _squeeze_once(parent, "a0000-c000") if mode == "reservation" else None
        folder = tmp_path_factory.mktemp(mode)
        out[mode] = LiveRun(workload, SCENARIO, mode, folder, parent=parent, on_period=hook).run()
        assert not _components_alive(folder), "components outlived the run"
        assert _parent_gone(parent)
    return out


def test_every_application_finishes_and_nothing_is_left(runs):
    for result in runs.values():
        assert (result.apps["state"] == "done").all()


def test_the_kernel_counter_agrees_with_the_run(runs):
    base = runs["reservation"].summary
    assert base["kernel_oom_kills"] == 1  # the squeezed component, once
    assert base["oom_stops"] == base["kernel_oom_kills"]
    assert base["lost_stops"] == 0
    assert runs["reservation"].apps["failures"].to_list()[0] == 1  # a core one: app requeued
    assert runs["shaped"].summary["kernel_oom_kills"] == runs["shaped"].summary["oom_stops"] == 0


def test_shaping_lowers_slack_and_admits_earlier(runs):
    base, shaped = runs["reservation"], runs["shaped"]
    assert shaped.summary["app_slack_mem_mean"] < base.summary["app_slack_mem_mean"] - 0.05
    # under reservations app 1 starts only after app 0 ends (40 + 32 GiB > 64 GiB)
    assert shaped.apps["first_start"][1] < base.apps["first_start"][1] - 300.0


def test_sigterm_kills_every_process_and_restores_the_parent(tmp_path):
    parent = f"reclaim-live-term-{os.getpid()}"
    _writable(parent)
    script = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parents[1])!r})
from pathlib import Path
import numpy as np
from tiny_workloads import tiny_workload
from reclaim.live.launcher import LiveRun, Interrupted
from reclaim.live.scenario import LiveScenario
wl = tiny_workload([(0.0, [(2, 8, 36000, True, 0, 0)] * 3)], [np.array([[0.2, 0.5]])], 60.0)
sc = LiveScenario(n_apps=1, time_factor=300.0, live_cores=1.0, live_mem_gib=2.0)
try:
    LiveRun(wl, sc, "reservation", Path({str(tmp_path)!r}), parent={parent!r}).run()
except Interrupted:
    sys.exit(3)
"""
    proc = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 60
        while len(_components_alive(tmp_path)) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_components_alive(tmp_path)) == 3
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 3
    finally:
        proc.kill()
    assert not _components_alive(tmp_path)
    assert _parent_gone(parent)


def test_a_second_run_over_a_live_parent_is_refused():
    parent = f"reclaim-live-lock-{os.getpid()}"
    _writable(parent)
    with (
        LiveHost("/sys/fs/cgroup", parent, 1.0, 1.0),
        pytest.raises(CgroupError, match="another live run"),
    ):
        LiveHost("/sys/fs/cgroup", parent, 1.0, 1.0).__enter__()
    assert _parent_gone(parent)


def test_a_parent_that_was_there_gets_its_limits_back():
    parent = f"reclaim-live-kept-{os.getpid()}"
    _writable(parent)
    cg = Cgroups("/sys/fs/cgroup", parent)
    cg.create("probe")
    cg.remove("probe")
    mem_dir = cg.parent_dirs()[0]
    fname = "memory.limit_in_bytes" if cg.version == 1 else "memory.max"
    (mem_dir / fname).write_text(str(3 << 30))
    try:
        with LiveHost("/sys/fs/cgroup", parent, 1.0, 1.0) as host:
            assert int((mem_dir / fname).read_text()) == 1 << 30
            host.prepare("c", 0.5, 0.25)
        assert int((mem_dir / fname).read_text()) == 3 << 30
        assert mem_dir.is_dir() and not (mem_dir / "c").exists()
    finally:
        cg.remove_parent()
