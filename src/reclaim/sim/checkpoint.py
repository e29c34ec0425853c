"""Checkpoints of a long simulation: its whole state pickled between ticks every so often, so
that a run of hours (the shaping paper's world at its scale with a forecaster) stopped part-way
goes on from its last checkpoint instead of from the start.

A checkpoint is taken at the end of a tick, where the run is whole (the next tick is queued and
nothing is half done), and holds everything the simulator holds but the workload: its arrays
are stored as references and taken from the workload the resuming process builds again (the
same settings build the same workload, bit for bit), so a checkpoint of the paper's world at its
scale is the run's state, not its 3 GB of usage curves. A resumed run gives the results, bit for
bit, that it would have given uninterrupted (tests/sim/test_checkpoint.py).

A checkpoint resumes only under the code that wrote it (a hash of reclaim's source files) and on
a workload with the same arrays (their shapes and a hash of the small ones): a pickle of other
code's objects could load and then run half one version, half another.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import time as wallclock
import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from reclaim.errors import ReclaimError
from reclaim.sim.simulator import Simulator
from reclaim.workload.model import Workload

#: Wall seconds between checkpoints by default (a save of the paper's world at its scale: some
#: 45 MB and 0.2 s under the oracle, 200 MB with the GP).
EVERY_S = 600.0
#: Workload arrays hashed into a checkpoint's header (the usage curves, the big one, are not).
HASHED = ("arrival", "comp_indptr", "request", "work", "core", "shape", "shape_offset")


@dataclass(frozen=True)
class Checkpoint:
    """Where a run saves itself (``path``, one file per run) and how often, in wall seconds."""

    path: Path
    every_s: float = EVERY_S

    def run(
        self,
        build: Callable[[], Simulator],
        workload: Workload,
        on_tick: Callable[[Simulator], None] | None = None,
    ) -> Simulator:
        """The run of ``build()`` (a simulator of ``workload``) to its end: resumed from the
        checkpoint when there is one, else from the start; saved every ``every_s`` seconds. The
        checkpoint stays until :meth:`clear` (the caller clears it once the results are stored).
        A save that fails (a full disk) is a warning, and the run goes on without checkpoints."""
        header = _header(workload)
        due = [wallclock.perf_counter() + self.every_s]

        def tick(sim: Simulator) -> None:
            if on_tick is not None:
                on_tick(sim)
            if wallclock.perf_counter() >= due[0]:
                try:
                    self.save(sim, workload, header)
                    due[0] = wallclock.perf_counter() + self.every_s
                except (OSError, pickle.PicklingError, TypeError, AttributeError) as err:
                    warnings.warn(
                        f"{self.path}: checkpoint not saved ({err}); the run goes on without",
                        stacklevel=2,
                    )
                    with contextlib.suppress(OSError):
                        self._partial.unlink(missing_ok=True)
                    due[0] = np.inf

        if self.path.exists():
            sim = self.load(workload, header).resume(tick)
        else:
            sim = build()
            sim.on_tick = tick
            sim.run()
        sim.on_tick = on_tick
        return sim

    def save(self, sim: Simulator, workload: Workload, header: dict | None = None) -> None:
        """Pickle ``sim`` (``workload``'s arrays by reference) next to the checkpoint, then put
        it in its place: a save cut short leaves the previous checkpoint whole."""
        arrays = {id(a): name for name, a in _arrays(workload).items()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._partial.open("wb") as file:
            pickler = pickle.Pickler(file, protocol=pickle.HIGHEST_PROTOCOL)
            pickler.persistent_id = lambda obj: arrays.get(id(obj))  # type: ignore[method-assign]
            pickler.dump(header or _header(workload))
            pickler.dump(sim)
        os.replace(self._partial, self.path)

    def load(self, workload: Workload, header: dict | None = None) -> Simulator:
        """The simulator saved in the checkpoint, its workload references resolved in
        ``workload``; a ReclaimError naming the file when it cannot be read or was written by
        other code or for another workload."""
        arrays = _arrays(workload)
        header = header or _header(workload)
        try:
            with self.path.open("rb") as file:
                unpickler = pickle.Unpickler(file)
                unpickler.persistent_load = arrays.__getitem__
                saved = unpickler.load()
                if saved.get("code") != header["code"]:
                    raise ValueError("it was written by other reclaim code")
                if saved.get("workload") != header["workload"]:
                    raise ValueError("it was taken from a run of another workload")
                sim = unpickler.load()
        except Exception as err:  # a checkpoint from other code or a damaged file: say which
            raise ReclaimError(
                f"{self.path}: cannot resume from this checkpoint ({err}); delete it to start "
                "the run again"
            ) from None
        if not isinstance(sim, Simulator):
            raise ReclaimError(f"{self.path}: not a checkpoint of a simulation")
        return sim

    def clear(self) -> None:
        """Remove the checkpoint (and a save cut short)."""
        self.path.unlink(missing_ok=True)
        self._partial.unlink(missing_ok=True)

    @property
    def _partial(self) -> Path:
        return self.path.with_name(self.path.name + ".partial")


def _arrays(workload: Workload) -> dict[str, np.ndarray]:
    """The workload's arrays by field name (the shapes' as ``shapes.data``, ``shapes.indptr``)."""
    found = {f.name: getattr(workload, f.name) for f in fields(workload)}
    arrays = {name: a for name, a in found.items() if isinstance(a, np.ndarray)}
    arrays["shapes.data"], arrays["shapes.indptr"] = workload.shapes.data, workload.shapes.indptr
    return arrays


def _header(workload: Workload) -> dict:
    """What a checkpoint must match to resume: the code, and the workload's array shapes and
    types with a hash of its small arrays (the run id in the file's name pins the settings)."""
    digest = hashlib.blake2b(digest_size=16)
    for name in HASHED:
        digest.update(np.ascontiguousarray(getattr(workload, name)).tobytes())
    shapes = {name: (a.shape, str(a.dtype)) for name, a in _arrays(workload).items()}
    return {"code": code_hash(), "workload": {"arrays": shapes, "hash": digest.hexdigest()}}


@functools.cache
def code_hash() -> str:
    """A hash of reclaim's Python source files, as this process imports them."""
    root = Path(__file__).parents[1]  # the reclaim package
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
