"""Checkpoints of a long simulation: its whole state pickled between ticks every so often, so
that a run of hours (the shaping paper's world at its scale with a forecaster) stopped part-way
goes on from its last checkpoint instead of from the start.

A checkpoint is taken at the end of a tick, where the run is whole (the next tick is queued and
nothing is half done), and holds everything the simulator holds but the workload: its arrays
are stored as references and taken from the workload the resuming process builds again (the
same settings build the same workload, bit for bit), so a checkpoint of the paper's scale is the
run's state, not its 3 GB of usage curves. A resumed run gives the results, bit for bit, that it
would have given uninterrupted (tests/sim/test_checkpoint.py).
"""

from __future__ import annotations

import os
import pickle
import time as wallclock
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from reclaim.errors import ReclaimError
from reclaim.sim.simulator import Simulator
from reclaim.workload.model import Workload

#: Wall seconds between checkpoints by default (a save at the paper's scale: some 45 MB, 0.2 s).
EVERY_S = 600.0


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
        checkpoint when there is one, else from the start; saved every ``every_s`` seconds; the
        checkpoint removed once the run has ended."""
        due = [wallclock.perf_counter() + self.every_s]

        def tick(sim: Simulator) -> None:
            if on_tick is not None:
                on_tick(sim)
            if wallclock.perf_counter() >= due[0]:
                self.save(sim, workload)
                due[0] = wallclock.perf_counter() + self.every_s

        if self.path.exists():
            sim = self.load(workload).resume(tick)
        else:
            sim = build()
            sim.on_tick = tick
            sim.run()
        sim.on_tick = on_tick
        self.path.unlink(missing_ok=True)
        return sim

    def save(self, sim: Simulator, workload: Workload) -> None:
        """Pickle ``sim`` (``workload``'s arrays by reference) next to the checkpoint, then put
        it in its place: a save cut short leaves the previous checkpoint whole."""
        arrays = {id(a): name for name, a in _arrays(workload).items()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        with partial.open("wb") as file:
            pickler = pickle.Pickler(file, protocol=pickle.HIGHEST_PROTOCOL)
            pickler.persistent_id = lambda obj: arrays.get(id(obj))  # type: ignore[method-assign]
            pickler.dump(_signature(workload))
            pickler.dump(sim)
        os.replace(partial, self.path)

    def load(self, workload: Workload) -> Simulator:
        """The simulator saved in the checkpoint, its workload references resolved in
        ``workload``; a ReclaimError naming the file when it cannot be read or was taken from
        another workload."""
        arrays = _arrays(workload)
        try:
            with self.path.open("rb") as file:
                unpickler = pickle.Unpickler(file)
                unpickler.persistent_load = arrays.__getitem__
                signature = unpickler.load()
                if signature != _signature(workload):
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


def _arrays(workload: Workload) -> dict[str, np.ndarray]:
    """The workload's arrays by field name (the shapes' as ``shapes.data``, ``shapes.indptr``)."""
    found = {f.name: getattr(workload, f.name) for f in fields(workload)}
    arrays = {name: a for name, a in found.items() if isinstance(a, np.ndarray)}
    arrays["shapes.data"], arrays["shapes.indptr"] = workload.shapes.data, workload.shapes.indptr
    return arrays


def _signature(workload: Workload) -> dict[str, tuple]:
    """Shape and type of each workload array: a checkpoint resumes only on a workload like its
    own (the run id in its name pins the settings that built it)."""
    return {name: (a.shape, str(a.dtype)) for name, a in _arrays(workload).items()}
