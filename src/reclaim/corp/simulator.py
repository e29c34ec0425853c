"""Slot-based simulator of opportunistic provisioning for short-lived jobs (CORP, sections II-IV).

:func:`simulate` replays a :class:`~reclaim.corp.scenario.CorpScenario` with any registered
``provisioner`` (built by name, one instance per resource, fitted once on the scenario's training
jobs) and a placement (default: ``corp-packing`` for CORP, ``random-fit`` for every other method, as
section IV runs the baselines). Every slot (``slot_s``, 10 s), in this order:

1. **Refresh** (every ``window`` = L slots, at slots 0, L, 2L, ...): the provisioner tells, per
   running job that holds its own allocation and has run at least one slot, how much of it may be
   lent for the next L slots (``lendable``), from the job's observed usage so far. Jobs that run on
   borrowed resources lend nothing (no lending chains).
2. **Allocation**: the jobs that have arrived and are not yet placed (the queue, first come first
   served, then by index) form one batch. The placer first binds them against each VM's *unlocked
   unused* resources, the lendable amounts of its jobs not yet lent (a job placed so is a
   *borrower*; the amount it takes is charged to that VM's lenders in proportion to what each still
   offers, and stays charged until the borrower ends even if a later refresh lowers the offer:
   a borrower is never evicted). The rest are bound against unallocated VM capacity (capacity minus
   the requests of the jobs holding their own allocation, minus what borrowers of lenders that
   already ended still hold). A job placed there holds a real allocation: it is an *owner*, like
   every lender. A job that fits nowhere waits for the next slot.
3. **Execution**, per VM and resource. A job's demand follows its profile indexed by its
   *progress* (slots of work done), so a slowed job replays its usage more slowly.

   * **Owners first.** Every job holding its own allocation (lenders and non-lenders alike) is
     served ``min(demand, request)``: its reservation is guaranteed, lending never slows it. When a
     lender's demand rebounds above what it kept (``request - lent``) it simply takes it back.
   * **Borrowers run on their loans** (``borrowing="loans"``, the default): a borrower may use
     what its lenders lent it, less what they take back. A lender whose served demand rises above
     what it kept (``request - lent``) reclaims the difference from its open loans in proportion
     to their size; a loan whose lender has ended stays whole. A borrower gets
     ``min(demand, loans - reclaimed)``. This is the paper's allocation model: a job runs within
     the resources allocated to it (section II), and the opportunistic part of a borrower's
     allocation is available only "with a certain probability", which is what eq. 19-21 protect
     by lending a lower bound. A slot in which a borrower's loans cover less than its request is
     a *reclaimed* slot, whether or not its demand needed the missing part (RCCR's availability
     SLO for reclaimed resources, the paper's [4]).
   * ``borrowing="shared"``: borrowers instead share whatever the owners' *actual* demand leaves
     of the VM (idle unallocated capacity and other owners' slack included), in proportion to
     their demand: ``demand x min(1, left / sum of the borrowers' demand)``, at most the request.
     Work-conserving, like a Linux CPU scheduler without limits; on a lightly loaded cluster no
     borrower is ever short.
   * A job short of its demand progresses at ``min(1, got / demand)`` on its bottleneck resource
     this slot (memory short is treated like CPU short: the job slows, it is not killed). Only
     borrowers can be short, DRA aside (an owner's demand never exceeds its request in the scenarios; if a
     hand-built one does, its own request slows it, never a borrower). A job ends in the slot its
     progress reaches its duration; its response time is ``end - arrival`` slots (queueing
     included) and it violates its SLO if that is above its threshold.

   Why borrowers carry the risk: this is the standard semantics of opportunistic reuse. Borg
   reclaims the unused part of a reservation for lower-priority work and throttles that work when
   the owner needs it back; RCCR (Carvalho et al., the paper's [4]) sells reclaimed resources with
   "weaker SLOs"; CORP's section II says "the allocated but unused resource can be reallocated to
   jobs with a certain probability", i.e. the borrower's access is probabilistic, while the owner
   keeps what it was allocated. Eq. 19-21 (lend only a lower bound, and only when the prediction
   error is likely within [0, epsilon)) exist to keep that probability high: the SLO a provisioner
   risks is its borrowers'.

**DRA as published** (a provisioner whose capabilities say ``redistributes``, :class:`~reclaim.corp.
baselines.Dra`): nothing is lent. At every refresh each running job's demand is estimated (the
provisioner's ``demand`` over what the job wanted, up to its request; a job without history: its
request) and the purchased capacity (all VMs') is re-split among the VMs by weighted max-min over
their static 4:2:1 shares and summed estimates (:func:`~reclaim.corp.baselines.redistribute`).
Arriving jobs take unallocated capacity at a random VM whose PM has room, raising its entitlement
by their request. The jobs of a VM share its entitlement in proportion to their demand (so owners
can be short here); a job's ``r`` in eq. 1 is its VM's entitlement split by the estimates.

Metrics (:mod:`reclaim.corp.metrics`): eq. 1-4 over running jobs and slots, with ``d`` the demand
served and ``r`` the job's allocation, the paper's "amount allocated to J_i at t"
(``r = r^u + d``, ``r^u >= 0``):

* a borrower holds its **request**, allocated at placement out of its lenders' unused resources
  (not what it happened to receive that slot: that would make a borrower's ``r^u`` zero whenever
  it is served and hide the lent-but-idle part from eq. 3);
* an owner holds ``request - lent`` (the lent part is reallocated, counted once, as the
  borrower's), or its served demand when that is more, i.e. in a slot it takes back what it lent.

Lending thus raises utilisation (the same resources serve two jobs), a reclaim shows up as both
the owner and the borrower counting the taken-back part (and as the borrower's unmet demand, not
counted as used), and ``d <= r`` holds for every job (under DRA only per VM). The SLO violation
rate. What was lent, reclaimed and over-offered (Figs 7-9's lending). The prediction error rate of
section IV (Fig. 6) scores the method's CPU *predictions*, not what it lent: every job's own demand
is replayed through the provisioner's ``estimate`` after the run (:mod:`reclaim.corp.scoring`),
so every method is scored on the same jobs and windows. Allocation latency: wall time of the
placement of every batch plus the provisioner's refreshes, in total for the run (the paper's Fig.
10 measures the latency "for allocating resource to 300 jobs") and per job (``latency_job_*``:
percentiles over jobs of the wall time of the allocation batches each waited in); the one-off
training in ``fit`` is timed apart (``fit_s``), and compiled code is warmed up (:func:`warm_up`)
before anything is timed. Wall times are the only numbers that differ between two runs
with the same seed.

Speed: per slot every step is a handful of numpy calls over the running jobs; the loop over slots
and, at a refresh, the provisioner's own per-series work are the only Python loops.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim import registry
from reclaim.core.capabilities import ProvisionerCapabilities, capabilities
from reclaim.core.control import control_step
from reclaim.core.engine import Engine
from reclaim.core.grouped import GroupedArray
from reclaim.core.tables import HostTable
from reclaim.core.types import RESOURCES, Decisions, R
from reclaim.corp import metrics
from reclaim.corp.provisioning import Lending, LendingView
from reclaim.corp.scenario import CorpScenario, JobSet
from reclaim.corp.scoring import PredictionScores, score_predictions
from reclaim.errors import ReclaimError
from reclaim.placement.framework import Placer, build_placer

#: A job whose progress is this close to its duration has finished (float sums of rates).
DONE_TOLERANCE = 1e-9
#: What a borrower may use: its loans net of reclaims, or what the owners leave of the VM.
BORROWING = ("loans", "shared")
#: Loans this close to the request cover it (a request split among lenders sums with rounding).
LOAN_TOLERANCE = 1e-9
#: The one kind of event: a slot (its number as the index).
SLOT = 0


def provisioner_names() -> list[str]:
    """Registered provisioners, built-in ones included (``import reclaim.corp``, which importing
    this module implies, registers CORP and its baselines)."""
    return registry.names("provisioner")


def fit_provisioners(
    train: JobSet, name: str, params: dict[str, Any] | None = None, epsilon: float | None = None
) -> list[Any]:
    """One provisioner ``name`` per resource, built with ``params`` and fitted on the training
    jobs' demand of that resource and their requests. ``epsilon``: the run's tolerance, handed to
    a provisioner with an ``epsilon`` setting (CORP's eq. 21) unless ``params`` sets one: the
    paper's epsilon is one number, for the unlock rule and for Fig. 6."""
    chosen = dict(params or {})
    settings = inspect.signature(registry.factory("provisioner", name)).parameters
    if epsilon is not None and "epsilon" not in chosen and "epsilon" in settings:
        chosen["epsilon"] = float(epsilon)
    out = []
    for r in range(R):
        prov = registry.build("provisioner", name, **chosen)
        out.append(prov.fit(train.usage(r), train.request[:, r]))
    return out


def default_placement(provisioner: str) -> str:
    """Section IV: CORP packs and picks the most matched VM; the baselines pick a random VM."""
    return "corp-packing" if provisioner == "corp" else "random-fit"


@dataclass
class CorpResult:
    """Outcome of one run.

    Per job (N,): host int32 VM (-1 never placed), borrower bool (ran on lent resources),
    submit/start/finish int64 slots (-1 unknown), response float64 slots (inf if unfinished),
    threshold float64 slots, waited int64 slots in the queue, slowed int64 slots run short of
    its demand (only borrowers are), reclaimed int64 slots a borrower's loans covered less than
    its request, overlent bool per (refresh, job) prediction that offered something: whether the
    window's actual mean unused amount fell below the offer on any resource. scores: the Fig. 6
    errors of the method's CPU predictions (:mod:`reclaim.corp.scoring`).
    Aggregates: used, held (T, R) sums over running jobs, per slot, of served demand and
    allocation (eq. 1's d and r). timeline: polars, one row per slot (``short_<r>``: borrowers'
    unmet demand). predictions: polars, one row per (refresh, job).
    """

    provisioner: str
    placement: str
    slot_s: float
    window: int
    weights: NDArray[np.float64]
    epsilon: float
    request: NDArray[np.float64]
    host: NDArray[np.int32]
    borrower: NDArray[np.bool_]
    submit: NDArray[np.int64]
    start: NDArray[np.int64]
    finish: NDArray[np.int64]
    response: NDArray[np.float64]
    threshold: NDArray[np.float64]
    waited: NDArray[np.int64]
    slowed: NDArray[np.int64]
    reclaimed: NDArray[np.int64]
    overlent: NDArray[np.bool_]
    scores: PredictionScores
    used: NDArray[np.float64]
    held: NDArray[np.float64]
    vm_capacity_slots: NDArray[np.float64]
    timeline: pl.DataFrame
    predictions: pl.DataFrame
    fit_s: float = 0.0
    place_s: float = 0.0
    predict_s: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)

    def summary(self) -> dict[str, float]:
        """Scalar results. ``util_<r>`` eq. 1, ``util`` eq. 2, ``waste_<r>`` / ``waste`` eq. 3-4,
        ``vm_util_<r>`` served demand over VM capacity while any job ran; ``slo_violation_rate``;
        ``borrowers``, ``borrower_violations`` (borrowers above their SLO), ``slowed_jobs`` and
        ``slowed_slots`` (jobs, job-slots run short of their demand: borrowers a lender reclaimed
        from or that shared a crowded VM);
        ``availability_violation_rate`` = share of jobs with a reclaimed slot (RCCR's SLO for
        reclaimed resources) and ``reclaimed_jobs`` their number; ``overlend_rate`` = share of
        the predictions offering something whose window's actual unused amount fell below the
        offer (eq. 20's delta < 0; NaN when nothing was offered); ``lent_<r>`` = share of what the
        running jobs held that was lent out and taken (Figs 7-9's lending, per resource); the
        Fig. 6 rates of the method's predictions (:meth:`PredictionScores.summary`:
        ``prediction_error_rate`` on the point prediction, ``_lower`` on the eq. 19 bound, the
        jobs too young to score counted apart); ``latency_s`` = placement + prediction wall time
        of the run, ``latency_per_job_ms``."""
        out: dict[str, float] = {}
        util = metrics.utilisation(self.used, self.held)
        waste = metrics.wastage(self.used, self.held)
        for i, r in enumerate(RESOURCES):
            out[f"util_{r}"] = float(util[i])
        out["util"] = metrics.overall_utilisation(self.used, self.held, self.weights)
        for i, r in enumerate(RESOURCES):
            out[f"waste_{r}"] = float(waste[i])
        out["waste"] = metrics.overall_wastage(self.used, self.held, self.weights)
        vm_util = metrics.utilisation(self.used, self.vm_capacity_slots)
        for i, r in enumerate(RESOURCES):
            out[f"vm_util_{r}"] = float(vm_util[i])
        n = len(self.host)
        out["jobs"] = float(n)
        out["slo_violation_rate"] = metrics.slo_violation_rate(self.response, self.threshold)
        out["borrowers"] = float(self.borrower.sum())
        out["borrower_violations"] = float((self.borrower & (self.response > self.threshold)).sum())
        out["slowed_jobs"] = float((self.slowed > 0).sum())
        out["slowed_slots"] = float(self.slowed.sum())
        out["reclaimed_jobs"] = float((self.reclaimed > 0).sum())
        out["availability_violation_rate"] = out["reclaimed_jobs"] / max(n, 1)
        out["overlend_rate"] = float(self.overlent.mean()) if len(self.overlent) else np.nan
        out["queued_jobs"] = float((self.waited > 0).sum())
        out["queued_slots"] = float(self.waited.sum())
        out["unfinished"] = float(np.isinf(self.response).sum())
        out["mean_response_s"] = float(np.mean(self.response[np.isfinite(self.response)])) * (
            self.slot_s
        )
        lent = self.timeline.select(f"lent_{r}" for r in RESOURCES).to_numpy().sum(axis=0)
        for i, r in enumerate(RESOURCES):
            out[f"lent_{r}"] = (
                float(lent[i] / self.held[:, i].sum()) if self.held[:, i].sum() else 0.0
            )
        out.update(self.scores.summary(self.epsilon))
        out["slots"] = float(len(self.timeline))
        out["fit_s"] = self.fit_s
        out["latency_s"] = self.place_s + self.predict_s
        out["latency_place_s"] = self.place_s
        out["latency_predict_s"] = self.predict_s
        out["latency_per_job_ms"] = 1000.0 * (self.place_s + self.predict_s) / max(n, 1)
        out.update(self.extra)
        return out


