"""The lifetime-aware placement experiment (``kind = "lava"``): a spec -> runs -> results.

A spec names host pools (a lifetime trace, the VM family that runs there and a host shape, sized
to the trace's load), and groups of runs whose lists are grids over placement (a placer spec such
as ``"lava>las>best-fit"``), lifetimes (``model``: the GBDT trained on the first part of the
window; ``oracle``: the true lifetimes; ``none`` for placers that ignore lifetimes) and
defragmentation (``none``, ``baseline`` or ``lars``)::

    name = "lava"
    kind = "lava"
    [model]                               # LifetimeModel settings, and the training cut
    train_fraction = 0.6                  # the first 60 % of arrivals (known starts) train it
    [[pools]]
    name = "dlrm-cn"
    store = "sample:alibaba-gpu2025"      # "sample:NAME" or a store path (from the spec's folder)
    family = "CN"                         # VmTable.family to keep; omit for all
    host = "192c1024g"                    # cores, GiB, optional GPUs ("96c384g8gpu"); or "store"
                                          # for the store's own node list
    load = 0.9                            # peak demand / pool capacity on the tightest resource
    history_days = 0                      # Azure 2017: impute lifetimes of the arrivals of this
                                          # many days before the window (load_vms)
    [defrag]                              # Defragmenter settings (reclaim.defrag)
    threshold = 0.25                      # drain when fewer hosts than this are empty
    drain_share = 0.01                    # share of the pool's hosts drained per round
    [scale.small]
    days = 0                              # replayed days from the window start; 0 = all
    seeds = [0]                           # model seeds
    pools = ["dlrm-cn"]                   # optional: a subset of the pools
    [[runs]]
    placement = ["best-fit", "las>best-fit"]
    lifetimes = "model"
    defrag = "none"

Every run measures the same span: from the training cut (the arrival of the first VM the model
did not learn from; what it learned is censored at that time) to the end of the replay, so a
model is never scored on the VMs it learned from; the replay before the cut warms the pool up.
"""

from __future__ import annotations

import itertools
import os
import re
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from reclaim import registry
from reclaim.core.types import RESOURCES_GPU
from reclaim.defrag import Defragmenter, replay_migrations
from reclaim.errors import ReclaimError
from reclaim.experiments.kind import (
    IDENTITY_COLUMNS,
    ExperimentKind,
    KindRun,
    RunResult,
    identity,
    unique,
)
from reclaim.experiments.spec import SAMPLE_PREFIX, ScaledSpec, SpecErrors
from reclaim.lifetime.vms import VmTable
from reclaim.placement import build_placer
from reclaim.traces.store import sample_path

LIFETIMES = ("model", "oracle", "none")
#: Share of a pool's hosts one defragmentation round drains (the paper: "a small number").
DRAIN_SHARE = 0.01
DEFRAG = ("none", "baseline", "lars")
_HOST = re.compile(r"^(\d+(?:\.\d+)?)c(\d+(?:\.\d+)?)g(?:(\d+(?:\.\d+)?)gpu)?$")
_LIFETIME_PLUGINS = ("la-binary", "las", "lava")

COLUMNS = IDENTITY_COLUMNS | {
    "pool": pl.String,
    "placement": pl.String,
    "lifetimes": pl.String,
    "defrag": pl.String,
    "wall_s": pl.Float64,
}


@dataclass(frozen=True)
class Pool:
    """A host pool: the VMs of ``family`` in ``store`` on hosts of ``host`` (or the store's own
    nodes), as many as carry the trace's peak demand at ``load``; ``history_days``: arrivals
    before the window given imputed lifetimes (see :func:`reclaim.lifetime.vms.load_vms`)."""

    name: str
    store: str
    family: str | None
    host: str
    load: float
    history_days: float = 0.0


@dataclass(frozen=True)
class LavaScale:
    name: str
    days: float
    seeds: tuple[int, ...]
    pools: tuple[str, ...]


