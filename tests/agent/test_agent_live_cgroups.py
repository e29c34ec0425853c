"""The agent on real cgroups with real processes: the shaping paper's section 5 mechanism.

Needs root and a writable cgroup hierarchy (v1 or v2 with memory and cpu); skipped elsewhere.
Three phases on one run (period 1 s, grace 2 s, pessimistic, naive forecasts):
(a) soft limits settle at usage + buffer, far below the reservations;
(b) one component's usage jumps; the period that observes it raises its limit, nothing is
    OOM-killed;
(c) the parent's memory limit is lowered below what the forecasts + buffers need; the agent
    kills the youngest elastic component and no core one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from agent_helpers import write_config

from reclaim.agent.cgroups import GIB, CgroupError, Cgroups
from reclaim.agent.loop import Agent
from reclaim.agent.store import Store
from reclaim.agent.worker import spawn

COMPONENTS = [
    # name, app, role, cores, GiB: reservations well above the ~30-100 MiB the workers use
    ("web-core", "web", "core", 0.25, 0.25),
    ("batch-core", "batch", "core", 0.25, 0.25),
    ("batch-old", "batch", "elastic", 0.25, 0.25),
    ("batch-young", "batch", "elastic", 0.25, 0.25),
]


@pytest.fixture
def live(tmp_path):
    """A parent cgroup made for this test, cgroups for the components, and a cleanup that kills
    every process before removing the cgroups, whatever the test did."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create cgroups")
    parent = f"reclaim-test-{os.getpid()}"
    try:
        cg = Cgroups("/sys/fs/cgroup", parent)
        for name, *_ in COMPONENTS:
            cg.create(name)
    except (CgroupError, OSError) as err:
        pytest.skip(f"cgroups not writable here: {err}")
    procs = {}
    yield cg, parent, procs
    for proc in procs.values():
        proc.kill()
        proc.wait()
    for name, *_ in COMPONENTS:
        cg.kill(name)
        cg.remove(name)
    cg.remove_parent()


def soft_limit(cg, name):
    fname = "memory.soft_limit_in_bytes" if cg.version == 1 else "memory.high"
    with open(os.path.join(cg.dirs(name)["memory"], fname)) as f:
        return int(f.read()) / GIB


def oom_evidence(cg, name):
    """(times the hard limit was hit, OOM kills) of a component's memory cgroup."""
    d = Path(cg.dirs(name)["memory"])
    if cg.version == 1:
        failcnt = int((d / "memory.failcnt").read_text())
        oom = (d / "memory.oom_control").read_text().split()
    else:
        failcnt = 0
        oom = (d / "memory.events").read_text().split()
    kills = int(oom[oom.index("oom_kill") + 1]) if "oom_kill" in oom else 0
    return failcnt, kills


def last_decisions(db: Store):
    return {r["name"]: r for r in db.latest_decisions()}


def wait_for(condition, timeout, step=0.2):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return False