#: Summary keys that are wall times (everything else is bit-for-bit reproducible).
WALL_TIME_KEYS = frozenset(
    {
        "fit_s",
        "latency_s",
        "latency_place_s",
        "latency_predict_s",
        "latency_per_job_ms",
        "latency_job_p50_ms",
        "latency_job_p95_ms",
        "latency_job_max_ms",
    }
)


def _make_placer(spec: str, seed: int) -> Placer:
    placer = build_placer(spec)
    for plugin in placer.declaring("seeded"):  # random-fit draws from the run's seed
        plugin.set_params(seed=int(seed))
    return placer


def simulate(
    scenario: CorpScenario,
    provisioner: str = "corp",
    params: dict[str, Any] | None = None,
    placement: str | None = None,
    window: int = 6,
    seed: int = 0,
    epsilon: float = 0.1,
    max_slots: int | None = None,
    provisioners: list[Any] | None = None,
    borrowing: str = "loans",
) -> CorpResult:
    """Replay ``scenario.jobs`` with the registered ``provisioner`` (settings ``params``).

    placement: a :func:`~reclaim.placement.framework.build_placer` spec (default
    :func:`default_placement`). window: L, slots between refreshes (the lendable amounts hold for
    L slots). seed: seeds the placement's draws. epsilon: tolerance of the prediction error rate,
    a fraction of the request. max_slots: stop after this many slots (default: enough for every job
    to run alone one after the other). provisioners: already fitted ones (one per resource), to
    skip training. borrowing: what a borrower may use, ``"loans"`` (its loans net of reclaims) or
    ``"shared"`` (what the owners leave of the VM); see the module docstring. After the run, the
    provisioner's CPU predictions are scored on every job's own demand (Fig. 6,
    :func:`~reclaim.corp.scoring.score_predictions`).
    """
    if window < 1:
        raise ReclaimError(f"window must be at least one slot, got {window}")
    if borrowing not in BORROWING:
        raise ReclaimError(f"borrowing must be one of {', '.join(BORROWING)}, got {borrowing!r}")
    placement = placement or default_placement(provisioner)
    fit_s = 0.0
    if provisioners is None:
        tic = time.perf_counter()
        provisioners = fit_provisioners(scenario.train, provisioner, params, epsilon)
        fit_s = time.perf_counter() - tic
    if len(provisioners) != R:
        raise ReclaimError(f"need one provisioner per resource ({R}), got {len(provisioners)}")
    placer = _make_placer(placement, seed)
    warm_up(provisioners, placer, window)
    sim = _Simulation(scenario, provisioners, placer, window, max_slots, borrowing, seed=seed)
    sim.run()
    jobs = scenario.jobs
    scores = score_predictions(jobs.usage(0), jobs.request[:, 0], provisioners[0], window)
    return sim.result(provisioner, placement, epsilon, fit_s, scores)


