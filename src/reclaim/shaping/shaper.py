"""What the shaping controllers share: the safe-guard buffer and the rules for whom to shape.

The shaping paper (section 3.2, eq. 9) sizes each component's allocation as its forecast plus a
buffer ``beta = K1 * request + K2 * V``. The paper writes V as the prediction's variance but reads
K2 in {0, 1, 2, 3} as sigma bands (the three-sigma rule), so V here is the predictive standard
deviation: ``allocation = mean + K1 * request + K2 * std``, per component and resource, never
above the request (the reservation is what the component asked for and what its usage is
clipped to). A component is not shaped, and keeps its request, during a grace period after it
starts (the paper's system waits 10 minutes), while it has no forecast or only the forecaster's
fallback for series too short for its model (the paper's grace period lasts "until enough
historical data points are available"; with 5-minute samples and the GP's 10-point patterns that
is an hour, longer than the 10 minutes), and once its application
has failed ``max_failures`` times (the paper stops shaping an application after repeated
failures without saying after how many; 3 is our default). The same rule applies to a component
that ran out of memory ``max_failures`` times on its own: an elastic component's OOM does not fail
its application, and a rerun replays the same usage, so without the rule a component whose memory
outgrows its forecast would be stopped at the same age on every attempt and never finish.

The paper tunes K2 by hand. Given a ``failure_target`` (the share of applications allowed to fail,
the paper's failure measure) K2 is learned instead, by online quantile tracking on application
outcomes, the "P" part of conformal PID control (Angelopoulos, Barber and Bates, 2023), i.e.
adaptive conformal inference (Gibbs and Candes, 2021) applied to the buffer: each time an
application's first outcome becomes known, ``K2 <- max(0, K2 + failure_step * (failed - target))``.
Whatever the data, ``realised rate - target <= (K2_final - K2_start) / (failure_step * outcomes)``,
so while K2 stays bounded the realised failure rate cannot stay above the target.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from reclaim.core.capabilities import ControllerCapabilities
from reclaim.core.component import Component
from reclaim.core.control import UsageForecast
from reclaim.core.types import Decisions
from reclaim.core.view import ClusterView
from reclaim.shaping._kernels import changed_limits, shaped_targets


class Shaper(Component):
    """Base of the forecast-driven controllers: settings and the target allocation of each row."""

    def __init__(
        self,
        k1: float = 0.05,
        k2: float = 3.0,
        grace_s: float = 600.0,
        max_failures: int = 3,
        failure_target: float | None = None,
        failure_step: float = 0.5,
        shape_on_fallback: bool = False,
    ) -> None:
        """``failure_target``: None keeps K2 fixed at ``k2``; a share in (0, 1) makes ``k2`` only
        K2's starting value (see the module docstring). ``failure_step``: how far one outcome moves
        K2, in forecast standard deviations; 0.5 lets one failure raise the buffer by half a sigma
        band (the paper's K2 grid is one band apart; a full band cuts a Gaussian tail by an order
        of magnitude, much for one event), while 1 / target clean finishes lower it as much.
        ``shape_on_fallback``: also shape rows whose forecast is the forecaster's fallback (a
        series too short for its model); off by default, as the paper waits for enough history.
        """
        self.k1 = k1
        self.k2 = k2
        self.grace_s = grace_s
        self.max_failures = max_failures
        self.failure_target = failure_target
        self.failure_step = failure_step
        self.shape_on_fallback = shape_on_fallback

    @property
    def __capabilities__(self) -> ControllerCapabilities:
        # adapting K2 to a failure target, it reports its own tally
        reports = self.failure_target is not None
        return ControllerCapabilities(grace_s=float(self.grace_s), reports=reports)

    def run_summary(self) -> dict[str, float]:
        """With a failure target: the target, K2 as adapted, and the outcomes it learned from."""
        outcomes, failed = getattr(self, "outcomes_", 0), getattr(self, "failed_", 0)
        out = {
            "failure_target": float(self.failure_target),
            "adapted_k2": float(getattr(self, "k2_", self.k2)),
            "target_outcomes": float(outcomes),
            "target_failed": float(failed),
        }
        if outcomes:
            out["target_failure_rate"] = failed / outcomes
        return out

    def targets(
        self, view: ClusterView, forecast: UsageForecast
    ) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """(n, R) allocation each forecast row should have (cores, GiB), and which rows are shaped.

        Targets are rounded to float32, the precision allocations are stored in, so that sums a
        controller computes are the sums the simulator will hold. With a ``failure_target``, K2
        first learns from the outcomes known since the last call: call this once per ``decide``.
        """
        wl, rows = view.workloads, forecast.rows
        k2 = self.k2 if self.failure_target is None else self._adapt_k2(view)
        return shaped_targets(
            np.asarray(rows, np.int64), float(view.now), wl.start, wl.request, wl.app,
            wl.component, view.app_failures, view.component_ooms, forecast.mean, forecast.std,
            forecast.fallback, float(self.grace_s), float(self.k1), float(k2),
            float(self.max_failures), bool(self.shape_on_fallback),
        )  # fmt: skip

    def _adapt_k2(self, view: ClusterView) -> float:
        """K2 after the outcomes that became known since the last call (``k2_``)."""
        if not hasattr(self, "k2_"):
            if not 0.0 < self.failure_target < 1.0:
                raise ValueError(f"failure_target must lie in (0, 1), got {self.failure_target}")
            if not self.failure_step > 0.0:
                raise ValueError(f"failure_step must be positive, got {self.failure_step}")
            self.k2_ = float(self.k2)
            self.outcomes_ = 0  # applications whose first outcome is known
            self.failed_ = 0  # of which failed
            self.tracker_ = OutcomeTracker()
        failed = self.tracker_.update(view)
        self.k2_ = track_quantile(self.k2_, failed, self.failure_target, self.failure_step)
        self.outcomes_ += len(failed)
        self.failed_ += int(failed.sum())
        return self.k2_

    def note_evictions(self, view: ClusterView, rows: NDArray[np.integer]) -> None:
        """Tell the failure tracking which ``rows`` this call evicts (their applications fail)."""
        if self.failure_target is not None and hasattr(self, "tracker_"):
            self.tracker_.evicted(view, rows)


def track_quantile(k2: float, failed: NDArray[np.bool_], target: float, step: float) -> float:
    """K2 after outcomes ``failed`` (in order): ``K2 <- max(0, K2 + step * (failed - target))``.

    The floor keeps the buffer non-negative; it only ever raises K2, so the guarantee in the
    module docstring survives it.
    """
    for f in failed.tolist():  # a handful per call; the floor makes the order matter
        k2 = max(0.0, k2 + step * (float(f) - target))
    return k2


class OutcomeTracker:
    """Each application's first outcome, learned from the views a controller sees call by call.

    An application's outcome is known the first time it leaves the running set (no row running
    any more, or its core components stopped: it requeues, and may be running again by the next
    call); it failed if any of its components was stopped before then: out of memory (core:
    ``app_failures``; elastic: ``component_ooms``) or evicted by the controller. The counters are
    read rather than ``recent_ooms``, which covers the last tick only and so misses stops at ticks
    the controller was not called at. Per call the work is O(rows running now and at the last
    call); per-application flags are (A,) arrays, grown with ``app_failures``.
    """

    def __init__(self) -> None:
        self.calls = 0
        self.counted = np.zeros(0, bool)  # (A,) first outcome recorded
        self.stopped = np.zeros(0, bool)  # (A,) a component stopped before the outcome
        self.seen_at = np.zeros(0, np.int64)  # (A,) last call at which a row was running
        self.apps = np.zeros(0, np.int64)  # apps and components of the rows of the last call
        self.comps = np.zeros(0, np.int64)
        self.evicted_apps = np.zeros(0, np.int64)  # this call's evictions, applied after it
        self.evicted_whole = np.zeros(0, np.int64)

    def evicted(self, view: ClusterView, rows: NDArray[np.integer]) -> None:
        wl, rows = view.workloads, np.asarray(rows, np.int64)
        self.evicted_apps = wl.app[rows].astype(np.int64)
        self.evicted_whole = wl.app[rows[wl.core[rows]]].astype(np.int64)

    def update(self, view: ClusterView) -> NDArray[np.bool_]:
        """Whether each application whose first outcome became known since the last call failed,
        (k,) bool in application order."""
        wl, rows = view.workloads, view.running
        failures, ooms = view.app_failures, view.component_ooms
        self._grow(len(failures))
        self.calls += 1
        apps, comps = wl.app[rows].astype(np.int64), wl.component[rows].astype(np.int64)
        both_apps = np.concatenate([self.apps, apps])
        both_comps = np.concatenate([self.comps, comps])
        self.stopped[both_apps[ooms[both_comps] > 0]] = True
        self.stopped[self.evicted_apps] = True
        core_failed = both_apps[failures[both_apps] > 0]
        self.stopped[core_failed] = True
        self.seen_at[apps] = self.calls
        left = self.apps[self.seen_at[self.apps] != self.calls]
        ended = np.concatenate([left, core_failed, self.evicted_whole])
        ended = np.unique(ended[~self.counted[ended]])  # few: counted apps drop out first
        self.counted[ended] = True
        self.apps, self.comps = apps, comps
        self.evicted_apps = self.evicted_whole = np.zeros(0, np.int64)
        return self.stopped[ended]

    def _grow(self, n: int) -> None:
        """(A,) arrays to ``n`` applications; a live cluster's application count may grow."""
        if n > len(self.counted):
            extra = n - len(self.counted)
            self.counted = np.concatenate([self.counted, np.zeros(extra, bool)])
            self.stopped = np.concatenate([self.stopped, np.zeros(extra, bool)])
            self.seen_at = np.concatenate([self.seen_at, np.zeros(extra, np.int64)])


def resize_where_changed(
    view: ClusterView,
    rows: NDArray[np.int64],
    target: NDArray[np.float64],
    evict=(),
    keep: NDArray[np.bool_] | None = None,
) -> Decisions:
    """Decisions resizing those ``rows`` (of them, those where ``keep``) whose limit differs from
    ``target``, plus ``evict``."""
    if keep is None:
        keep = np.ones(len(rows), bool)
    resized, limits = changed_limits(
        np.asarray(rows, np.int64), view.workloads.limit, np.asarray(target, np.float64), keep
    )
    return Decisions(resize_rows=resized, resize_limit=limits, evict=evict)
