"""What every opportunistic provisioning method tells the simulator: how much of each running
job's allocation it may lend to other jobs over the next window.

CORP (DNN + HMM + confidence bound + unlock rule) and the baselines (RCCR, CloudScale, DRA)
implement :class:`Provisioner`; the simulator calls it once per window for every running job and
resource, and the VM choice is the method's placement (CORP: complementary packing and the most
matched VM; the baselines: a random feasible VM). One provisioner per resource together make a
controller: :func:`lend_decisions` turns their answers into the ``lend`` rows of a
:class:`~reclaim.core.types.Decisions`, and :class:`Lending` is that controller on the core's
control step (:func:`~reclaim.core.control.control_step`), as the simulator runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, Self

import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.grouped import GroupedArray
from reclaim.core.types import Decisions
from reclaim.errors import ReclaimError


@dataclass(frozen=True, slots=True)
class UnusedEstimate:
    """What a method predicts stays unused of each job's allocation over the next window: the
    quantity the paper's Fig. 6 scores, before any lending decision.

    point: (S,) the method's point prediction of the window's mean unused amount. lower: (S,) its
    conservative amount, the eq. 19 lower bound for the methods with a confidence level (CORP,
    RCCR), the padded prediction for CloudScale, the point itself for DRA (which has no bound).
    Both in the request's units, within [0, request]. valid: (S,) bool, False where the job is
    too young for the method to predict (then point and lower are 0 and mean nothing).
    """

    point: NDArray[np.float64]
    lower: NDArray[np.float64]
    valid: NDArray[np.bool_]


class Provisioner(Protocol):
    """Predicts the unused amount of one resource per job, and how much of it may be lent."""

    def fit(self, usage: GroupedArray, request: NDArray[np.float64]) -> Self:
        """Learn from past jobs: ``usage`` (S series, one resource, per slot, in the resource's
        units) and their allocations ``request`` (S,). Methods without training return self."""
        ...

    def lendable(
        self, history: GroupedArray, request: NDArray[np.float64], horizon: int
    ) -> NDArray[np.float64]:
        """(S,) amount of each running job's allocation ``request`` (S,) that may be lent to
        other jobs for the next ``horizon`` slots, given its usage so far ``history`` (S series,
        the latest slot last); 0 where nothing is to be lent, never above the request."""
        ...

    def estimate(
        self, history: GroupedArray, request: NDArray[np.float64], horizon: int
    ) -> UnusedEstimate:
        """The prediction behind ``lendable``: what stays unused over the next ``horizon`` slots
        (point and conservative), whether or not it would be lent."""
        ...


@dataclass(frozen=True, slots=True)
class LendingView:
    """What :class:`Lending` reads at a refresh: ``running``, the jobs that may lend (holding
    their own allocation, at least one slot run; rows of the simulator's job table), their
    ``request`` (n, R) and ``history(r)``, their usage of resource ``r`` so far (n series)."""

    now: float
    running: NDArray[np.int64]
    request: NDArray[np.float64]
    history: Callable[[int], GroupedArray]


@dataclass(frozen=True)
class Lending:
    """One provisioner per resource as a policy on the control step: each job of the view lends
    what :func:`lend_decisions` says for the next ``horizon`` slots."""

    provisioners: Sequence[Provisioner]
    horizon: int
    __capabilities__ = ControllerCapabilities(needs_forecast=False)

    def decide(self, view: LendingView, forecast: object = None) -> Decisions:
        return lend_decisions(
            self.provisioners, view.running, view.history, view.request, self.horizon
        )


def lend_decisions(
    provisioners: Sequence[Provisioner],
    rows: NDArray[np.integer],
    history: Callable[[int], GroupedArray],
    request: NDArray[np.float64],
    horizon: int,
) -> Decisions:
    """What the running jobs ``rows`` lend for the next ``horizon`` slots: provisioner ``r``
    answers for resource ``r`` from ``history(r)`` (the jobs' usage so far) and ``request`` (S, R),
    each amount clipped to [0, request]. A provisioner answering the wrong shape or a non-finite
    amount is an error naming what it returned."""
    amount = np.zeros((len(rows), len(provisioners)))
    for r, prov in enumerate(provisioners):
        got = np.asarray(prov.lendable(history(r), request[:, r], horizon), np.float64)
        if got.shape != (len(rows),) or not np.isfinite(got).all():
            raise ReclaimError(
                f"provisioner returned {got.shape} lendable amounts for {len(rows)} jobs"
            )
        amount[:, r] = np.clip(got, 0.0, request[:, r])
    return Decisions(lend_rows=rows, lend_amount=amount)