_WARM: set[tuple] = set()


def warm_up(provisioners: list[Any], placer: Placer, window: int) -> None:
    """Run copies of the provisioners and the placer once on a tiny input, so that compiled code
    (numba kernels: the HMM, packing and placement; first calls into sklearn and statsforecast)
    is loaded before the run's latency is timed. Once per process and (methods, placement);
    copies, so the run's own objects and results are untouched."""
    import copy

    key = (tuple(type(p).__name__ for p in provisioners), repr(placer.plugins), int(window))
    if key in _WARM:
        return
    rng = np.random.default_rng(0)
    n_slots = 48 * window + 12
    hist = GroupedArray(rng.random(2 * n_slots), np.array([0, n_slots, 2 * n_slots], np.int64))
    for prov in copy.deepcopy(provisioners):
        if capabilities(prov, ProvisionerCapabilities).redistributes:
            prov.demand(hist)
        else:
            prov.lendable(hist, np.ones(2), window)
    warm = copy.deepcopy(placer)
    cap = np.ones((3, R))
    warm.place(cap, cap.copy(), np.ones(3, bool), np.full((2, R), 0.4, np.float32))
    warm.place(cap, cap.copy(), np.ones(3, bool), np.full((1, R), 0.4, np.float32))
    _WARM.add(key)


