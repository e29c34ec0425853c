"""Cgroup file access for the live agent: v1/v2 detection, the parent check, batched reads, writes.

The agent manages components as cgroups under one configured parent. Plain file reads and writes
are all the kernel interface there is (no library is needed, and none would be faster); both
hierarchies are handled behind one class so the loop never asks which one it runs on:

- v1 (one hierarchy per controller, ``ROOT/memory/PARENT/NAME`` and the same under ``cpu`` and
  ``cpuacct``): usage ``memory.usage_in_bytes`` and ``cpuacct.usage`` (ns), OOM kills from
  ``memory.oom_control``, throttled CFS periods from ``cpu.stat`` nr_throttled, soft limit
  ``memory.soft_limit_in_bytes``, CPU quota ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``.
- v2 (one unified hierarchy, ``ROOT/PARENT/NAME``): ``memory.current``, ``cpu.stat`` usage_usec
  and nr_throttled, ``memory.events`` oom_kill, soft limit ``memory.high``, quota ``cpu.max``
  ("QUOTA PERIOD").

Every directory is resolved (symlinks, ``..``) and must lie strictly inside the resolved parent:
a config naming ``../system.slice`` is refused, not obeyed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from reclaim.core.types import CPU, MEM, R
from reclaim.errors import ReclaimError

GIB = float(2**30)
# v1 reports "no limit" as a page-rounded 2^63 - 1; anything this large is no limit.
_UNLIMITED_BYTES = 2**62
# The kernel refuses CFS quotas under 1 ms.
_MIN_QUOTA_US = 1000
_V1_CONTROLLERS = ("memory", "cpu", "cpuacct")


class CgroupError(ReclaimError):
    """A cgroup tree the agent cannot or must not manage."""


def detect(root: Path) -> int:
    """The cgroup version mounted at ``root``: 2 for a unified hierarchy with the memory
    controller, 1 for per-controller v1 hierarchies (a hybrid mount's empty v2 side is ignored)."""
    controllers = root / "cgroup.controllers"
    if controllers.is_file() and "memory" in controllers.read_text().split():
        return 2
    if (root / "memory" / "memory.usage_in_bytes").is_file():
        return 1
    raise CgroupError(f"{root}: neither a cgroup v2 hierarchy with memory nor v1 memory/ found")


# os.open/os.read rather than open(): no buffered-IO object per file, three times faster, and a
# period reads four small files per component (bench_agent.py).
def read_file(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 65536)
    finally:
        os.close(fd)


def write_file(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def field(text: bytes, key: bytes) -> int:
    """The integer after ``key`` in a flat-keyed file (cpu.stat, memory.events, oom_control);
    0 when the kernel does not report it."""
    for line in text.splitlines():
        name, _, value = line.partition(b" ")
        if name == key:
            return int(value)
    return 0


def _rmdir(path: str, tries: int) -> None:
    for attempt in range(tries):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if attempt == tries - 1:
                raise
            time.sleep(0.1)


#: Reading.procs of a cgroup whose usage files are there but cannot be parsed.
GARBLED = -2


class Reading(NamedTuple):
    """One read of every component, (n,) each: cumulative CPU seconds, memory GiB, OOM kills so
    far, CFS periods throttled so far, and process count (-1 where a cgroup is gone or
    unreadable, GARBLED where a usage file holds something that is no number)."""

    cpu_s: NDArray[np.float64]
    mem: NDArray[np.float64]
    ooms: NDArray[np.int64]
    throttled: NDArray[np.int64]
    procs: NDArray[np.int64]


class Cgroups:
    """The components' cgroups under ``root``/``parent``, by directory name.

    ``version`` None detects it from ``root``. Reads and writes take lists of names and return
    columnar arrays with an ``ok`` mask, so one unreadable cgroup never stops a period.
    """

    def __init__(self, root: Path | str, parent: str, version: int | None = None) -> None:
        self.root = Path(root)
        self.parent = parent
        self.version = detect(self.root) if version is None else version
        if self.version not in (1, 2):
            raise CgroupError(f"cgroup version must be 1 or 2, got {self.version}")
        self._period_us: dict[str, int] = {}
        self._dirs: dict[str, dict[str, str]] = {}

    # ------------------------------------------------------------------ paths and the parent check
    def _parent_dir(self, controller: str) -> Path:
        base = self.root / controller if self.version == 1 else self.root
        return base / self.parent

    def parent_dirs(self) -> list[Path]:
        """The parent's directory in every hierarchy the agent uses."""
        if self.version == 1:
            return [self._parent_dir(c) for c in _V1_CONTROLLERS]
        return [self._parent_dir("")]

    def dirs(self, name: str) -> dict[str, str]:
        """Controller -> directory of component ``name`` (v2: one directory for all three),
        each checked to resolve strictly inside the parent.

        Resolved once per name and cached (resolving costs a stat per path element, three
        hierarchies, every read); :meth:`forget` drops a name whose cgroup went away.
        """
        cached = self._dirs.get(name)
        if cached is not None:
            return cached
        out = {}
        for controller in _V1_CONTROLLERS:
            parent = self._parent_dir(controller if self.version == 1 else "")
            path = os.path.realpath(parent / name)
            inside = os.path.realpath(parent)
            if os.path.commonpath([path, inside]) != inside or path == inside:
                raise CgroupError(
                    f"cgroup {name!r} resolves to {path}, outside the managed parent {inside}"
                )
            out[controller] = path
        self._dirs[name] = out
        return out

    def forget(self, name: str) -> None:
        """Resolve ``name`` again next time (its cgroup was removed and may come back)."""
        self._dirs.pop(name, None)
        self._period_us.pop(name, None)

    def exists(self, name: str) -> bool:
        return os.path.isdir(self.dirs(name)["memory"])

    def missing(self, names: list[str]) -> list[str]:
        """The ``names`` without a cgroup directory in some hierarchy the agent uses."""
        return [n for n in names if not all(os.path.isdir(d) for d in self.dirs(n).values())]

    def create(self, name: str) -> None:
        """Make component ``name``'s cgroup in every hierarchy (demos and tests; in production
        the runtime that starts the component makes it)."""
        for parent in self.parent_dirs():
            parent.mkdir(exist_ok=True)
        if self.version == 2:  # v2 hands controllers down only where a parent enables them
            for d in (self.root, self._parent_dir("")):
                if (d / "cgroup.subtree_control").is_file():
                    write_file(str(d / "cgroup.subtree_control"), "+cpu +memory")
        for path in dict.fromkeys(self.dirs(name).values()):
            os.makedirs(path, exist_ok=True)

    def remove(self, name: str, tries: int = 50) -> None:
        """Remove component ``name``'s (empty) cgroup everywhere; the kernel refuses (EBUSY)
        until its killed processes have exited, so it is retried for up to ``tries`` x 0.1 s."""
        for path in dict.fromkeys(self.dirs(name).values()):
            _rmdir(path, tries)
        self.forget(name)

    def remove_parent(self, tries: int = 50) -> None:
        for path in self.parent_dirs():
            _rmdir(str(path), tries)

    def attach(self, name: str, pid: int) -> None:
        """Move process ``pid`` into component ``name``'s cgroup in every hierarchy."""
        for path in dict.fromkeys(self.dirs(name).values()):
            write_file(os.path.join(path, "cgroup.procs"), str(pid))

    # ------------------------------------------------------------------ reads
    def read_usage(self, names: list[str]) -> Reading:
        """Every cgroup's counters (:class:`Reading`); a throttling counter the kernel does not
        report reads as 0."""
        n = len(names)
        cpu_s, mem, ooms = np.zeros(n), np.zeros(n), np.zeros(n, np.int64)
        throttled = np.zeros(n, np.int64)
        procs = np.full(n, -1, np.int64)
        for i, name in enumerate(names):
            try:
                d = self.dirs(name)
                if self.version == 1:
                    m = d["memory"]
                    mem[i] = int(read_file(m + "/memory.usage_in_bytes")) / GIB
                    cpu_s[i] = int(read_file(d["cpuacct"] + "/cpuacct.usage")) / 1e9
                    ooms[i] = field(read_file(m + "/memory.oom_control"), b"oom_kill")
                    throttled[i] = field(read_file(d["cpu"] + "/cpu.stat"), b"nr_throttled")
                else:
                    m = d["memory"]
                    mem[i] = int(read_file(m + "/memory.current")) / GIB
                    stat = read_file(m + "/cpu.stat")
                    cpu_s[i] = field(stat, b"usage_usec") / 1e6
                    throttled[i] = field(stat, b"nr_throttled")
                    ooms[i] = field(read_file(m + "/memory.events"), b"oom_kill")
                procs[i] = read_file(m + "/cgroup.procs").count(b"\n")
            except OSError:
                procs[i] = -1
            except ValueError:  # a file there holds no number: not a silent zero
                procs[i] = GARBLED
        return Reading(cpu_s, mem, ooms, throttled, procs)

    def read_limits(self, names: list[str]) -> NDArray[np.float32]:
        """(n, R) current CPU quota (cores) and memory soft limit (GiB); inf where unlimited or
        unreadable (the agent then rewrites it)."""
        out = np.full((len(names), R), np.inf, np.float32)
        for i, name in enumerate(names):
            try:
                quota_us, period_us = self._quota(self.dirs(name)["cpu"])
                if quota_us > 0:
                    out[i, CPU] = quota_us / period_us
                out[i, MEM] = self._soft_limit(self.dirs(name)["memory"])
            except (OSError, ValueError):
                continue
        return out

    def capacity(self) -> NDArray[np.float64]:
        """(R,) the parent's own hard limits, cores and GiB; inf where it has none."""
        out = np.full(R, np.inf)
        try:
            quota_us, period_us = self._quota(
                str(self._parent_dir("cpu" if self.version == 1 else ""))
            )
            if quota_us > 0:
                out[CPU] = quota_us / period_us
            mem_dir = str(self._parent_dir("memory" if self.version == 1 else ""))
            fname = "/memory.limit_in_bytes" if self.version == 1 else "/memory.max"
            text = read_file(mem_dir + fname).strip()
            if text != b"max" and int(text) < _UNLIMITED_BYTES:
                out[MEM] = int(text) / GIB
        except (OSError, ValueError):
            pass
        return out

    def _quota(self, cpu_dir: str) -> tuple[int, int]:
        """(quota_us, period_us) of a directory; quota -1 when unlimited."""
        if self.version == 1:
            quota = int(read_file(cpu_dir + "/cpu.cfs_quota_us"))
            period = int(read_file(cpu_dir + "/cpu.cfs_period_us"))
            return quota, period
        quota, period = read_file(cpu_dir + "/cpu.max").split()
        return (-1 if quota == b"max" else int(quota)), int(period)

    def _soft_limit(self, mem_dir: str) -> float:
        fname = "/memory.soft_limit_in_bytes" if self.version == 1 else "/memory.high"
        text = read_file(mem_dir + fname).strip()
        if text == b"max" or int(text) >= _UNLIMITED_BYTES:
            return np.inf
        return int(text) / GIB

    # ------------------------------------------------------------------ writes
    def write_limits(self, names: list[str], limits: NDArray[np.floating]) -> NDArray[np.bool_]:
        """Set each cgroup's CPU quota (cores) and memory soft limit (GiB) from ``limits`` (n, R);
        returns which writes succeeded. An infinite limit removes the quota / soft limit."""
        ok = np.ones(len(names), bool)
        for i, name in enumerate(names):
            try:
                d = self.dirs(name)
                cores, gib = float(limits[i, CPU]), float(limits[i, MEM])
                period = self._period_us.get(name)
                if period is None:
                    period = self._period_us[name] = self._quota(d["cpu"])[1]
                quota = -1 if not np.isfinite(cores) else max(_MIN_QUOTA_US, round(cores * period))
                mem = -1 if not np.isfinite(gib) else int(gib * GIB)
                if self.version == 1:
                    write_file(d["cpu"] + "/cpu.cfs_quota_us", str(quota))
                    write_file(d["memory"] + "/memory.soft_limit_in_bytes", str(mem))
                else:
                    write_file(d["cpu"] + "/cpu.max", f"{'max' if quota < 0 else quota} {period}")
                    write_file(d["memory"] + "/memory.high", "max" if mem < 0 else str(mem))
            except (OSError, ValueError):
                ok[i] = False
        return ok

    # ------------------------------------------------------------------ preemption
    def pids(self, name: str) -> set[int]:
        """Every process in the component's cgroup, across hierarchies."""
        out: set[int] = set()
        for path in dict.fromkeys(self.dirs(name).values()):
            try:
                out.update(int(p) for p in read_file(path + "/cgroup.procs").split())
            except OSError:
                continue
        return out

    def kill(self, name: str, passes: int = 5) -> int:
        """SIGKILL every process of the component; returns how many were signalled.

        A process may fork while we read the list, so the list is read again until it holds
        nobody new (at most ``passes`` times).
        """
        killed: set[int] = set()
        for _ in range(passes):
            fresh = self.pids(name) - killed
            if not fresh:
                break
            for pid in fresh:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            killed |= fresh
        return len(killed)
