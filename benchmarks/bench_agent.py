"""One live-agent period for 1,000 managed cgroups: read, forecast, decide, write, record.

Against a fake cgroup tree in a temp directory (v1 and v2 layouts; ordinary files, so the cost
is the agent's own, not the kernel's), and, when run as root with a writable v1 hierarchy, the
file reads and writes on 1,000 real (empty) cgroups. Target: a period under 1 s.

    python benchmarks/bench_agent.py [--components 1000] [--periods 10]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from reclaim.agent.cgroups import CgroupError, Cgroups
from reclaim.agent.config import AgentSettings, Components
from reclaim.agent.fake import make_tree, set_usage
from reclaim.agent.loop import Agent
from reclaim.core.clock import SimClock

PARENT = "reclaim-bench"


def settings(root: Path, n: int, db: Path) -> AgentSettings:
    """``n`` components in ``n // 10`` applications of one core and nine elastic ones."""
    app = np.arange(n, dtype=np.int32) // 10
    comps = Components(
        names=[f"c{i}" for i in range(n)],
        apps=[f"app{a}" for a in range(app[-1] + 1)],
        app=app,
        core=np.arange(n) % 10 == 0,
        request=np.tile(np.float32([1.0, 2.0]), (n, 1)),
    )
    return AgentSettings(
        parent=PARENT,
        components=comps,
        database=db,
        cgroup_root=root,
        period_s=60.0,
        grace_s=0.0,
        host_cpu=float(n),
        host_mem_gib=2.0 * n,
    )


def fake_tree(version: int, n: int, periods: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    # in memory, as cgroupfs is: a disk-backed temp dir would time the disk
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=shm) as tmp:
        root = Path(tmp) / "cgroup"
        names = [f"c{i}" for i in range(n)]
        make_tree(root, version, PARENT, names)
        agent = Agent(settings(root, n, Path(tmp) / "agent.db"), clock=SimClock(1e6))
        cpu_s = np.zeros(n)
        times = []
        for k in range(periods + 2):  # two warm-up periods: numba compiles, counters prime
            cpu_s += rng.uniform(0.1, 0.5, n) * 60
            mem = rng.uniform(0.2, 1.0, n)
            for i, name in enumerate(names):
                set_usage(root, version, PARENT, name, cpu_s[i], mem[i])
            began = time.perf_counter()
            report = agent.step()
            if k >= 2:
                times.append((time.perf_counter() - began, report))
            agent.clock.t += 60.0
        agent.close()
    total = np.array([t for t, _ in times])
    phases = {p: np.median([r.seconds[p] for _, r in times]) for p in times[0][1].seconds}
    resized = np.median([r.resized for _, r in times])
    print(
        f"fake v{version} tree, {n} components: period median {np.median(total) * 1e3:.0f} ms, "
        f"max {total.max() * 1e3:.0f} ms ({resized:.0f} limits rewritten per period); "
        + ", ".join(f"{p} {s * 1e3:.0f} ms" for p, s in phases.items())
    )
    return {"median_s": float(np.median(total))}


def real_v1(n: int) -> None:
    """Reads and writes of the agent's files on ``n`` real, empty v1 cgroups."""
    if os.geteuid() != 0:
        print("real cgroups: skipped (not root)")
        return
    try:
        cg = Cgroups("/sys/fs/cgroup", f"{PARENT}-{os.getpid()}")
        names = [f"c{i}" for i in range(n)]
        for name in names:
            cg.create(name)
    except (CgroupError, OSError) as err:
        print(f"real cgroups: skipped ({err})")
        return
    try:
        began = time.perf_counter()
        cg.read_usage(names)
        read = time.perf_counter() - began
        limits = np.tile([0.5, 1.0], (n, 1))
        began = time.perf_counter()
        ok = cg.write_limits(names, limits)
        write = time.perf_counter() - began
        print(
            f"real v{cg.version} cgroups, {n} components: read {read * 1e3:.0f} ms, write all "
            f"limits {write * 1e3:.0f} ms ({int(ok.sum())} ok)"
        )
    finally:
        for name in names:
            cg.remove(name)
        cg.remove_parent()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--components", type=int, default=1000)
    parser.add_argument("--periods", type=int, default=10)
    args = parser.parse_args()
    worst = max(fake_tree(v, args.components, args.periods)["median_s"] for v in (1, 2))
    real_v1(args.components)
    print(f"target: a period under 1 s -> {'met' if worst < 1.0 else 'MISSED'}")


if __name__ == "__main__":
    main()
