"""Struct-of-arrays state: hosts, and the workloads currently placed on them.

Rows have stable integer indices: a host keeps its row for the whole run; a running component keeps
its workload row (its *slot*) from start to end, after which the row is reused.

:class:`HostTable` is the one host ledger of every system: the shaping simulator and the agent
(cores, GiB), the CORP slot simulator (its VMs, cores and GiB), the LAVA pool replay (cores, GiB,
GPUs) and the TVW replay (integer units per resource, held in float64, where they stay exact).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from reclaim.core.types import RESOURCES, R
from reclaim.errors import ReclaimError
from reclaim.machine import require_memory

#: Memory a host holds in a simulation (host tables, the simulator's per-host arrays and the
#: placer's scores): ``benchmarks/bench_simulate.py --apps 100`` peaks 1.2 GiB higher with
#: 10,000,000 hosts than with 1,000, 129 B a host; rounded up.
BYTES_PER_HOST = 160
_HOST_SPEC = re.compile(r"^(\d+)x(\d+(?:\.\d+)?)c(\d+(?:\.\d+)?)g$")


@dataclass
class HostTable:
    """capacity/allocated/used: (H, A) float64, one column per name of ``axes`` (by default
    :data:`~reclaim.core.types.RESOURCES`, cores and GiB); up: (H,) bool, open to placement.

    float64 because allocations are added and removed millions of times per run and float32 sums
    drift by whole cores over that many updates.
    """

    capacity: NDArray[np.float64]
    axes: tuple[str, ...] = RESOURCES
    allocated: NDArray[np.float64] = field(init=False)
    used: NDArray[np.float64] = field(init=False)
    up: NDArray[np.bool_] = field(init=False)

    def __post_init__(self) -> None:
        self.capacity = np.asarray(self.capacity, dtype=np.float64)
        self.axes = tuple(self.axes)
        if self.capacity.ndim != 2 or self.capacity.shape[1] != len(self.axes):
            raise ValueError(
                f"capacity of shape {self.capacity.shape} for axes {', '.join(self.axes)}"
            )
        self.allocated = np.zeros_like(self.capacity)
        self.used = np.zeros_like(self.capacity)
        self.up = np.ones(len(self.capacity), dtype=bool)

    def __len__(self) -> int:
        return len(self.capacity)

    @property
    def free(self) -> NDArray[np.float64]:
        """(H, A) capacity not allocated, zero on hosts that are down."""
        return np.where(self.up[:, None], self.capacity - self.allocated, 0.0)

    @property
    def room(self) -> NDArray[np.float64]:
        """(H, A) capacity not allocated, on every host, up or not (negative when over)."""
        return self.capacity - self.allocated

    def room_of(self, host: int) -> NDArray[np.float64]:
        """(A,) ``host``'s row of :attr:`room`, without computing the others."""
        return self.capacity[host] - self.allocated[host]

    def take(self, host: int, amount: NDArray[np.float64]) -> None:
        """Allocate ``amount`` (A,) on ``host``."""
        self.allocated[host] += amount

    def give(self, host: int, amount: NDArray[np.float64]) -> None:
        """Return ``amount`` (A,) to ``host``."""
        self.allocated[host] -= amount

    @classmethod
    def parse(cls, spec: str) -> HostTable:
        """Homogeneous hosts from ``"250x32c128g"`` (count x cores c GiB g); ``+`` joins pools."""
        pools, parts = [], spec.replace(" ", "").split("+")
        counts = [_HOST_SPEC.match(part) for part in parts]
        total = sum(int(m[1]) for m in counts if m)
        require_memory(
            total * BYTES_PER_HOST, f"hosts {spec!r} ({total:,} hosts at {BYTES_PER_HOST} B)"
        )
        for part in parts:
            match = _HOST_SPEC.match(part)
            if not match:
                raise ReclaimError(f"hosts {spec!r}: expected COUNTxCORESgMEMg like 250x32c128g")
            count, cores, mem = int(match[1]), float(match[2]), float(match[3])
            if count <= 0 or cores <= 0 or mem <= 0:
                raise ReclaimError(f"hosts {spec!r}: counts and sizes must be positive")
            pools.append(np.tile([cores, mem], (count, 1)))
        return cls(np.concatenate(pools))


@dataclass
class WorkloadTable:
    """Placed workloads, one row (slot) each; ``host == -1`` marks a free row.

    component: (W,) int32 index into the Workload; app: (W,) int32; host: (W,) int32;
    request/limit/used: (W, R) float32 cores and GiB (limit is the current allocation,
    used the last observed usage); core: (W,) bool; start: (W,) float64 s.
    """

    component: NDArray[np.int32]
    app: NDArray[np.int32]
    host: NDArray[np.int32]
    request: NDArray[np.float32]
    limit: NDArray[np.float32]
    used: NDArray[np.float32]
    core: NDArray[np.bool_]
    start: NDArray[np.float64]

    @classmethod
    def empty(cls, rows: int) -> WorkloadTable:
        return cls(
            component=np.full(rows, -1, np.int32),
            app=np.full(rows, -1, np.int32),
            host=np.full(rows, -1, np.int32),
            request=np.zeros((rows, R), np.float32),
            limit=np.zeros((rows, R), np.float32),
            used=np.zeros((rows, R), np.float32),
            core=np.zeros(rows, bool),
            start=np.zeros(rows, np.float64),
        )

    def __len__(self) -> int:
        return len(self.host)

    def grown(self, rows: int) -> WorkloadTable:
        """A copy with ``rows`` rows, the new ones free."""
        bigger = WorkloadTable.empty(rows)
        n = len(self)
        for name, old in vars(self).items():
            getattr(bigger, name)[:n] = old
        return bigger
