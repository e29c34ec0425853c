"""A pool of spawned local processes that hands results back as they finish: experiment runs
(``experiments.backends``) and the RL ablation's trainings (``rl.ablation``) share it."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import TypeVar

Key = TypeVar("Key")


def in_processes(
    fn: Callable[..., object], tasks: list[tuple[Key, tuple]], workers: int
) -> Iterator[tuple[Key, object]]:
    """``fn(*args)`` for each ``(key, args)`` of ``tasks`` on ``workers`` processes (at most one
    per task), submitted in order; yields ``(key, result)`` as each finishes, in any order. A
    task's exception is raised here; closing the generator cancels the tasks not yet started."""
    # spawn: workers start clean (no copied locks or numba state), on every platform
    context = multiprocessing.get_context("spawn")
    workers = min(workers, len(tasks))
    threads = max(1, (os.cpu_count() or 1) // workers)
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=share_cores, initargs=(threads,)
    )
    try:
        pending = {pool.submit(fn, *args): key for key, args in tasks}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield pending.pop(future), future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def share_cores(threads: int) -> None:
    """Give this worker's numba kernels ``threads`` threads: its share of the cores.

    Why: by default every worker starts one numba thread per core, and OpenMP's idle threads spin
    while they wait, so workers running parallel kernels at once take cores from each other's
    useful threads. The kernels give the same results whatever the number of threads."""
    import numba

    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
