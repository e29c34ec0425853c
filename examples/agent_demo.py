"""The live agent on real cgroups, end to end: slack cut, a usage jump absorbed, a preemption.

    sudo .venv/bin/python examples/agent_demo.py [--config examples/agent.toml]

Needs root and a writable cgroup hierarchy. Creates the config's parent cgroup, starts one worker
process (src/reclaim/agent/worker.py: holds 30 MiB, 90 MiB on a signal) per component in its own
cgroup, runs the agent (pessimistic policy, naive forecasts) in a thread and prints, every
second, each component's memory usage and the soft limit read back from the cgroup file:

(a) after the grace period the soft limits settle at usage + buffer, far below the reservations;
(b) web-core's usage jumps from 30 to 90 MiB: its limit rises in the period that sees it, and the
    kernel's counters (memory.failcnt, oom_kill) stay at zero;
(c) the parent's memory limit is lowered below what the limits need: the agent kills the
    youngest elastic component (batch-young) and no core one.
Everything is removed at the end, even on Ctrl-C. The database is left in a temp directory.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

from rich.console import Console

from reclaim.agent.cgroups import GIB, Cgroups
from reclaim.agent.config import load_settings
from reclaim.agent.explain import explain, status_table
from reclaim.agent.loop import Agent
from reclaim.agent.store import Store
from reclaim.agent.worker import spawn

MIB = 2**20 / GIB


def read_int(path: str) -> int:
    with open(path) as f:
        return int(f.read().split()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=Path(__file__).with_name("agent.toml"), type=Path)
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root: the demo creates cgroups")
    settings = load_settings(args.config)
    settings.database = Path(tempfile.mkdtemp(prefix="reclaim-agent-")) / "agent.db"
    cg = Cgroups(settings.cgroup_root, settings.parent, settings.cgroup_version)
    names = settings.components.names
    soft = "memory.soft_limit_in_bytes" if cg.version == 1 else "memory.high"
    console = Console(width=160)
    procs = {}
    agent = None
    try:
        for name in names:
            cg.create(name)
        for name in names[:-1]:
            procs[name] = spawn(cg, name, "30,90", hold=0)
        time.sleep(1.5)
        procs[names[-1]] = spawn(cg, names[-1], "30", hold=0)  # the youngest
        agent = Agent(settings, cgroups=cg)
        threading.Thread(target=agent.run, daemon=True).start()
        console.print(
            f"cgroup v{cg.version}, parent {settings.parent!r}, period {settings.period_s:g} s, "
            f"grace {settings.grace_s:g} s, reservations "
            + ", ".join(
                f"{n} {r[1] / MIB:.0f} MiB"
                for n, r in zip(names, settings.components.request, strict=True)
            )
        )
        header = "  t   " + "".join(f"{n:>22}" for n in names)
        console.print(
            header + "\n      " + "".join(f"{'used / soft limit MiB':>22}" for _ in names)
        )
        began = time.monotonic()

        def show(seconds: float) -> None:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                used = cg.read_usage(names)[1]
                cells = []
                for i, n in enumerate(names):
                    if procs[n].poll() is not None:
                        cells.append(f"{'killed':>22}")
                        continue
                    limit = read_int(os.path.join(cg.dirs(n)["memory"], soft)) / GIB
                    lim = "none" if limit > 2**40 / GIB else f"{limit / MIB:.1f}"
                    cells.append(f"{used[i] / MIB:>13.1f} / {lim:>6}")
                console.print(f"{time.monotonic() - began:5.1f} " + "".join(cells), highlight=False)
                time.sleep(1.0)

        show(settings.grace_s + 5)
        used = cg.read_usage(names)[1]
        limits = [read_int(os.path.join(cg.dirs(n)["memory"], soft)) / GIB for n in names]
        reserved = float(settings.components.request[:, 1].sum())
        console.print(
            f"(a) slack: reserved {reserved / MIB:.0f} MiB, soft limits {sum(limits) / MIB:.0f} MiB, "
            f"used {used.sum() / MIB:.0f} MiB: slack {(reserved - used.sum()) / MIB:.0f} -> "
            f"{(sum(limits) - used.sum()) / MIB:.0f} MiB"
        )
        console.print("(b) web-core jumps to 90 MiB")
        procs[names[0]].send_signal(signal.SIGUSR1)
        show(8)
        for n in names:
            d = cg.dirs(n)["memory"]
            failcnt = read_int(d + "/memory.failcnt") if cg.version == 1 else 0
            events = Path(d, "memory.oom_control" if cg.version == 1 else "memory.events")
            words = events.read_text().split()
            kills = int(words[words.index("oom_kill") + 1]) if "oom_kill" in words else 0
            console.print(f"    {n}: memory.failcnt {failcnt}, oom_kill {kills}")
        db = Store(settings.database)
        rows = {r["name"]: r for r in db.latest_decisions()}
        need = sum(rows[n]["limit_mem"] for n in names)
        cap = need - 0.5 * rows[names[-1]]["limit_mem"]
        console.print(
            f"(c) memory runs short: parent limit {cap / MIB:.0f} MiB < limits {need / MIB:.0f} MiB "
            f"(usage {cg.read_usage(names)[1].sum() / MIB:.0f} MiB)"
        )
        mem_parent = cg.parent_dirs()[0]
        limit_file = "memory.limit_in_bytes" if cg.version == 1 else "memory.max"
        (mem_parent / limit_file).write_text(str(int(cap * GIB)))
        show(4)
        for _, comp, kind, reason in db.events_of(None, 50):
            if kind == "kill":
                console.print(f"    killed {names[comp]}: {reason}")
        console.print("\n".join(explain(db, names[0])), highlight=False)
        console.print(status_table(db))
        db.close()
    finally:
        if agent is not None:
            agent.stop()
            time.sleep(settings.period_s)
            agent.close()
        for proc in procs.values():
            proc.kill()
            proc.wait()
        for name in names:
            cg.kill(name)
            cg.remove(name)
        mem_parent = cg.parent_dirs()[0]
        if mem_parent.exists():
            (
                mem_parent / ("memory.limit_in_bytes" if cg.version == 1 else "memory.max")
            ).write_text("-1" if cg.version == 1 else "max")
        cg.remove_parent()
        console.print(f"cleaned up; the agent's database: {settings.database}")


if __name__ == "__main__":
    main()
