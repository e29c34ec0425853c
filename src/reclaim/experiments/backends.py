"""Where runs execute: this process, a local process pool, or a Ray cluster.

Each backend yields ``(run, result)`` as runs finish, in any order; the caller writes the results.
Runs are submitted in the order given, which the caller sorts by seed so that a worker reuses its
cached workload (execute.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from reclaim.errors import ReclaimError
from reclaim.experiments.kind import KindRun, experiment_kind
from reclaim.processes import in_processes

BACKENDS = ("local", "ray")

#: (run, its result): a result has ``write(folder)`` (SimResult for shaping runs).
Finished = Iterator[tuple[KindRun, object]]


def run_all(
    runs: list[KindRun],
    backend: str = "local",
    jobs: int | None = None,
    address: str | None = None,
    checkpoints: Path | None = None,
) -> Finished:
    """Execute ``runs`` on ``backend``; ``jobs`` bounds the local pool, ``address`` picks the
    Ray cluster (None: start one on this machine). ``checkpoints``: the folder where long local
    runs save themselves part-way (``ExperimentKind.run_with_checkpoints``); Ray's workers may
    be other machines, so runs on Ray start over when stopped."""
    check(backend, jobs)
    return local(runs, jobs, checkpoints) if backend == "local" else on_ray(runs, address)


def check(backend: str, jobs: int | None = None) -> None:
    """Fail on a backend or job count that cannot work, before anything is written."""
    if backend not in BACKENDS:
        raise ReclaimError(f"unknown backend {backend!r} (backends: {', '.join(BACKENDS)})")
    if jobs is not None and jobs < 1:
        raise ReclaimError(f"--jobs must be at least 1, got {jobs}")


def local(
    runs: list[KindRun], jobs: int | None = None, checkpoints: Path | None = None
) -> Finished:
    """A pool of ``jobs`` processes (default: one per CPU); with one job, this process."""
    jobs = jobs or os.cpu_count() or 1
    if jobs == 1 or len(runs) <= 1:
        for run in runs:
            yield run, execute(run, checkpoints)
        return
    yield from in_processes(execute, [(run, (run, checkpoints)) for run in runs], jobs)


def on_ray(runs: list[KindRun], address: str | None = None) -> Finished:
    """One Ray task per run (one CPU each); results come back to this process as they finish."""
    try:
        import ray
    except ImportError:
        raise ReclaimError(
            "the ray backend needs Ray: install reclaim[ray] (pip install 'reclaim[ray]')"
        ) from None
    started = not ray.is_initialized()
    if started:
        try:
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                logging_level="WARNING",
            )
        except Exception as err:  # Ray raises many kinds (ConnectionError, RuntimeError, ...)
            problem = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            where = f"at {address}" if address else "on this machine"
            raise ReclaimError(
                f"--backend ray: Ray could not start {where} ({problem}); try --backend local"
            ) from None
    task = ray.remote(num_cpus=1, max_retries=0)(execute)
    pending = {task.remote(run): run for run in runs}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            run = pending.pop(done[0])
            try:
                result = ray.get(done[0])
            except ray.exceptions.RayTaskError as err:
                if isinstance(err.cause, ReclaimError):
                    raise err.cause from None
                raise
            yield run, result
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()


def execute(run: KindRun, checkpoints: Path | None = None):
    """Execute one run of any kind by its kind (a module-level function: process pools and Ray
    pickle it)."""
    kind = experiment_kind(run.kind)
    return kind.run(run) if checkpoints is None else kind.run_with_checkpoints(run, checkpoints)
