"""A pool of spawned local processes that hands results back as they finish: experiment runs
(``experiments.backends``) and the RL ablation's trainings (``rl.ablation``) share it.

Nothing outlives the command: leaving the pool by an exception (Ctrl-C, SIGTERM, a failed task)
terminates the workers instead of waiting for their runs to end, and a worker whose parent died
without that chance (SIGKILL) exits by itself within a second. Once the workers are gone,
multiprocessing's resource tracker reads the end of its pipe and exits too.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import TypeVar

Key = TypeVar("Key")
#: Seconds between a worker's checks that its parent is alive, and between the parent's checks
#: for a signal while it waits for results.
PARENT_CHECK_S = 0.5
#: Seconds terminated workers get to exit before they are killed.
TERMINATE_GRACE_S = 2.0


def in_processes(
    fn: Callable[..., object], tasks: list[tuple[Key, tuple]], workers: int
) -> Iterator[tuple[Key, object]]:
    """``fn(*args)`` for each ``(key, args)`` of ``tasks`` on ``workers`` processes (at most one
    per task), submitted in order; yields ``(key, result)`` as each finishes, in any order. A
    task's exception is raised here. Leaving early (closing the generator, an exception, a
    signal) cancels the tasks not yet started and terminates the ones running."""
    # spawn: workers start clean (no copied locks or numba state), on every platform
    context = multiprocessing.get_context("spawn")
    workers = min(workers, len(tasks))
    threads = max(1, (os.cpu_count() or 1) // workers)
    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start_worker, initargs=(threads, os.getpid())
    )
    finished = False
    try:
        pending = {pool.submit(fn, *args): key for key, args in tasks}
        while pending:
            # a timeout, not a blocking wait: a signal delivered to another thread of this
            # process runs its Python handler only once the main thread wakes
            done, _ = wait(pending, timeout=PARENT_CHECK_S, return_when=FIRST_COMPLETED)
            for future in done:
                yield pending.pop(future), future.result()
        finished = True
    finally:
        if not finished:
            _terminate(set(multiprocessing.active_children()) - before)
        pool.shutdown(wait=True, cancel_futures=True)


def _terminate(processes: set) -> None:
    """SIGTERM ``processes``, then SIGKILL whichever is still alive after the grace period."""
    for process in processes:
        process.terminate()
    deadline = time.monotonic() + TERMINATE_GRACE_S
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()


def _start_worker(threads: int, parent: int) -> None:
    """A worker's set-up: its share of the cores, Ctrl-C left to the parent (which ends the
    workers itself), and exit as soon as the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    share_cores(threads)
    exit_with_parent(parent)


def exit_with_parent(parent: int) -> None:
    """End this process when process ``parent`` dies, however it dies.

    Linux delivers SIGKILL on the parent's death (prctl PR_SET_PDEATHSIG); a daemon thread that
    polls the parent's pid covers other systems, and a death before the prctl call."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def share_cores(threads: int) -> None:
    """Give this worker's numba kernels ``threads`` threads: its share of the cores.

    Why: by default every worker starts one numba thread per core, and OpenMP's idle threads spin
    while they wait, so workers running parallel kernels at once take cores from each other's
    useful threads. The kernels give the same results whatever the number of threads."""
    import numba

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