class _Simulation:
    """The state of one simulation, columnar over jobs (N,) and VMs (V,)."""

    def __init__(
        self,
        sc: CorpScenario,
        provisioners,
        placer: Placer,
        window: int,
        max_slots,
        borrowing,
        seed: int = 0,
    ):
        jobs = sc.jobs
        self.sc, self.jobs, self.provs, self.placer, self.window = (
            sc,
            jobs,
            provisioners,
            placer,
            window,
        )
        n, v = len(jobs), len(sc.vm_capacity)
        self.n, self.v = n, v
        # The VMs' ledger; ``allocated``: requests of jobs holding their own allocation.
        self.vms = HostTable(np.asarray(sc.vm_capacity, np.float64))
        self.req = np.asarray(jobs.request, np.float64)
        if np.any(self.req < 0) or not np.isfinite(self.req).all():
            raise ReclaimError("job requests must be finite and non-negative")
        self.dur = jobs.duration.astype(np.int64)
        self.submit = np.floor(jobs.submit_s / sc.slot_s).astype(np.int64)
        self.order = np.lexsort((np.arange(n), self.submit))  # first come first served
        self.host = np.full(n, -1, np.int32)
        self.borrower = np.zeros(n, bool)
        self.start = np.full(n, -1, np.int64)
        self.finish = np.full(n, -1, np.int64)
        self.progress = np.zeros(n)
        self.waited = np.zeros(n, np.int64)
        self.slowed_slots = np.zeros(n, np.int64)  # slots each job ran short of its demand
        self.reclaimed_slots = np.zeros(n, np.int64)  # slots a borrower's loans fell short
        self.borrowing = borrowing
        self.lend = np.zeros((n, R))  # offered for the current window (lenders only)
        self.committed = np.zeros((n, R))  # lent out and taken by borrowers
        self.lending = Lending(provisioners, window)
        # loans: (borrower, lender, amount); orphan once the lender ended (charged to its VM)
        self.loan_b: list[int] = []
        self.loan_l: list[int] = []
        self.loan_amt: list[NDArray[np.float64]] = []
        self.loan_open: list[bool] = []
        self.loan_orphan: list[bool] = []
        limit = int(self.submit.max(initial=0)) + int(self.dur.sum()) + 2 * window + 1
        self.max_slots = limit if max_slots is None else int(max_slots)
        cap_t = max(
            min(
                self.max_slots,
                int(self.submit.max(initial=0)) + 4 * int(self.dur.max(initial=1)) + 64,
            ),
            1,
        )
        self.demand_log = np.zeros((cap_t, n, R))
        self.used_log = np.zeros((cap_t, n, R))
        self.rows: list[tuple] = []
        self.pred_rows: list[tuple[NDArray, int, NDArray]] = []
        self.place_s = 0.0
        self.predict_s = 0.0
        self.t = 0
        self.place_ms: list[float] = []  # wall time of each non-empty allocation batch, ms
        self.batch_sizes: list[int] = []
        self._batch_ids: list[NDArray[np.int64]] = []
        # DRA as published: VM entitlements re-split from the purchased capacity every refresh
        self.dra = bool(provisioners) and all(
            capabilities(p, ProvisionerCapabilities).redistributes for p in provisioners
        )
        if self.dra:
            from reclaim.corp.baselines import DraPlacement, assign_shares

            self.shares = assign_shares(v, seed)
            self.total = self.vms.capacity.sum(axis=0)
            self.ent = np.zeros((v, R))  # entitlement: capacity DRA gives each VM, (V, R)
            self.est = np.zeros((n, R))  # each running job's estimated demand
            self.dra_placement = DraPlacement(
                self.total,
                np.asarray(sc.pm_capacity, np.float64),
                np.asarray(sc.vm_pm, np.int64),
                np.random.default_rng(np.random.SeedSequence([seed, 7])),
            )

    # ---- the loop

    def run(self) -> None:
        """Slot after slot on the engine, until every job has finished or ``max_slots``."""
        engine = Engine({SLOT: self._slot})
        self._engine = engine
        if self.max_slots > 0:
            engine.schedule(0.0, 0, SLOT, 0)
        engine.run()

    def _slot(self, _: float, t: int) -> None:
        """Slot ``t``: the window's predictions at its first slot, then allocate and execute."""
        self.t = t
        if t >= len(self.demand_log):
            self._grow()
        if t % self.window == 0:
            self._refresh(t)
        self._allocate(t)
        self._execute(t)
        if not (self.finish >= 0).all() and t + 1 < self.max_slots:
            self._engine.schedule(float(t + 1), 0, SLOT, t + 1)

    def _grow(self) -> None:
        extra = len(self.demand_log)
        pad = np.zeros((extra, self.n, R))
        self.demand_log = np.concatenate([self.demand_log, pad])
        self.used_log = np.concatenate([self.used_log, pad])

    def _running(self) -> NDArray[np.bool_]:
        return (self.host >= 0) & (self.finish < 0)

    def _refresh(self, t: int) -> None:
        self.lend[:] = 0.0
        if self.dra:
            self._dra_refresh(t)
            return
        cand = np.flatnonzero(self._running() & ~self.borrower & (self.start < t))
        if not len(cand):
            return
        lengths = t - self.start[cand]
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        slots = np.repeat(self.start[cand] - indptr[:-1], lengths) + np.arange(indptr[-1])
        who = np.repeat(cand, lengths)

        def history(r: int) -> GroupedArray:
            return GroupedArray(np.ascontiguousarray(self.used_log[slots, who, r]), indptr)

        tic = time.perf_counter()
        view = LendingView(float(t), cand, self.req[cand], history)
        control_step(view, self.lending, None, self)
        self.predict_s += time.perf_counter() - tic
        self.pred_rows.append((cand, t, self.lend[cand].copy()))

    def apply(self, decisions: Decisions) -> NDArray[np.int8]:
        """The actuator of the slots: a ``lend`` row offers its amounts until the next refresh;
        a ``bind`` row (DRA's placement) starts its job on the VM, whose entitlement grows by the
        request. Status OK per row."""
        decisions.require(("lend", "bind"), "the CORP simulator")
        self.lend[decisions.lend_rows] = decisions.lend_amount
        jobs, vms = decisions.bind_rows, decisions.bind_hosts
        if len(jobs):
            req = self.req[jobs]
            # add.at sums a VM's repeated rows in row order, as binding one job at a time does
            np.add.at(self.ent, vms, req)
            np.add.at(self.vms.allocated, vms, req)
            self.est[jobs] = req
            self.host[jobs] = vms
            self.start[jobs] = self.t
        return np.zeros(len(decisions.lend_rows) + len(decisions.bind_rows), np.int8)

    def _allocate(self, t: int) -> None:
        waiting = (self.host < 0) & (self.submit <= t)
        batch = self.order[waiting[self.order]]
        if not len(batch):
            return
        tic = time.perf_counter()
        if self.dra:
            self._dra_allocate(t, batch)
            took = time.perf_counter() - tic
            self.place_s += took
            self.place_ms.append(1000.0 * took)
            self.batch_sizes.append(len(batch))
            self._batch_ids.append(batch)
            return
        lenders = np.flatnonzero(self._running() & (self.lend > 0).any(axis=1))
        offer = np.maximum(self.lend[lenders] - self.committed[lenders], 0.0)
        pool = np.zeros((self.v, R))
        np.add.at(pool, self.host[lenders], offer)
        first = np.full(len(batch), -1, np.int32)
        vms = self.vms
        if len(lenders):
            first = self.placer.place(
                vms.capacity, pool, vms.up, self.req[batch].astype(np.float32)
            )
            for i in np.flatnonzero(first >= 0):
                self._borrow(batch[i], int(first[i]), lenders)
        rest = batch[first < 0]
        if len(rest):
            second = self.placer.place(
                vms.capacity, vms.room, vms.up, self.req[rest].astype(np.float32)
            )
            ok = second >= 0
            placed = rest[ok]
            self.host[placed] = second[ok]
            self.start[placed] = t
            np.add.at(vms.allocated, second[ok], self.req[placed])
            self.waited[rest[~ok]] += 1
        took = time.perf_counter() - tic
        self.place_s += took
        self.place_ms.append(1000.0 * took)
        self.batch_sizes.append(len(batch))
        self._batch_ids.append(batch)

    @property
    def _batch_jobs(self) -> NDArray[np.int64]:
        return np.concatenate(self._batch_ids) if self._batch_ids else np.zeros(0, np.int64)

    # ---- DRA as published (section IV): no lending, VM entitlements by weighted max-min

    def _dra_refresh(self, t: int) -> None:
        """Estimate each running job's demand (DRA's run-time estimate: the provisioner's
        ``demand``, a job without history its request), then split the purchased capacity
        among VMs by weighted max-min over the shares and the VMs' summed estimates.

        The estimate reads what each job *wanted* (its demand up to its request), not what it
        was served: a squeezed VM's unmet demand is visible to a hypervisor (CPU ready time,
        memory pressure), and an estimate from served usage alone could never grow back."""
        from reclaim.corp.baselines import redistribute

        run = np.flatnonzero(self._running())
        tic = time.perf_counter()
        self.est[:] = 0.0
        if len(run):
            self.est[run] = self.req[run]
            seen = run[self.start[run] < t]
            if len(seen):
                lengths = t - self.start[seen]
                indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
                slots = np.repeat(self.start[seen] - indptr[:-1], lengths) + np.arange(indptr[-1])
                who = np.repeat(seen, lengths)
                wanted = np.minimum(self.demand_log[slots, who], self.req[who])
                for r, prov in enumerate(self.provs):
                    hist = GroupedArray(np.ascontiguousarray(wanted[:, r]), indptr)
                    self.est[seen, r] = np.minimum(prov.demand(hist), self.req[seen, r])
                # what DRA takes from each job's allocation: its offers, for the over-offer rate
                self.pred_rows.append((seen, t, self.req[seen] - self.est[seen]))
        demand = np.zeros((self.v, R))
        np.add.at(demand, self.host[run], self.est[run])
        for r in range(R):
            self.ent[:, r] = redistribute(float(self.total[r]), self.shares, demand[:, r])
        self.predict_s += time.perf_counter() - tic

    def _dra_allocate(self, t: int, batch: NDArray[np.int64]) -> None:
        """New jobs on unallocated capacity (purchased minus every VM's entitlement), each on a
        random VM whose PM still has room for it (:class:`~reclaim.corp.baselines.DraPlacement`
        on the control step); the rest wait."""
        from reclaim.corp.baselines import EntitlementView

        view = EntitlementView(float(t), batch, self.req, self.ent)
        step = control_step(view, self.dra_placement, None, self)
        self.waited[batch] += 1  # all but the bound (a subset of the batch): cheaper than isin
        self.waited[step.decisions.bind_rows] -= 1

    def _borrow(self, job: int, vm: int, lenders: NDArray[np.int64]) -> None:
        """Place ``job`` on the unlocked unused resources of ``vm``, charging its lenders."""
        mine = lenders[self.host[lenders] == vm]
        offer = np.maximum(self.lend[mine] - self.committed[mine], 0.0)
        total = offer.sum(axis=0)
        share = np.divide(offer, total, out=np.zeros_like(offer), where=total > 0)
        amount = share * self.req[job]
        self.committed[mine] += amount
        for lender, amt in zip(mine.tolist(), amount, strict=True):
            if (amt > 0).any():
                self.loan_b.append(job)
                self.loan_l.append(lender)
                self.loan_amt.append(amt)
                self.loan_open.append(True)
                self.loan_orphan.append(False)
        self.host[job] = vm
        self.borrower[job] = True
        self.start[job] = self.t

    def _execute(self, t: int) -> None:
        run = np.flatnonzero(self._running())
        queued = int(((self.host < 0) & (self.submit <= t)).sum())
        if len(run):
            step = np.minimum(np.floor(self.progress[run]).astype(np.int64), self.dur[run] - 1)
            d = self.jobs.demand.data[self.jobs.demand.indptr[run] + step]
            req = self.req[run]
            vm = self.host[run]
            own = ~self.borrower[run]
            # owners' reservations are guaranteed: served first, whatever they lent
            used = np.where(own[:, None], np.minimum(d, req), 0.0)
            if self.dra:  # the jobs of a VM share its entitlement, in proportion to demand
                want = np.zeros((self.v, R))
                np.add.at(want, vm, used)
                share = np.divide(self.ent, want, out=np.ones_like(want), where=want > 0)
                used = used * np.minimum(share, 1.0)[vm]
            elif self.borrowing == "loans":
                loans = self._available_loans(run[own], used[own])[run[~own]]
                # a loan split among lenders may sum to a rounding error below the request
                whole = loans >= req[~own] - LOAN_TOLERANCE
                loans = np.where(whole, req[~own], loans)
                used[~own] = np.minimum(d[~own], loans)
                self.reclaimed_slots[run[~own]] += ~whole.all(axis=1)
            else:  # borrowers split what the owners leave of the VM, in proportion to demand
                load = np.zeros((self.v, R))
                np.add.at(load, vm[own], used[own])
                left = np.maximum(self.vms.capacity - load, 0.0)
                want = np.zeros((self.v, R))
                np.add.at(want, vm[~own], d[~own])
                share = np.divide(left, want, out=np.ones_like(left), where=want > 0)
                used[~own] = np.minimum(d[~own] * np.minimum(share, 1.0)[vm[~own]], req[~own])
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(d > used, used / d, 1.0)
            rate = np.clip(ratio.min(axis=1), 0.0, 1.0)
            # r: a borrower its request; an owner request - lent, or what it took back
            held = np.where(own[:, None], np.maximum(req - self.committed[run], used), req)
            if self.dra:  # r: the VM's entitlement, split by the jobs' estimated demand
                est = self.est[run]
                tot = np.zeros((self.v, R))
                np.add.at(tot, vm, est)
                held = np.divide(
                    self.ent[vm] * est, tot[vm], out=np.zeros_like(est), where=tot[vm] > 0
                )
            self.progress[run] += rate
            self.demand_log[t, run] = d
            self.used_log[t, run] = used
            done = run[self.progress[run] >= self.dur[run] - DONE_TOLERANCE]
            used_sum, held_sum, d_sum = used.sum(0), held.sum(0), d.sum(0)
            short = (d - used)[~own].sum(0)
            lent = self.committed[run].sum(0)
            n_borrow = int((~own).sum())
            slowed = int((rate < 1.0).sum())
            self.slowed_slots[run] += rate < 1.0
        else:
            done = np.empty(0, np.int64)
            used_sum = held_sum = d_sum = lent = short = np.zeros(R)
            n_borrow = slowed = 0
        self.rows.append(
            (t, len(run), queued, n_borrow, slowed, *d_sum, *used_sum, *held_sum, *lent, *short)
        )
        if len(done):
            self._release(done, t)

    def _available_loans(self, owners: NDArray[np.int64], served: NDArray) -> NDArray:
        """(N, R) what each borrower's open loans still provide this slot: a lender serving
        more than it kept takes the excess back from its loans in proportion to their size."""
        out = np.zeros((self.n, R))
        open_ = np.flatnonzero(self.loan_open)
        if not len(open_):
            return out
        taken = np.zeros((self.n, R))
        taken[owners] = np.clip(served - (self.req[owners] - self.committed[owners]), 0.0, None)
        share = np.divide(
            np.minimum(taken, self.committed),
            self.committed,
            out=np.zeros_like(taken),
            where=self.committed > 0,
        )
        lender = np.asarray(self.loan_l)[open_]
        kept = 1.0 - np.where(np.asarray(self.loan_orphan)[open_, None], 0.0, share[lender])
        np.add.at(out, np.asarray(self.loan_b)[open_], np.asarray(self.loan_amt)[open_] * kept)
        return out

    def _release(self, done: NDArray[np.int64], t: int) -> None:
        self.finish[done] = t + 1
        ended = np.zeros(self.n, bool)
        ended[done] = True
        # borrowers first: give back to live lenders, or to the VM if the lender already ended
        for k in range(len(self.loan_b)):
            if self.loan_open[k] and ended[self.loan_b[k]]:
                self.loan_open[k] = False
                if self.loan_orphan[k]:
                    self.vms.give(self.host[self.loan_b[k]], self.loan_amt[k])
                else:
                    lender = self.loan_l[k]
                    self.committed[lender] = np.maximum(
                        self.committed[lender] - self.loan_amt[k], 0.0
                    )
        own = done[~self.borrower[done]]
        np.subtract.at(self.vms.allocated, self.host[own], self.req[own])
        # a lender that ends leaves what it lent in use on its VM until the borrower ends
        for k in range(len(self.loan_b)):
            if self.loan_open[k] and not self.loan_orphan[k] and ended[self.loan_l[k]]:
                self.loan_orphan[k] = True
                self.vms.take(self.host[self.loan_l[k]], self.loan_amt[k])
        np.maximum(self.vms.allocated, 0.0, out=self.vms.allocated)
        self.committed[own] = 0.0

    # ---- results

    def _offers(self) -> tuple[NDArray[np.bool_], pl.DataFrame]:
        """Per (refresh, job) that offered something, whether it offered more than stayed unused
        over its window; and the table of every offer beside the actual unused amount."""
        n, big_l = self.n, self.window
        t_end = len(self.rows)
        if not self.pred_rows:
            return np.zeros(0, bool), pl.DataFrame()
        cs = np.zeros((t_end + 1, n, R))
        np.cumsum(self.demand_log[:t_end], axis=0, out=cs[1:])
        jobs = np.concatenate([c for c, _, _ in self.pred_rows])
        t0 = np.concatenate([np.full(len(c), t) for c, t, _ in self.pred_rows])
        pred = np.concatenate([p for _, _, p in self.pred_rows])
        fin = np.where(self.finish[jobs] >= 0, self.finish[jobs], t_end)
        end = np.minimum(t0 + big_l, fin)
        count = np.maximum(end - t0, 0)
        has = count > 0
        mean_d = (cs[end, jobs] - cs[t0, jobs]) / np.maximum(count, 1)[:, None]
        actual = self.req[jobs] - mean_d
        table = pl.DataFrame(
            {
                "slot": t0,
                "job": jobs,
                **{f"lendable_{r}": pred[:, i] for i, r in enumerate(RESOURCES)},
                **{
                    f"actual_unused_{r}": np.where(has, actual[:, i], np.nan)
                    for i, r in enumerate(RESOURCES)
                },
            }
        )
        lending = has & (pred > 0).any(axis=1)
        overlent = (actual[lending] < pred[lending] - 1e-9).any(axis=1)
        return overlent, table

    def result(
        self,
        provisioner: str,
        placement: str,
        epsilon: float,
        fit_s: float,
        scores: PredictionScores,
    ) -> CorpResult:
        names = ["slot", "running", "queued", "borrowers", "slowed"]
        for prefix in ("demand", "used", "held", "lent", "short"):
            names += [f"{prefix}_{r}" for r in RESOURCES]
        data = np.array(self.rows, np.float64).reshape(-1, len(names))
        timeline = pl.DataFrame({k: data[:, i] for i, k in enumerate(names)}).with_columns(
            pl.col("slot", "running", "queued", "borrowers", "slowed").cast(pl.Int64)
        )
        used = data[:, 5 + R : 5 + 2 * R]
        held = data[:, 5 + 2 * R : 5 + 3 * R]
        with np.errstate(invalid="ignore", divide="ignore"):
            per_slot = used / np.where(held > 0, held, np.nan)
        w = np.asarray(self.sc.weights, np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            overall = (used @ w) / np.where(held @ w > 0, held @ w, np.nan)
        timeline = timeline.with_columns(
            *(pl.Series(f"util_{r}", per_slot[:, i]) for i, r in enumerate(RESOURCES)),
            pl.Series("util", overall),
        )
        response = np.where(self.finish >= 0, self.finish - self.submit, np.inf).astype(np.float64)
        active = data[:, 1] > 0
        vm_cap = np.outer(active, self.vms.capacity.sum(axis=0))
        overlent, predictions = self._offers()
        return CorpResult(
            provisioner=provisioner,
            placement=placement,
            slot_s=float(self.sc.slot_s),
            window=self.window,
            weights=np.asarray(self.sc.weights, np.float64),
            epsilon=float(epsilon),
            request=self.req,
            host=self.host,
            borrower=self.borrower,
            submit=self.submit,
            start=self.start,
            finish=self.finish,
            response=response,
            threshold=np.asarray(self.jobs.threshold, np.float64),
            waited=self.waited,
            slowed=self.slowed_slots,
            reclaimed=self.reclaimed_slots,
            overlent=overlent,
            scores=scores,
            used=used,
            held=held,
            vm_capacity_slots=vm_cap,
            timeline=timeline,
            predictions=predictions,
            fit_s=fit_s,
            place_s=self.place_s,
            predict_s=self.predict_s,
            extra=self._latency_spread(),
        )

    def _latency_spread(self) -> dict[str, float]:
        """Per-job allocation latency: the wall time of the allocation batch each job waited in
        (every slot it was in the queue counts: a job that waits three slots is in three
        batches), placement only; percentiles over jobs, ms."""
        keys = ("latency_job_p50_ms", "latency_job_p95_ms", "latency_job_max_ms")
        if not self.place_ms:
            return dict.fromkeys(keys, 0.0)
        ms = np.repeat(np.asarray(self.place_ms), np.asarray(self.batch_sizes))
        per_job = np.zeros(self.n)
        np.add.at(per_job, self._batch_jobs, ms)
        per_job = per_job[self.host >= 0]
        if not len(per_job):
            return dict.fromkeys(keys, 0.0)
        return dict(
            zip(
                keys,
                (
                    float(np.percentile(per_job, 50)),
                    float(np.percentile(per_job, 95)),
                    float(per_job.max()),
                ),
                strict=True,
            )
        )