def test_agent_shapes_real_cgroups(live, tmp_path):
    cg, parent, procs = live
    settings = write_config(
        tmp_path / "agent.toml",
        parent,
        components=COMPONENTS,
        period_s=1.0,
        grace_s=2.0,
        host_cpu=2.0,
    )
    for name, *_ in COMPONENTS[:3]:
        procs[name] = spawn(cg, name, "30,90", hold=0)  # 30 MiB until told, then 90 MiB
    time.sleep(1.5)  # the youngest elastic component starts a period later
    procs["batch-young"] = spawn(cg, "batch-young", "30", hold=0)
    agent = Agent(settings, cgroups=cg)
    runner = threading.Thread(target=agent.run, daemon=True)
    runner.start()
    db = Store(settings.database)
    try:
        # (a) after the grace period, soft limits are usage + buffer, not the 0.25 GiB asked
        assert wait_for(
            lambda: all(
                r["t"] and r["reason"].startswith("pessimistic")
                for r in last_decisions(db).values()
            ),
            timeout=15,
        ), [r["reason"] for r in last_decisions(db).values()]
        time.sleep(2.5)
        rows = last_decisions(db)
        for name, *_ in COMPONENTS:
            limit, used = soft_limit(cg, name), rows[name]["used_mem"]
            assert used <= limit < 0.5 * 0.25, (name, used, limit)
            # the kernel rounds to pages, and a period may end between the two reads
            assert limit == pytest.approx(rows[name]["limit_mem"], abs=0.002)
        # (b) web-core jumps from 30 to 90 MiB: the period that sees it raises its limit
        before, used_before = soft_limit(cg, "web-core"), _usage(cg, "web-core")
        signalled = time.time()
        procs["web-core"].send_signal(signal.SIGUSR1)
        assert wait_for(lambda: soft_limit(cg, "web-core") > before + 0.05, timeout=10)
        # every period since the jump set the limit at or above the usage it saw, and applied it
        # (usage grows in steps under the tight CPU quota, so no single sample need cross the old
        # limit; what must hold is that the limit never trails the usage of its own period)
        seen = db.db.execute(
            "SELECT s.mem, d.limit_mem, d.applied FROM samples s JOIN decisions d "
            "ON d.t = s.t AND d.component = s.component WHERE s.component = 0 AND s.t >= ?",
            (signalled,),
        ).fetchall()
        assert seen and all(limit >= mem and applied == 1 for mem, limit, applied in seen), seen
        # its tight CPU quota (forecast + buffer too) slows the allocation: wait until it is done
        assert wait_for(lambda: _usage(cg, "web-core") > used_before + 0.055, timeout=15)
        time.sleep(2.5)
        assert soft_limit(cg, "web-core") >= _usage(cg, "web-core")
        for name, *_ in COMPONENTS:
            assert oom_evidence(cg, name) == (0, 0), name
            assert procs[name].poll() is None, name
        # (c) memory runs short: the parent's hard limit drops below what the limits need
        rows = last_decisions(db)
        need = sum(rows[n]["limit_mem"] for n, *_ in COMPONENTS)
        cap = need - 0.5 * rows["batch-young"]["limit_mem"]
        used = sum(_usage(cg, n) for n, *_ in COMPONENTS)
        assert used < cap, (used, cap)  # the kernel itself has no reason to act
        _set_parent_memory(cg, cap)
        assert wait_for(lambda: procs["batch-young"].poll() is not None, timeout=5)
        assert procs["batch-young"].returncode == -signal.SIGKILL
        time.sleep(1.5)
        for name in ("web-core", "batch-core", "batch-old"):
            assert procs[name].poll() is None, name
        kills = db.db.execute("SELECT component, reason FROM events WHERE kind = 'kill'").fetchall()
        assert [k[0] for k in kills] == [3] and "youngest first" in kills[0][1]
    finally:
        agent.stop()
        runner.join(timeout=10)
        _set_parent_memory(cg, np.inf)
        db.close()
        agent.close()


def test_a_throttled_component_gets_its_cpu_back(live, tmp_path):
    # A process idles for 4 s (the agent shapes its quota down to usage + buffer), then spins:
    # its usage reads as the small quota, and only the kernel's throttling count says it wants
    # more. The period that sees the count rise gives back the 0.25-core reservation.
    cg, parent, procs = live
    settings = write_config(
        tmp_path / "agent.toml", parent, components=COMPONENTS, period_s=1.0, grace_s=0.0, k2=0.0
    )
    procs["web-core"] = subprocess.Popen(
        [sys.executable, "-c", "import time\ntime.sleep(4)\nwhile True: pass"],
        preexec_fn=lambda: cg.attach("web-core", os.getpid()),
    )
    agent = Agent(settings, cgroups=cg)
    quotas, reasons = [], []
    try:
        for _ in range(10):
            agent.step()
            quotas.append(float(cg.read_limits(["web-core"])[0, 0]))
            reasons.append(last_decisions(agent.store)["web-core"]["reason"])
            if reasons[-1].startswith("CPU throttled"):
                break
            time.sleep(1.0)
        assert reasons[-1].startswith("CPU throttled"), reasons
        assert min(quotas[:-1]) < 0.05, quotas  # it had been shaped down while idle
        assert quotas[-1] == pytest.approx(0.25), quotas  # the reservation, at once
    finally:
        agent.close()


def _usage(cg, name) -> float:
    return float(cg.read_usage([name])[1][0])


def _set_parent_memory(cg, gib: float) -> None:
    fname = "memory.limit_in_bytes" if cg.version == 1 else "memory.max"
    directory = cg.parent_dirs()[0]
    value = ("-1" if cg.version == 1 else "max") if not np.isfinite(gib) else str(int(gib * GIB))
    (directory / fname).write_text(value)
