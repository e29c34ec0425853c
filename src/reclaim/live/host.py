"""The live host: one parent cgroup with hard limits, held by one run at a time, left as found.

Everything a live run starts lives in component cgroups under this parent, so the parent's hard
memory limit and CPU quota bound the whole run whatever a component or the agent does. Entering
takes an exclusive lock (a second run over the same parent is refused while the first lives),
refuses a parent that already holds processes, and writes the limits; leaving, however the run
ends, kills every process in every component cgroup, removes those cgroups, and puts the parent's
limits back (or removes the parent if the run made it).
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import numpy as np

from reclaim.agent.cgroups import GIB, CgroupError, Cgroups, field, read_file, write_file

_LOCK_DIR = Path("/run/lock") if Path("/run/lock").is_dir() else Path("/tmp")
_PERIOD_US = 100_000


class LiveHost:
    """Context manager over ``root``/``parent``: capacity ``cores`` and ``mem_gib`` as hard
    limits on the parent; ``cgroups`` manages the components beneath it."""

    def __init__(self, root: Path | str, parent: str, cores: float, mem_gib: float) -> None:
        self.cgroups = Cgroups(root, parent)
        self.parent = parent
        self.cores, self.mem_gib = cores, mem_gib
        self.components: list[str] = []
        self._lock_fd: int | None = None
        self._made: list[Path] = []
        self._saved: dict[str, bytes] = {}

    # ------------------------------------------------------------------ the parent's limit files
    def _limit_files(self) -> dict[str, str]:
        dirs = [str(p) for p in self.cgroups.parent_dirs()]
        if self.cgroups.version == 1:
            mem, cpu = dirs[0], dirs[1]  # the memory and cpu hierarchies
            return {
                "mem": f"{mem}/memory.limit_in_bytes",
                "quota": f"{cpu}/cpu.cfs_quota_us",
                "period": f"{cpu}/cpu.cfs_period_us",
            }
        return {"mem": f"{dirs[0]}/memory.max", "cpu": f"{dirs[0]}/cpu.max"}

    def __enter__(self) -> LiveHost:
        lock = _LOCK_DIR / f"reclaim-live-{self.parent.replace('/', '_')}.lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise CgroupError(
                f"another live run (pid {holder}) holds parent {self.parent!r} ({lock})"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd
        try:
            self._take_parent()
        except BaseException:
            self._release()
            raise
        return self

    def _take_parent(self) -> None:
        for d in self.cgroups.parent_dirs():
            if d.is_dir():
                procs = read_file(str(d / "cgroup.procs")).split()
                if procs:
                    raise CgroupError(
                        f"{d} already holds {len(procs)} processes: a live run needs a parent "
                        "of its own"
                    )
            else:
                d.mkdir(parents=True)
                self._made.append(d)
        files = self._limit_files()
        self._saved = {k: read_file(f).strip() for k, f in files.items() if k != "period"}
        if self.cgroups.version == 1:
            period = int(read_file(files["period"]))
            write_file(files["quota"], str(round(self.cores * period)))
            write_file(files["mem"], str(int(self.mem_gib * GIB)))
        else:
            write_file(files["cpu"], f"{round(self.cores * _PERIOD_US)} {_PERIOD_US}")
            write_file(files["mem"], str(int(self.mem_gib * GIB)))

    # ------------------------------------------------------------------ components
    def prepare(self, name: str, cores: float, mem_gib: float) -> None:
        """Make (or reuse) component ``name``'s cgroup with its reservation: CPU quota and
        memory soft limit at the request, hard memory limit at the request too (a component
        above its reservation is out of memory, as under the scheduler it ran on)."""
        cg = self.cgroups
        cg.create(name)
        if name not in self.components:
            self.components.append(name)
        mem_dir = cg.dirs(name)["memory"]
        hard = "memory.limit_in_bytes" if cg.version == 1 else "memory.max"
        write_file(f"{mem_dir}/{hard}", str(int(mem_gib * GIB)))
        cg.write_limits([name], np.array([[cores, mem_gib]]))

    def join_command(self, name: str) -> list[str]:
        """A ``sh`` prefix that moves itself into ``name``'s cgroup (every hierarchy) and then
        execs the rest of the command line: no ``preexec_fn`` in a threaded process."""
        targets = dict.fromkeys(self.cgroups.dirs(name).values())
        joins = "; ".join(f"echo $$ > {path}/cgroup.procs" for path in targets)
        return ["sh", "-c", f'{joins} && exec "$@"', "sh"]

    def oom_kills(self, name: str | None = None) -> int:
        """The kernel's count of OOM kills in component ``name``'s memory cgroup (None: the
        parent's, which v1 counts where its hard limit was reached)."""
        d = self.cgroups.dirs(name)["memory"] if name else str(self.cgroups.parent_dirs()[0])
        fname = "memory.oom_control" if self.cgroups.version == 1 else "memory.events"
        return field(read_file(f"{d}/{fname}"), b"oom_kill")

    def processes(self) -> int:
        """Processes left anywhere under the parent."""
        n = 0
        for name in self.components:
            n += len(self.cgroups.pids(name))
        return n

    # ------------------------------------------------------------------ leaving
    def __exit__(self, *exc) -> None:
        try:
            self.kill_all()
        finally:
            self._release()

    def kill_all(self, timeout_s: float = 10.0) -> None:
        """SIGKILL every process of every component until none is left, then remove the
        component cgroups."""
        deadline = time.monotonic() + timeout_s
        while True:
            for name in self.components:
                self.cgroups.kill(name)
            if self.processes() == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        for name in self.components:
            self.cgroups.remove(name)
        self.components.clear()

    def _release(self) -> None:
        try:
            if self._saved:
                files = self._limit_files()
                for key, value in self._saved.items():
                    if key == "mem" and self.cgroups.version == 1 and int(value) >= 2**62:
                        value = b"-1"
                    write_file(files[key], value.decode())
            for d in reversed(self._made):
                os.rmdir(d)
        finally:
            if self._lock_fd is not None:
                os.ftruncate(self._lock_fd, 0)
                os.close(self._lock_fd)
                self._lock_fd = None
