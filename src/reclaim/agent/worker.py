"""A component to manage in demos and tests: holds memory in phases, plain standard library.

    python worker.py --mib 30,120 --hold 5

holds 30 MiB for 5 s, then 120 MiB for 5 s, and so on in a cycle; ``--hold 0`` changes phase
only on SIGUSR1 (so a test decides when usage jumps). Every page is written, so the memory is
resident and charged to the process's cgroup. Run it by path, not with ``-m``: importing the
``reclaim`` package would add its own footprint to the usage the agent watches.
"""

from __future__ import annotations

import argparse
import mmap
import os
import signal
import subprocess
import sys
import time

_MIB = 1 << 20


def _hold(mib: int) -> mmap.mmap:
    """``mib`` MiB of written anonymous memory; an mmap rather than bytearrays because malloc
    may keep freed heap blocks, and the next phase's drop must reach the cgroup's counter."""
    block = mmap.mmap(-1, max(mib, 1) * _MIB)
    chunk = b"\x01" * _MIB
    for _ in range(mib):
        block.write(chunk)
    return block


def spawn(cgroups, name: str, mib: str, hold: float = 0.0) -> subprocess.Popen:
    """Start this program inside component ``name``'s cgroup (``cgroups``: a
    :class:`reclaim.agent.cgroups.Cgroups`); it joins the cgroup before exec, so every byte it
    ever allocates is charged there."""
    return subprocess.Popen(
        [sys.executable, __file__, "--mib", mib, "--hold", str(hold)],
        preexec_fn=lambda: cgroups.attach(name, os.getpid()),
        stdin=subprocess.DEVNULL,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", default="30,120", help="MiB held in each phase, comma-separated")
    parser.add_argument("--hold", type=float, default=5.0, help="seconds per phase; 0: SIGUSR1")
    args = parser.parse_args()
    phases = [int(x) for x in args.mib.split(",")]
    advance = [False]
    signal.signal(signal.SIGUSR1, lambda *_: advance.__setitem__(0, True))
    k = 0
    while True:
        held = _hold(phases[k % len(phases)])
        began = time.monotonic()
        while not advance[0] and (args.hold <= 0 or time.monotonic() - began < args.hold):
            time.sleep(0.05)
        advance[0] = False
        held.close()
        k += 1


if __name__ == "__main__":
    main()
