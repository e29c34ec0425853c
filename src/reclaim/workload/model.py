"""Workload: the simulator's input, applications made of components with real usage shapes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.core.types import R


@dataclass(frozen=True)
class Workload:
    """Columnar applications (A) and components (C).

    arrival: (A,) float64 s, non-decreasing; submission time of each application.
    comp_indptr: (A+1,) int64; components of application ``a`` are ``comp_indptr[a]:comp_indptr[a+1]``,
        core components first.
    request: (C, R) float32, cores and GiB per component (the reservation).
    work: (C,) float32 s, how long the component runs when never throttled.
    core: (C,) bool, True for core components (an application fails if one of them does).
    shape: (C,) int32, index of the usage shape the component follows.
    shape_offset: (C,) int32, the shape sample the component starts at.
    shapes: GroupedArray with data (N, R) float32: usage as a fraction of the request, one row per
        ``period`` seconds. A component's usage at ``k`` periods after its start is
        ``shapes[shape][(shape_offset + k) % len] * request``.
    period: float s, sampling period of the shapes (the monitor tick of the simulator).
    """

    arrival: NDArray[np.float64]
    comp_indptr: NDArray[np.int64]
    request: NDArray[np.float32]
    work: NDArray[np.float32]
    core: NDArray[np.bool_]
    shape: NDArray[np.int32]
    shape_offset: NDArray[np.int32]
    shapes: GroupedArray
    period: float

    @property
    def n_apps(self) -> int:
        return len(self.arrival)

    @property
    def n_components(self) -> int:
        return len(self.work)

    @property
    def app_of_component(self) -> NDArray[np.int32]:
        """(C,) int32: the application each component belongs to."""
        return np.repeat(np.arange(self.n_apps, dtype=np.int32), np.diff(self.comp_indptr))

    def never_fits(self, capacity: NDArray[np.float64]) -> NDArray[np.bool_]:
        """(A,) bool: applications no cluster of hosts ``capacity`` (H, R) can ever run, as the
        simulator rejects them at arrival: a component larger than the largest host, or core
        components that together exceed the whole cluster."""
        cp = self.comp_indptr
        too_big = np.any(self.request > capacity.max(axis=0), axis=1)
        any_too_big = np.add.reduceat(too_big.astype(np.int64), cp[:-1]) > 0
        core_total = np.add.reduceat(self.request * self.core[:, None], cp[:-1], axis=0)
        return any_too_big | np.any(core_total > capacity.sum(axis=0), axis=1)

    def validate(self) -> Workload:
        """Raise ValueError if arrays disagree in shape, order or range; return self."""
        a, c = self.n_apps, self.n_components
        checks = [
            (self.comp_indptr.shape == (a + 1,), "comp_indptr must have A+1 entries"),
            (self.comp_indptr[0] == 0 and self.comp_indptr[-1] == c, "comp_indptr must span C"),
            (bool(np.all(np.diff(self.comp_indptr) > 0)), "every application needs a component"),
            (bool(np.all(np.diff(self.arrival) >= 0)), "arrivals must be non-decreasing"),
            (self.request.shape == (c, R), "request must be (C, R)"),
            (self.work.shape == self.core.shape == self.shape.shape == (c,), "(C,) arrays"),
            (self.shape_offset.shape == (c,), "shape_offset must be (C,)"),
            (bool(np.all(self.request >= 0)) and bool(np.all(self.work > 0)), "negative value"),
            (bool(np.all(self.shapes.lengths > 0)), "every usage shape needs a sample"),
            (self.shapes.data.ndim == 2 and self.shapes.data.shape[1] == R, "shapes are (N, R)"),
            (bool(np.all(self.shapes.data >= 0)), "usage shapes must be non-negative"),
            (self.period > 0, "period must be positive"),
        ]
        if c and (self.shape.min() < 0 or self.shape.max() >= len(self.shapes)):
            checks.append((False, "shape index out of range"))
        for ok, problem in checks:
            if not ok:
                raise ValueError(f"invalid workload: {problem}")
        return self
