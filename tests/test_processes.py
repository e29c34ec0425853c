import os

import numba

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
