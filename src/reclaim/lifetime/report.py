"""The report of a lifetime-aware placement experiment (``kind = "lava"``): empty hosts against
best-fit in percentage points, stranding, migrations under LARS, and the paper's numbers beside
ours (Figure 6, section 6.1 and Table 2 of the LAVA paper)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

from reclaim.lifetime.experiment import lifetime_plugins  # noqa: E402
from reclaim.metrics.intervals import t_interval  # noqa: E402
from reclaim.report.experiment_data import ResultStore, read_store  # noqa: E402
from reclaim.report.experiment_report import Report, sectioned_report  # noqa: E402
from reclaim.report.experiment_tables import Rows  # noqa: E402
from reclaim.report.html import Section  # noqa: E402

SOURCE = "LAVA paper, section 6 (Figure 6, Table 2)"
_REQUIRED = ["run_id", "label", "pool", "placement", "lifetimes", "defrag", "seed"]
#: (placement, lifetimes, paper's empty-host gain over its production baseline in pp, where); a
#: run matches by its lifetime-aware plugins, whatever scores rank above or below them.
PAPER_GAINS = (
    ("lava>las>best-fit", "model", 6.5, "Fig. 6, mean of 24 C2 pools"),
    ("las>best-fit", "model", 6.1, "Fig. 6, mean of 24 C2 pools"),
    ("la-binary>best-fit", "model", 5.0, "Fig. 6, mean of 24 C2 pools"),
    ("las>best-fit", "oracle", 9.5, "section 6.1, oracle lifetimes"),
    ("la-binary>best-fit", "oracle", 7.5, "section 6.1, oracle lifetimes"),
)
#: Table 2: LARS's reduction of live migrations against the baseline order (two traces).
PAPER_LARS_REDUCTION = 4.5
_COLUMNS = [
    ("empty hosts", "empty_hosts_pct", "{:.1f}%"),
    ("vs best-fit", "empty_gain_pp", "{:+.1f} pp"),
    ("stranded CPU", "stranded_cpu_pct", "{:.1f}%"),
    ("stranded mem", "stranded_mem_pct", "{:.1f}%"),
    ("stranded GPU", "stranded_gpu_pct", "{:.1f}%"),
    ("migrations", "migrations", "{:,.0f}"),
    ("rejected VMs", "rejected", "{:,.0f}"),
    ("model µs/VM", "model_us_per_vm", "{:.2f}"),
    ("list migrations", "list_migrations_baseline", "{:,.0f}"),
    ("LARS list", "list_migrations_lars", "{:,.0f}"),
    ("hosts", "hosts", "{:,.0f}"),
]


def _placed_by(runs: pl.DataFrame, plugins: str) -> pl.Expr:
    """Runs whose placer has the lifetime-aware plugins ``plugins`` (as ``lifetime_plugins``
    gives them), whatever other scores it ranks them with."""
    names = [p for p in runs["placement"].unique().to_list() if lifetime_plugins(p) == plugins]
    return pl.col("placement").is_in(names)


def baseline(runs: pl.DataFrame) -> pl.Expr:
    """The baseline's runs: the placer without a lifetime-aware plugin (best-fit, alone or under
    the scores every placer of the spec ranks above it), no defragmentation."""
    return _placed_by(runs, "") & (pl.col("defrag") == "none")


def load(root: Path) -> ResultStore:
    """The store at ``root`` with ``empty_gain_pp``: a run's empty hosts minus those of the
    :func:`baseline` on the same pool, scale and seed (null without that baseline)."""
    runs, meta, pending = read_store(root, _REQUIRED)
    key = ["experiment", "scale", "pool", "seed"]
    base = (
        runs.filter(baseline(runs))
        .group_by(key)
        .agg(baseline_empty_pct=pl.col("empty_hosts_pct").mean())
    )
    runs = runs.join(
        base, on=key, how="left", nulls_equal=True, maintain_order="left"
    ).with_columns(empty_gain_pp=pl.col("empty_hosts_pct") - pl.col("baseline_empty_pct"))
    name, scale = str(meta.get("name", root.name)), str(meta.get("scale", ""))
    return ResultStore(root, name, scale, str(meta.get("description", "")), runs, pending)


def cells(runs: pl.DataFrame) -> pl.DataFrame:
    """Mean over seeds of every metric, per (pool, label), in run order."""
    key = ["pool", "label", "placement", "lifetimes", "defrag"]
    metrics = [c for c, t in runs.schema.items() if t.is_float() and c not in key and c != "seed"]
    return runs.group_by(key, maintain_order=True).agg(
        pl.len().alias("runs"), pl.col("run_id"), *[pl.col(m).mean() for m in metrics]
    )


def cell_table(table: pl.DataFrame) -> Rows:
    present = [(h, m, f) for h, m, f in _COLUMNS if m in table.columns]
    header = ["pool", "placement", "runs"] + [h for h, _, _ in present]
    rows = [
        [c["pool"], c["label"], str(c["runs"])]
        + ["-" if c[m] is None else f.format(c[m]) for _, m, f in present]
        for c in table.iter_rows(named=True)
    ]
    return header, rows


#: Pools above which the paper table gives only the interval over pools and seeds.
PER_POOL_ROWS = 3


def _interval_text(values: list[float]) -> str:
    iv = t_interval(values)
    if iv.mean is None:
        return "-"
    if iv.lo is None:
        return f"{iv.mean:+.1f} pp (n=1)"
    return f"{iv.mean:+.1f} pp [{iv.lo:+.1f}, {iv.hi:+.1f}] (n={iv.n})"


def gain_table(runs: pl.DataFrame) -> Rows:
    """Per placer: the empty-host gain over best-fit with its 95 % Student-t interval over every
    (pool, seed) run, the pools it is positive on, and rejected VMs (mean per run)."""
    header = ["placement", "empty hosts vs best-fit, mean [95 % CI]", "pools > 0", "rejected"]
    rows = []
    data = runs.filter(~baseline(runs))
    for (label,), part in data.group_by("label", maintain_order=True):
        gains = part["empty_gain_pp"].drop_nulls().to_list()
        per_pool = part.group_by("pool").agg(pl.col("empty_gain_pp").mean())["empty_gain_pp"]
        positive = f"{int((per_pool > 0).sum())} of {per_pool.drop_nulls().len()}"
        rejected = f"{part['rejected'].mean():.1f}" if "rejected" in part.columns else "-"
        rows.append([str(label), _interval_text(gains), positive, rejected])
    base = runs.filter(baseline(runs))
    if not base.is_empty() and "rejected" in base.columns:
        label = ", ".join(base["label"].unique(maintain_order=True).to_list())
        rows.insert(0, [label, "baseline", "-", f"{base['rejected'].mean():.1f}"])
    return header, rows


def paper_table(table: pl.DataFrame, runs: pl.DataFrame | None = None) -> Rows:
    """The paper's gains beside ours: per pool (the mean over seeds) for up to
    :data:`PER_POOL_ROWS` pools, and with ``runs`` the mean and 95 % interval over every
    (pool, seed) run."""
    header = ["paper", "setting", "paper value", "pool", "ours"]
    rows = []
    pools = table["pool"].n_unique()
    for placement, lifetimes, gain, where in PAPER_GAINS:
        setting = f"{placement} ({lifetimes}): empty hosts vs baseline"
        if runs is not None and pools > 1:
            part = runs.filter(
                _placed_by(runs, lifetime_plugins(placement))
                & (pl.col("lifetimes") == lifetimes)
                & (pl.col("defrag") == "none")
            )
            if not part.is_empty():
                ours = _interval_text(part["empty_gain_pp"].drop_nulls().to_list())
                rows.append([where, setting, f"{gain:+.1f} pp", f"all {pools} pools", ours])
        if pools > PER_POOL_ROWS and runs is not None:
            continue
        ours = table.filter(
            _placed_by(table, lifetime_plugins(placement))
            & (pl.col("lifetimes") == lifetimes)
            & (pl.col("defrag") == "none")
        )
        if ours.is_empty():
            rows.append([where, setting, f"{gain:+.1f} pp", "-", "not in this result store"])
        for c in ours.iter_rows(named=True):
            value = "-" if c["empty_gain_pp"] is None else f"{c['empty_gain_pp']:+.1f} pp"
            rows.append([where, setting, f"{gain:+.1f} pp", c["pool"], value])
    reductions = lars_reduction(table)
    if runs is not None and pools > 1 and "lars_reduction_pct" in runs.columns:
        values = runs.filter(pl.col("defrag") == "lars")["lars_reduction_pct"].drop_nulls()
        iv = t_interval(values.to_list())
        if iv.mean is not None:
            text = f"{iv.mean:.1f}%" + ("" if iv.lo is None else f" [{iv.lo:.1f}, {iv.hi:.1f}]")
            rows.append(
                [
                    "Table 2",
                    "LARS vs baseline order: fewer migrations",
                    f"{PAPER_LARS_REDUCTION:.1f}%",
                    f"all {pools} pools",
                    f"{text} (n={iv.n})",
                ]
            )
    if pools > PER_POOL_ROWS and runs is not None:
        reductions = {}
    for pool, reduction in reductions.items():
        rows.append(
            [
                "Table 2",
                "LARS vs baseline order: fewer migrations",
                f"{PAPER_LARS_REDUCTION:.1f}%",
                pool,
                "-" if reduction is None else f"{reduction:.1f}%",
            ]
        )
    return header, rows


def lars_reduction(table: pl.DataFrame) -> dict[str, float | None]:
    """Per pool: % fewer migrations when the VMs the ``defrag = lars`` run drained are migrated
    longest-predicted-first rather than in baseline order (one fixed list, as the paper
    compares; two closed-loop replays drain different hosts)."""
    if "lars_reduction_pct" not in table.columns:
        return {}
    lars = table.filter(pl.col("defrag") == "lars")
    return dict(zip(lars["pool"].to_list(), lars["lars_reduction_pct"].to_list(), strict=True))


def plot_gains(table: pl.DataFrame, out: Path) -> Path | None:
    """Bars: empty-host gain over best-fit per pool and placer, model and oracle side by side."""
    data = table.filter((pl.col("defrag") == "none") & ~baseline(table)).drop_nulls("empty_gain_pp")
    if data.is_empty():
        return None
    pools = data["pool"].unique(maintain_order=True).to_list()
    labels = data["label"].unique(maintain_order=True).to_list()
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(pools) * len(labels) / 3), 4))
    width = 0.8 / len(labels)
    for i, label in enumerate(labels):
        part = {
            c["pool"]: c["empty_gain_pp"]
            for c in data.filter(pl.col("label") == label).iter_rows(named=True)
        }
        xs = [p + (i - (len(labels) - 1) / 2) * width for p in range(len(pools))]
        ax.bar(xs, [part.get(p, 0.0) for p in pools], width, label=label)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(pools)), pools)
    ax.set_ylabel("empty hosts vs best-fit (pp)")
    ax.set_title("Empty hosts gained over best-fit (higher is better)")
    ax.legend(fontsize=7, ncols=2)
    fig.tight_layout()
    path = out / "lava_empty_host_gain.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_timelines(store: ResultStore, table: pl.DataFrame, out: Path) -> list[Path]:
    """Per pool, the fraction of empty hosts over time under each placer (defrag off)."""
    paths = []
    for (pool,), part in table.filter(pl.col("defrag") == "none").group_by(
        "pool", maintain_order=True
    ):
        fig, ax = plt.subplots(figsize=(8, 3.5))
        drawn = False
        for c in part.iter_rows(named=True):
            path = store.root / "runs" / c["run_id"][0] / "timeline.parquet"
            if not path.exists():
                continue
            line = pl.read_parquet(path)
            ax.step(
                line["time"] / 86400,
                line["empty_hosts_pct"],
                where="post",
                label=c["label"],
                linewidth=0.9,
            )
            drawn = True
        if not drawn:
            plt.close(fig)
            continue
        ax.set_xlabel("trace day")
        ax.set_ylabel("empty hosts (%)")
        ax.set_title(f"{pool}: empty hosts over time")
        ax.legend(fontsize=7)
        fig.tight_layout()
        target = out / f"lava_timeline_{pool}.png"
        fig.savefig(target, dpi=120)
        plt.close(fig)
        paths.append(target)
    return paths


def sections(store: ResultStore, out: Path) -> tuple[list[Section], Rows]:
    """One section with the table and figures, and the paper-vs-ours rows."""
    table = cells(store.runs)
    figures = []
    gain = plot_gains(table, out)
    if gain is not None:
        figures.append(("Empty hosts gained over best-fit, per pool", gain.name))
    figures += [
        (f"Empty hosts over time: {p.stem.removeprefix('lava_timeline_')}", p.name)
        for p in plot_timelines(store, table, out)
    ]
    notes = [
        "Empty hosts: time-averaged share of hosts without a VM, measured from the model's "
        "training cut to the end of the replay; stranding: free capacity left after filling the "
        "pool with the trace's VM mix (inflation), averaged over the measured span.",
        "Migrations: those a closed-loop replay with defragmentation performed; list migrations: "
        "the VMs that replay drained, as one fixed list, migrated 3 at a time for 20 min each in "
        "baseline order and longest-predicted-first (LARS list), as the paper compares orders.",
        "Rejected VMs fit no host at arrival: a placer that strands capacity rejects VMs and its "
        "empty-host share then flatters it; read the two columns together.",
    ]
    if store.description:
        notes.insert(0, store.description)
    heading = f"{store.name} ({store.scale})" if store.scale else store.name
    if "imputed_vms" in table.columns and (table["imputed_vms"].fill_null(0) > 0).any():
        notes.append(
            "imputed_vms > 0: the initial state holds VMs that arrived before the window with "
            "lifetimes imputed from the window's own lifetime distribution (not observed)."
        )
    gains = (
        "Empty-host gain over best-fit, 95 % interval over pools and seeds",
        gain_table(store.runs),
    )
    section = Section(heading, notes, cell_table(table), figures, [gains])
    return [section], paper_table(table, store.runs)


def write(root: Path, out: Path) -> Report:
    """The report of the LAVA store at ``root``: tables, figures and ``index.html`` in ``out``."""
    return sectioned_report(root, out, load(root), sections, SOURCE)
