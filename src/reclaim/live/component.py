"""One component of a live run: replays a real usage series and slows when its CPU is throttled.

    python -I -S component.py --shape SHAPE.f32 --offset 7 --cores 0.5 --mib 200 --period 1 --work 60

The simulator says a component ``k`` periods after its start uses
``shapes[shape][(shape_offset + k) % len] * request`` and finishes after ``work`` seconds unless
throttled; this program makes a real process do the same, so a live scheduler sees the usage the
simulator assumed and pays the same price for a quota that is too small:

- memory: resident memory tracks the series (an mmap reserved once at the series' maximum, every
  page written so it is charged to the cgroup, freed with MADV_DONTNEED when usage falls);
- CPU: a duty cycle spins for ``demand * slice`` of CPU time in each ``--slice`` of wall time;
  one thread, so the demand is capped at 1.0 core;
- work: a slice counts as ``wall * min(1, cpu_got / cpu_wanted)`` of progress (as a Spark
  executor slows when CFS throttles it), the CPU wanted being the demand over the slice's actual
  wall time: a throttled slice overruns its end, and that wait must count against it too.
  Usage follows wall time, not progress.

Standard library only and run by path: importing ``reclaim`` or numpy would add tens of MiB of
its own to the memory being replayed. SIGTERM keeps its default action (exit status 143), and
the kernel sends SIGKILL if the launcher dies first (PR_SET_PDEATHSIG), so even a launcher killed
with SIGKILL leaves no component behind.
"""

from __future__ import annotations

import argparse
import array
import ctypes
import math
import mmap
import os
import signal
import sys
import time

_MIB = 1 << 20
_PAGE = os.sysconf("SC_PAGE_SIZE")
# Below this much wanted CPU time a slice counts fully: wanting no CPU is never slowed by lack of it.
_MIN_WANTED = 1e-4
# Spin between CPU-clock reads (a syscall, ~0.5 us): ~10 us, so reads cost little of the spin
# and a slice overshoots its CPU time by no more than that.
_SPIN = range(2000)


def _fail(message: str) -> None:
    print(f"component: {message}", file=sys.stderr)
    sys.exit(2)


def _load_shape(path: str) -> array.array:
    """(cpu_fraction, mem_fraction) pairs, flattened: a raw little-endian float32 N x 2 file."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as err:
        _fail(f"cannot read shape file {path}: {err.strerror}")
    if not raw or len(raw) % 8:
        _fail(
            f"shape file {path}: {len(raw)} bytes, need a non-empty multiple of 8 (N x 2 float32)"
        )
    values = array.array("f")
    values.frombytes(raw)
    if sys.byteorder == "big":
        values.byteswap()
    if not all(math.isfinite(v) and v >= 0 for v in values):
        _fail(f"shape file {path}: fractions must be finite and non-negative")
    return values


def _resident_bytes() -> int:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * _PAGE


class _Memory:
    """Written anonymous memory, resized in place: one mapping reserved at the largest size the
    series needs (untouched pages cost nothing), pages written on growth and returned to the
    kernel on shrinking, so usage never overshoots the target while it changes."""

    def __init__(self, most: int) -> None:
        self.block = mmap.mmap(-1, most) if most > 0 else None
        self.held = 0
        self.chunk = memoryview(b"\x01" * _MIB)

    def hold(self, nbytes: int) -> None:
        nbytes = min(max(0, -(-nbytes // _PAGE) * _PAGE), len(self.block) if self.block else 0)
        if nbytes > self.held:
            for at in range(self.held, nbytes, _MIB):
                n = min(_MIB, nbytes - at)
                self.block[at : at + n] = self.chunk[:n]
        elif nbytes < self.held:
            self.block.madvise(mmap.MADV_DONTNEED, nbytes, self.held - nbytes)
        self.held = nbytes


def _die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent (the launcher) exits."""
    launcher = os.getppid()
    with_errno = ctypes.CDLL(None, use_errno=True)
    if with_errno.prctl(1, signal.SIGKILL, 0, 0, 0) != 0:  # 1: PR_SET_PDEATHSIG
        return
    if os.getppid() != launcher:  # it died before the request took effect
        os._exit(1)


def main() -> None:
    _die_with_parent()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", required=True, help="raw little-endian float32 N x 2 file")
    parser.add_argument("--offset", type=int, default=0, help="the sample the component starts at")
    parser.add_argument("--cores", type=float, required=True, help="cores a fraction of 1 means")
    parser.add_argument("--mib", type=float, required=True, help="MiB a fraction of 1 means")
    parser.add_argument("--period", type=float, required=True, help="wall seconds per sample")
    parser.add_argument("--work", type=float, required=True, help="wall seconds at full speed")
    parser.add_argument("--slice", type=float, default=0.05, help="CPU duty-cycle slice (s)")
    args = parser.parse_args()
    if args.period <= 0 or args.slice <= 0 or args.cores < 0 or args.mib < 0:
        parser.error("--period and --slice must be positive, --cores and --mib non-negative")
    shape = _load_shape(args.shape)
    n = len(shape) // 2

    baseline = _resident_bytes()
    most = max(shape[1::2]) * args.mib * _MIB - baseline
    memory = _Memory(-(-int(max(0.0, most)) // _PAGE) * _PAGE)

    clock, cpu_clock, sleep = time.monotonic, time.process_time, time.sleep
    start = clock()
    progress, k, demand = 0.0, -1, 0.0
    while progress < args.work:
        t0, c0 = clock(), cpu_clock()
        now_k = int((t0 - start) / args.period)
        if now_k != k:
            k = now_k
            i = 2 * ((args.offset + k) % n)
            demand = min(1.0, shape[i] * args.cores)
            memory.hold(int(shape[i + 1] * args.mib * _MIB) - baseline)
        boundary = start + (k + 1) * args.period
        remaining = args.work - progress
        if demand * min(args.slice, remaining) < _MIN_WANTED:
            # Nothing to spin for: one sleep to the next sample or the end of the work.
            sleep(max(0.0, min(boundary, t0 + remaining) - clock()))
            progress += clock() - t0
            continue
        end = t0 + min(args.slice, remaining, max(boundary - t0, 1e-3))
        wanted = demand * (end - t0)
        while cpu_clock() - c0 < wanted and clock() < end:
            for _ in _SPIN:
                pass
        rest = end - clock()
        if rest > 0:
            sleep(rest)
        got = cpu_clock() - c0
        wall = clock() - t0
        wanted = demand * wall
        progress += wall if wanted < _MIN_WANTED else wall * min(1.0, got / wanted)


if __name__ == "__main__":
    main()
