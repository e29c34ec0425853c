"""The live component as real processes: memory tracks the series, CPU follows the demand, and a
CFS quota below the demand slows the work (the price a too-small reservation pays live)."""

from __future__ import annotations

import array
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import reclaim

COMPONENT = Path(reclaim.__file__).parent / "live" / "component.py"
_MIB = 1 << 20


def _shape(path: Path, rows: list[tuple[float, float]]) -> Path:
    values = array.array("f", [v for row in rows for v in row])
    if sys.byteorder == "big":
        values.byteswap()
    path.write_bytes(values.tobytes())
    return path


def _start(shape: Path, *, cores: float, mib: float, period: float, work: float, **kw):
    cmd = [sys.executable, "-I", "-S", str(COMPONENT), "--shape", str(shape)]
    cmd += ["--cores", str(cores), "--mib", str(mib), "--period", str(period), "--work", str(work)]
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)


@contextlib.contextmanager
def _running(proc: subprocess.Popen):
    """Kill the component whatever the test asserted, so no process outlives it."""
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


def _wait4(proc: subprocess.Popen, timeout: float):
    """Reap ``proc`` (exit code, CPU seconds it used), failing after ``timeout`` wall seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return proc.returncode, usage.ru_utime + usage.ru_stime
        time.sleep(0.01)
    pytest.fail(f"component still running after {timeout} s")


def _rss_mib(pid: int) -> float | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None  # a zombie has no VmRSS


def test_memory_tracks_the_series_and_work_ends_on_time(tmp_path):
    # 40 MiB, 80 MiB, then 40 MiB again (the series wraps) for the last 0.4 s.
    shape = _shape(tmp_path / "mem.f32", [(0.0, 0.5), (0.0, 1.0)])
    began = time.monotonic()
    with _running(_start(shape, cores=1.0, mib=80, period=0.5, work=1.4)) as proc:
        seen = []
        while proc.poll() is None:
            rss = _rss_mib(proc.pid)
            if rss is not None:
                seen.append(rss)
            time.sleep(0.01)
        took = time.monotonic() - began
        assert proc.returncode == 0, proc.stderr.read().decode()
    assert 1.2 <= took < 3.5
    near_40 = [i for i, rss in enumerate(seen) if abs(rss - 40) <= 8]
    near_80 = [i for i, rss in enumerate(seen) if abs(rss - 80) <= 8]
    assert near_40 and near_80, seen
    assert near_40[0] < near_80[0] < near_40[-1], seen  # up in the second sample, down in the third
    assert max(seen) <= 88, seen  # growing in place never holds both sizes at once


def test_cpu_follows_the_demand(tmp_path):
    shape = _shape(tmp_path / "cpu.f32", [(1.0, 0.0)])
    began = time.monotonic()
    with _running(_start(shape, cores=0.5, mib=0, period=1.0, work=1.0)) as proc:
        code, cpu = _wait4(proc, timeout=10)
        took = time.monotonic() - began
        assert code == 0, proc.stderr.read().decode()
    assert 0.35 <= cpu <= 0.7
    assert 0.95 <= took < 3.0


def _throttled_cgroup(name: str, quota_us: int, period_us: int) -> Path:
    """A cgroup limited to ``quota_us / period_us`` cores: v1's cpu hierarchy, else v2 cpu.max."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a cgroup")
    root = Path("/sys/fs/cgroup")
    v1 = root / "cpu" / "cpu.cfs_quota_us"
    try:
        if v1.is_file():
            path = root / "cpu" / name
            path.mkdir()
            (path / "cpu.cfs_period_us").write_text(str(period_us))
            (path / "cpu.cfs_quota_us").write_text(str(quota_us))
        elif "cpu" in (root / "cgroup.subtree_control").read_text().split():
            path = root / name
            path.mkdir()
            (path / "cpu.max").write_text(f"{quota_us} {period_us}")
        else:
            pytest.skip("no cgroup v1 cpu hierarchy and no v2 cpu controller enabled at the root")
    except OSError as err:
        pytest.skip(f"cannot create a throttled cgroup: {err}")
    return path


def test_a_quota_below_the_demand_slows_the_work(tmp_path):
    shape = _shape(tmp_path / "cpu.f32", [(1.0, 0.0)])
    cgroup = _throttled_cgroup(f"reclaim-test-component-{os.getpid()}", 25_000, 100_000)
    procs = str(cgroup / "cgroup.procs")

    def join() -> None:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    try:
        began = time.monotonic()
        with _running(_start(shape, cores=1.0, mib=0, period=1.0, work=1.0, preexec_fn=join)) as p:
            code, cpu = _wait4(p, timeout=10)
            took = time.monotonic() - began
            assert code == 0, p.stderr.read().decode()
        # A quarter of the CPU it wants: progress at about a quarter speed, ~4 s for 1 s of work.
        assert 2.5 <= took < 8.0
        assert cpu < 0.25 * took + 0.2
    finally:
        for _ in range(50):  # the kernel may hold the cgroup busy a moment after its last exit
            try:
                cgroup.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


def test_a_bad_shape_file_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.f32"
    bad.write_bytes(b"1234567")
    with _running(_start(bad, cores=1.0, mib=10, period=1.0, work=1.0)) as proc:
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 2
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0], lines
    assert "Traceback" not in err.decode()


def test_sigterm_ends_it_promptly(tmp_path):
    shape = _shape(tmp_path / "cpu.f32", [(1.0, 0.5)])
    with _running(_start(shape, cores=0.5, mib=40, period=1.0, work=60)) as proc:
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=2) == -signal.SIGTERM  # a shell reports 143