@dataclass(frozen=True)
class LavaRun(KindRun):
    """One replay of one pool under one placer."""

    pool: Pool
    placement: str
    lifetimes: str
    defrag: str
    days: float
    model: dict[str, Any]
    train_fraction: float
    defrag_settings: dict[str, Any]

    kind = "lava"

    def columns(self) -> dict[str, Any]:
        return self.identity() | {
            "pool": self.pool.name,
            "placement": self.placement,
            "lifetimes": self.lifetimes,
            "defrag": self.defrag,
        }


@dataclass(frozen=True)
class LavaSpec(ScaledSpec):
    pools: dict[str, Pool]
    model: dict[str, Any]
    train_fraction: float
    defrag: dict[str, Any]
    cells: tuple[tuple[str, str, str, str], ...]  # label, placement, lifetimes, defrag
    kind = "lava"

    def runs(self, scale: str | None = None) -> list[LavaRun]:
        """Pool by pool, cell by cell, seed by seed."""
        sc = self.scale(scale)
        runs = []
        for pool_name, (label, placement, lifetimes, defrag), seed in itertools.product(
            sc.pools, self.cells, sc.seeds
        ):
            pool = self.pools[pool_name]
            ident = {
                # history_days only when set: run ids of older specs stay as they were
                "pool": {k: v for k, v in vars(pool).items() if k != "history_days" or v},
                "placement": placement,
                "lifetimes": lifetimes,
                "defrag": defrag,
                "days": sc.days,
                "seed": seed,
                "model": self.model,
                "train_fraction": self.train_fraction,
                "defrag_settings": self.defrag if defrag != "none" else {},
            }
            runs.append(
                LavaRun(
                    **identity(self, sc.name, label, seed, f"{pool_name}_{label}", ident),
                    pool=pool,
                    placement=placement,
                    lifetimes=lifetimes,
                    defrag=defrag,
                    days=sc.days,
                    model=self.model,
                    train_fraction=self.train_fraction,
                    defrag_settings=self.defrag,
                )
            )
        return unique(runs, self.path)


