"""A fake cgroup tree in an ordinary directory, v1 or v2 layout, for tests and benchmarks.

It holds the files the agent reads and writes, with the kernel's formats, so every code path but
the kernel's own reactions (reclaim, throttling, removing killed processes) runs against it.
"""

from __future__ import annotations

from pathlib import Path

from reclaim.agent.cgroups import GIB

_UNLIMITED = "9223372036854771712"
#: Above the kernel's PID_MAX_LIMIT (2^22): listed as a fake cgroup's process, a kill of it can
#: only fail with ESRCH, never hit a real process.
NO_PID = 2**22 + 1


def make_tree(root: Path, version: int, parent: str, names: list[str]) -> None:
    """Lay out ``root`` as a cgroup ``version`` mount with components ``names`` under
    ``parent``, every one idle, unlimited and holding no process."""
    if version == 2:
        root.mkdir(parents=True, exist_ok=True)
        (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        _files(root / parent, {"memory.max": "max", "cpu.max": "max 100000"})
        for name in names:
            _files(
                root / parent / name,
                {
                    "memory.current": "0",
                    "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
                    "memory.high": "max",
                    "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
                    "cpu.max": "max 100000",
                    "cgroup.procs": "",
                },
            )
        return
    _files(root / "memory", {"memory.usage_in_bytes": "0"})
    _files(root / "memory" / parent, {"memory.limit_in_bytes": _UNLIMITED})
    _files(root / "cpu" / parent, {"cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000"})
    (root / "cpuacct" / parent).mkdir(parents=True, exist_ok=True)
    for name in names:
        _files(
            root / "memory" / parent / name,
            {
                "memory.usage_in_bytes": "0",
                "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n",
                "memory.soft_limit_in_bytes": _UNLIMITED,
                "cgroup.procs": "",
            },
        )
        _files(
            root / "cpu" / parent / name,
            {
                "cpu.cfs_quota_us": "-1",
                "cpu.cfs_period_us": "100000",
                "cpu.stat": "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
                "cgroup.procs": "",
            },
        )
        _files(root / "cpuacct" / parent / name, {"cpuacct.usage": "0", "cgroup.procs": ""})


def set_usage(
    root: Path,
    version: int,
    parent: str,
    name: str,
    cpu_s: float,
    mem_gib: float,
    pids=(NO_PID,),
    throttled: int = 0,
) -> None:
    """Write a component's cumulative CPU seconds, memory charge, throttled CFS periods and
    process list (by default one process that cannot exist, so that a kill in a test signals
    nobody)."""
    procs = "".join(f"{p}\n" for p in pids)
    if version == 2:
        d = root / parent / name
        (d / "memory.current").write_text(str(int(mem_gib * GIB)))
        (d / "cpu.stat").write_text(
            f"usage_usec {int(cpu_s * 1e6)}\nuser_usec 0\nnr_throttled {throttled}\n"
        )
        (d / "cgroup.procs").write_text(procs)
        return
    (root / "memory" / parent / name / "memory.usage_in_bytes").write_text(str(int(mem_gib * GIB)))
    (root / "cpuacct" / parent / name / "cpuacct.usage").write_text(str(int(cpu_s * 1e9)))
    (root / "cpu" / parent / name / "cpu.stat").write_text(
        f"nr_periods 0\nnr_throttled {throttled}\nthrottled_time 0\n"
    )
    for controller in ("memory", "cpu", "cpuacct"):
        (root / controller / parent / name / "cgroup.procs").write_text(procs)


def _files(directory: Path, files: dict[str, str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for fname, text in files.items():
        (directory / fname).write_text(text)
