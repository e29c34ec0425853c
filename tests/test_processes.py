import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numba
import pytest

from reclaim.processes import in_processes


def _threads() -> int:
    return numba.get_num_threads()


def test_workers_share_the_cores_between_them():
    cores = os.cpu_count() or 1
    tasks = [(i, ()) for i in range(2)]
    threads = dict(in_processes(_threads, tasks, 2))
    expected = min(max(1, cores // 2), numba.config.NUMBA_NUM_THREADS)
    assert threads == {0: expected, 1: expected}


def test_a_single_worker_keeps_every_core():
    threads = dict(in_processes(_threads, [(0, ())], 4))
    assert threads == {0: min(os.cpu_count() or 1, numba.config.NUMBA_NUM_THREADS)}


# ---- nothing is left running (issue 33) ------------------------------------------------------
SLOW_SPEC = """
name = "slow"
[scale.small]
apps = 400
hosts = "10x32c128g"
seeds = [1, 2, 3, 4]
[[runs]]
controller = "pessimistic"
forecaster = "naive"
"""


def _session(sid: int) -> list[int]:
    """Live (not zombie) processes of session ``sid``: the command, its workers and the
    resource tracker, all of which inherit the session of the command."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _, _, session = stat[stat.rindex(")") + 2 :].split()[:4]
        if int(session) == sid and state != "Z":
            alive.append(int(entry.name))
    return alive


def _run_then_signal(tmp_path: Path, signum: int) -> tuple[subprocess.Popen, list[int]]:
    """Start ``experiment run --jobs 2`` in its own session, wait until both workers run,
    send ``signum`` to the command and return it with its session's processes 5 s later."""
    (tmp_path / "spec.toml").write_text(SLOW_SPEC)
    command = [sys.executable, "-c", "from reclaim.cli import main; main()", "experiment", "run"]
    args = [str(tmp_path / "spec.toml"), "--jobs", "2", "-o", str(tmp_path / "out")]
    proc = subprocess.Popen(
        [*command, *args],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        # the command, two workers and the resource tracker
        while len(_session(proc.pid)) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(_session(proc.pid)) >= 4, "the pool never started"
        time.sleep(2)  # the workers are inside their runs
        os.kill(proc.pid, signum)
        time.sleep(5)
        return proc, _session(proc.pid)
    finally:
        for pid in _session(proc.pid):  # leave nothing behind whatever the outcome
            os.kill(pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_command_ends_its_workers_and_resource_tracker(tmp_path, signum):
    proc, left = _run_then_signal(tmp_path, signum)
    assert left == []
    assert proc.returncode == 128 + signum if signum == signal.SIGTERM else proc.returncode != 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_exit_by_themselves_when_the_command_is_killed(tmp_path):
    _, left = _run_then_signal(tmp_path, signal.SIGKILL)
    assert left == []