def parse_lava_spec(doc: dict[str, Any], path: Path, text: str) -> LavaSpec:
    """Validate a ``kind = "lava"`` spec; every problem is one line naming the file and key."""
    from reclaim.lifetime.model import LifetimeModel

    err = SpecErrors(path)
    err.keys(
        doc,
        ("name", "kind", "description", "model", "defrag", "pools", "scale", "runs"),
        "top level",
    )
    head = err.head(doc, text)

    model = dict(err.typed(doc.get("model", {}), dict, "[model]"))
    fraction = err.number(model.pop("train_fraction", 0.6), "model.train_fraction")
    if not 0.0 < fraction < 1.0:
        err.fail("model.train_fraction", f"must lie in (0, 1), got {fraction}")
    known = LifetimeModel().get_params()
    for key in model:
        if key not in known:
            err.fail(f"model.{key}", f"LifetimeModel has no setting {key!r} ({', '.join(known)})")
    try:
        LifetimeModel(**model)
    except (TypeError, ValueError, ReclaimError) as problem:
        err.fail("[model]", str(problem))

    defrag_settings = dict(err.typed(doc.get("defrag", {}), dict, "[defrag]"))
    settings = {f.name for f in fields(Defragmenter)} - {"order", "hosts_per_round"}
    settings.add("drain_share")
    for key, value in defrag_settings.items():
        if key not in settings:
            err.fail(f"defrag.{key}", f"no such setting (settings: {', '.join(sorted(settings))})")
        err.number(value, f"defrag.{key}", integer=key == "max_in_flight")
    if not 0.0 < defrag_settings.get("drain_share", 0.01) <= 1.0:
        err.fail("defrag.drain_share", "must lie in (0, 1]")

    pools: dict[str, Pool] = {}
    for i, table in enumerate(err.typed(doc.get("pools"), list, "[[pools]]"), 1):
        where = f"pools[{i}]"
        table = err.typed(table, dict, where)
        err.keys(table, ("name", "store", "family", "host", "load", "history_days"), where)
        pool_name = err.typed(table.get("name"), str, f"{where}.name")
        if pool_name in pools:
            err.fail(f"{where}.name", f"pool {pool_name!r} is named twice")
        host = err.typed(table.get("host"), str, f"{where}.host")
        if host != "store" and not _HOST.match(host):
            err.fail(f"{where}.host", f"expected 'store' or a shape like 96c384g8gpu, got {host!r}")
        load = err.number(table.get("load", 0.9), f"{where}.load")
        if not 0.0 < load <= 1.0:
            err.fail(f"{where}.load", f"must lie in (0, 1], got {load}")
        family = table.get("family")
        if family is not None:
            err.typed(family, str, f"{where}.family")
        history = err.number(table.get("history_days", 0.0), f"{where}.history_days")
        if history < 0:
            err.fail(f"{where}.history_days", "must be 0 (none) or positive")
        ref = err.typed(table.get("store"), str, f"{where}.store")
        # a sample: or env: store is checked (an env: one when set, so the spec parses without
        # it) and kept as the ref: run ids and summaries do not depend on where the folder is
        # (resolve_store finds it); a path is resolved from the spec's folder
        store = _env_store(ref)
        if store is not None:
            store = err.store(store, f"{where}.store")
        if ref.startswith((ENV_PREFIX, SAMPLE_PREFIX)):
            store = ref
        pools[pool_name] = Pool(pool_name, store, family, host, load, float(history))
    if not pools:
        err.fail("[[pools]]", "at least one pool is needed")

    scales = {}
    for scale_name, table in err.typed(doc.get("scale"), dict, "[scale.NAME]").items():
        where = f"scale.{scale_name}"
        table = err.typed(table, dict, f"[{where}]")
        err.keys(table, ("days", "seeds", "pools"), f"[{where}]")
        days = err.number(table.get("days", 0), f"{where}.days")
        if days < 0:
            err.fail(f"{where}.days", "must be 0 (all) or positive")
        seeds = err.seeds(table.get("seeds", [0]), f"{where}.seeds")
        chosen = table.get("pools", list(pools))
        for p in err.typed(chosen, list, f"{where}.pools"):
            if p not in pools:
                err.fail(f"{where}.pools", f"no pool {p!r} (pools: {', '.join(pools)})")
        scales[scale_name] = LavaScale(scale_name, float(days), seeds, tuple(chosen))
    if not scales:
        err.fail("[scale.NAME]", "at least one scale is needed")

    cells = []
    for i, group in enumerate(err.typed(doc.get("runs"), list, "[[runs]]"), 1):
        where = f"runs[{i}]"
        group = err.typed(group, dict, f"[[runs]] #{i}")
        err.keys(group, ("placement", "lifetimes", "defrag"), f"[[runs]] #{i}")
        axes = [
            err.axis(group.get(k, default), f"{where}.{k}")
            for k, default in (("placement", None), ("lifetimes", "model"), ("defrag", "none"))
        ]
        for placement, lifetimes, defrag in itertools.product(*axes):
            placement = err.typed(placement, str, f"{where}.placement")
            try:
                build_placer(placement)
            except (ReclaimError, ValueError) as problem:
                err.fail(f"{where}.placement", str(problem))
            if lifetimes not in LIFETIMES:
                err.fail(f"{where}.lifetimes", f"expected one of {', '.join(LIFETIMES)}")
            if defrag not in DEFRAG:
                err.fail(f"{where}.defrag", f"expected one of {', '.join(DEFRAG)}")
            needs = uses_lifetimes(placement) or defrag == "lars"
            if needs and lifetimes == "none":
                err.fail(f"{where}.lifetimes", f"{placement!r} needs lifetimes: model or oracle")
            if not needs:
                lifetimes = "none"
            label = placement if lifetimes == "none" else f"{placement} ({lifetimes})"
            if defrag != "none":
                label += f" defrag={defrag}"
            cell = (label, placement, lifetimes, defrag)
            if cell in cells:
                continue  # best-fit asked with model and oracle is one run
            cells.append(cell)
    if not cells:
        err.fail("[[runs]]", "at least one group of runs is needed")
    return LavaSpec(
        **head,
        scales=scales,
        pools=pools,
        model=model,
        train_fraction=fraction,
        defrag=defrag_settings,
        cells=tuple(cells),
    )


#: ``store = "env:NAME"``: the store is the folder named by environment variable NAME (for traces
#: the user imports, which no sample ships); a spec naming an unset variable still parses, and its
#: runs fail with how to set it.
ENV_PREFIX = "env:"


def _env_store(ref: str) -> str | None:
    """``ref`` itself, the folder an ``env:NAME`` ref names, or None when NAME is unset."""
    if not ref.startswith(ENV_PREFIX):
        return ref
    value = os.environ.get(ref.removeprefix(ENV_PREFIX))
    return str(Path(value).resolve()) if value else None  # relative: to the working folder


def resolve_store(ref: str) -> str:
    """The store folder of a pool's ``store`` (ReclaimError for an unset ``env:NAME``)."""
    if ref.startswith(SAMPLE_PREFIX):
        return str(sample_path(ref.removeprefix(SAMPLE_PREFIX)))
    store = _env_store(ref)
    if store is None:
        name = ref.removeprefix(ENV_PREFIX)
        raise ReclaimError(
            f"set {name} to a trace store, e.g. `reclaim traces import azure2017-lifetimes "
            f"DIR -o STORE` then `export {name}=STORE`"
        )
    return store


def lifetime_plugins(placement: str) -> str:
    """The lifetime-aware plugins of a placer spec, in its order, joined by ``>``: "lava>las" for
    ``"stranding>lava>las>best-fit"``, "" for a placer that ignores lifetimes (a baseline)."""
    names = [p.split(":")[0].strip() for p in re.split(r"[>,+]", placement)]
    return ">".join(n for n in names if n in _LIFETIME_PLUGINS)


def uses_lifetimes(placement: str) -> bool:
    """Whether a placer spec has a lifetime-aware plugin."""
    return bool(lifetime_plugins(placement))


@registry.register("experiment", "lava")
class LavaKind(ExperimentKind):
    """Lifetime-aware placement experiments: placers x lifetimes x defragmentation on pools."""

    columns = COLUMNS
    report_module = "reclaim.lifetime.report"

    def parse(self, doc: dict[str, Any], path: Path, text: str) -> LavaSpec:
        return parse_lava_spec(doc, path, text)

    def run(self, run: LavaRun) -> RunResult:
        return execute(run)


# ---------------------------------------------------------------------------------- execution
def pool_capacity(pool: Pool, vms: VmTable, until: float) -> np.ndarray:
    """(H, 3) capacities: enough hosts of the pool's shape that the peak concurrent demand of
    ``vms`` up to ``until`` fills ``load`` of the tightest resource."""
    peak = peak_demand(vms, until)
    if pool.host == "store":
        from reclaim.lifetime.vms import load_hosts

        _, nodes = load_hosts(resolve_store(pool.store))
        # A fixed shuffle keeps the node mix of the real cluster in every prefix.
        order = np.random.default_rng(0).permutation(len(nodes))
        total = np.cumsum(nodes[order], axis=0)
        enough = np.all(total * pool.load >= peak, axis=1)
        if not enough.any():
            raise ReclaimError(f"{pool.store}: its nodes cannot carry the trace's peak demand")
        return nodes[order[: int(np.argmax(enough)) + 1]]
    cores, gib, gpus = _HOST.match(pool.host).groups()
    shape = np.array([float(cores), float(gib), float(gpus or 0.0)])
    if np.any((vms.request > shape).any(axis=1)):
        big = int(np.flatnonzero((vms.request > shape).any(axis=1))[0])
        raise ReclaimError(f"pool {pool.name}: VM {vms.id[big]} does not fit a {pool.host} host")
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(shape > 0, peak / (shape * pool.load), 0.0)
    return np.tile(shape, (max(1, int(np.ceil(need.max()))), 1))


def peak_demand(vms: VmTable, until: float) -> np.ndarray:
    """(3,) the most of each resource requested at once by VMs alive before ``until``."""
    alive = vms.arrival < until
    starts, ends = vms.arrival[alive], np.minimum(vms.exit[alive], until)
    request = vms.request[alive].astype(np.float64)
    times = np.concatenate([starts, ends])
    delta = np.concatenate([request, -request])
    # exits before arrivals at the same instant: a slot freed can be taken at once
    order = np.lexsort((np.r_[np.ones(len(starts)), np.zeros(len(ends))], times))
    running = np.cumsum(delta[order], axis=0)
    return running.max(axis=0) if len(running) else np.zeros(len(RESOURCES_GPU))


def execute(run: LavaRun) -> RunResult:
    """Load the pool's VMs, train or pick the lifetimes, replay, summarise."""
    from reclaim.lifetime.evaluate import censor_at, training_cut
    from reclaim.lifetime.model import LifetimeModel, OraclePredictor
    from reclaim.lifetime.replay import replay_pool
    from reclaim.lifetime.vms import load_vms

    started = time.perf_counter()
    # the seed also draws binned lifetimes within their bins (Azure 2017; no effect elsewhere)
    vms = load_vms(
        resolve_store(run.pool.store),
        family=run.pool.family,
        lifetime_seed=run.seed,
        history_days=run.pool.history_days,
    )
    start, end = vms.window
    if run.days > 0:
        end = min(end, start + run.days * 86400.0)
        vms = vms.subset(vms.arrival < end)
    cut = training_cut(vms, run.train_fraction)
    capacity = pool_capacity(run.pool, vms, end)
    predictor = None
    if run.lifetimes == "model":
        model = LifetimeModel(**run.model | {"seed": run.seed})
        model.fit(censor_at(vms, cut), ~vms.left_censored & (vms.arrival < cut))
        predictor = model.predictor(vms)
    elif run.lifetimes == "oracle":
        predictor = OraclePredictor(vms)
    defrag = None
    if run.defrag != "none":
        settings = dict(run.defrag_settings)
        # Pools differ a hundredfold in size: a round drains a share of the hosts, at least one.
        share = settings.pop("drain_share", DRAIN_SHARE)
        rounded = max(1, round(share * len(capacity)))
        defrag = registry.build("defrag", run.defrag, hosts_per_round=rounded, **settings)
    result = replay_pool(
        vms,
        capacity,
        run.placement,
        predictor,
        defrag=defrag,
        warmup_s=cut - start,
        end=end,
    )
    summary = result.summary() | {
        "hosts": float(len(capacity)),
        "measured_days": (end - cut) / 86400,
        # VMs of the initial state whose lifetimes are imputed, not observed (0: none)
        "imputed_vms": float(0 if vms.imputed is None else vms.imputed.sum()),
    }
    if defrag is not None and predictor is not None:
        summary |= fixed_list_migrations(vms, result.drained, predictor, defrag)
    return RunResult(
        summary,
        {"timeline": result.timeline},
        time.perf_counter() - started,
        {"pool": vars(run.pool), "placement": run.placement, "lifetimes": run.lifetimes},
    )


def fixed_list_migrations(
    vms: VmTable, drained: tuple[tuple[float, int], ...], predictor, defrag: Defragmenter
) -> dict[str, float]:
    """The paper's LARS comparison (sections 5.1, 6.3): the VMs this replay's defragmenter
    drained, as one fixed list, migrated in baseline order and longest-predicted-first; how many
    migrations each order performs, and LARS's reduction in %."""
    if not drained:
        return {"list_migrations_baseline": 0.0, "list_migrations_lars": 0.0}
    release = np.array([t for t, _ in drained])
    vm = np.array([v for _, v in drained], np.int64)
    exits = vms.exit[vm]
    predicted_exit = release + predictor.remaining(vm, release - vms.arrival[vm])
    slots = {"max_in_flight": defrag.max_in_flight, "migration_s": defrag.migration_s}
    base = int(replay_migrations(release, exits, None, **slots).sum())
    lars = int(replay_migrations(release, exits, predicted_exit, **slots).sum())
    return {
        "list_migrations_baseline": float(base),
        "list_migrations_lars": float(lars),
        "lars_reduction_pct": 100.0 * (base - lars) / base if base else 0.0,
    }
