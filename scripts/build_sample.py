"""Rebuild the real-trace sample shipped in src/reclaim/data/sample from the shared traces.

    python scripts/build_sample.py [TRACES] [--out DIR] [--only NAME ...]

TRACES is the folder of trace extracts (default: ../shared/traces beside the repository). Each
sample store is made by the importer itself from a deterministic subset; the subset is written
into the store's meta.json under "subset" and described in the sample's PROVENANCE.md.
"""

from __future__ import annotations

import argparse
import json
import tarfile
import tempfile
from pathlib import Path

import polars as pl

from reclaim.traces import import_trace
from reclaim.traces.readers.base import natural_key
from reclaim.traces.schema import META_FILE, WORKLOADS_FILE
from reclaim.traces.writer import COMPRESSION, COMPRESSION_LEVEL

REPO = Path(__file__).resolve().parents[1]
BITBRAINS_VMS = 40
GOOGLE_FILES = 300
#: google2011-jobs ships the job rows first submitted in this first stretch of the trace (s).
GOOGLE_JOBS_S = 3600.0


def bitbrains(traces: Path, stage: Path) -> tuple[Path, str]:
    """The lowest-numbered VMs present in every month, all months, linked into ``stage``."""
    src = traces / "bitbrains-gwa-t-12-rnd"
    months = sorted((d for d in src.iterdir() if d.is_dir()), key=natural_key)
    present = [{int(p.name.split(".")[0]) for p in m.glob("*.csv.gz")} for m in months]
    vms = sorted(set.intersection(*present))[:BITBRAINS_VMS]
    for month in months:
        (stage / month.name).mkdir()
        for n in vms:
            (stage / month.name / f"{n}.csv.gz").symlink_to(month / f"{n}.csv.gz")
    months_text = ", ".join(m.name for m in months)
    return (
        stage,
        f"VM files {', '.join(map(str, vms))} (the {len(vms)} lowest numbers) in {months_text}",
    )


def google(traces: Path, stage: Path) -> tuple[Path, str]:
    """The first files of the archive in name order, extracted into ``stage``."""
    archive = traces / "google-clusterdata-2011-2-hipro-derived" / "GCD_VMs_subset.tar.gz"
    with tarfile.open(archive) as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)
        chosen = members[:GOOGLE_FILES]
        tar.extractall(stage, members=chosen, filter="data")
    first, last = Path(chosen[0].name).name, Path(chosen[-1].name).name
    return (
        stage,
        f"the first {len(chosen)} files of {archive.name} in name order ({first} .. {last})",
    )


def alibaba2017(traces: Path, stage: Path) -> tuple[Path, str]:
    src = traces / "alibaba-cluster-trace-v2017" / "batch_task.csv.gz"
    return src, "every row of the development extract"


def alibaba_gpu2023(traces: Path, stage: Path) -> tuple[Path, str]:
    return traces / "alibaba-cluster-trace-gpu-v2023", "every row of the development extract"


def alibaba_gpu2025(traces: Path, stage: Path) -> tuple[Path, str]:
    src = traces / "alibaba-cluster-trace-gpu-v2025" / "disaggregated_DLRM_trace_subset.csv.gz"
    return src, "every row of the development extract"


def google2019_usage(traces: Path, stage: Path) -> tuple[Path, str]:
    src = traces / "google-clusterdata-2019-instance-usage-sample"
    return src, "every row of the development extract (34 task files, input-sim and input-dis)"


def google2011_jobs(traces: Path, stage: Path) -> tuple[Path, str]:
    return traces / "google-clusterdata-2011-2-jobs", "every job and task event file of the extract"


def first_hour_of_jobs(store: Path) -> str:
    """Keep the job rows submitted in the first hour (the quantile tables stay whole-trace)."""
    path = store / WORKLOADS_FILE
    jobs = pl.read_parquet(path)
    kept = jobs.filter((pl.col("submit_time") > 0) & (pl.col("submit_time") <= GOOGLE_JOBS_S))
    kept.write_parquet(path, compression=COMPRESSION, compression_level=COMPRESSION_LEVEL)
    meta = json.loads((store / META_FILE).read_text())
    meta["rows"]["workloads"] = kept.height
    (store / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    return (
        f"; workloads.parquet keeps the {kept.height:,} of {jobs.height:,} jobs submitted in "
        f"(0, {GOOGLE_JOBS_S:.0f}] s; distributions.parquet and meta.json's 'distributions', "
        "'population', 'filtered' and 'flagged' are those of the whole import"
    )


#: Samples trimmed after their import: name -> (store -> text added to the subset).
TRIMS = {"google2011-jobs": first_hour_of_jobs}

SAMPLES = {
    "bitbrains": bitbrains,
    "alibaba2017": alibaba2017,
    "google2011-derived": google,
    "alibaba-gpu2023": alibaba_gpu2023,
    "alibaba-gpu2025": alibaba_gpu2025,
    "google2019-usage": google2019_usage,
    "google2011-jobs": google2011_jobs,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="?", type=Path, default=REPO.parent / "shared" / "traces")
    parser.add_argument("--out", type=Path, default=REPO / "src" / "reclaim" / "data" / "sample")
    parser.add_argument("--only", nargs="+", choices=SAMPLES, help="rebuild only these samples")
    args = parser.parse_args()
    for fmt, choose in SAMPLES.items():
        if args.only and fmt not in args.only:
            continue
        with tempfile.TemporaryDirectory() as stage:
            src, subset = choose(args.traces, Path(stage))
            report = import_trace(fmt, src, args.out / fmt)
        if fmt in TRIMS:
            subset += TRIMS[fmt](report.store)
        meta_path = report.store / META_FILE
        meta = json.loads(meta_path.read_text())
        meta["subset"] = subset
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
        size = sum(p.stat().st_size for p in report.store.iterdir())
        print(f"{fmt}: {meta['rows']} rows, {size / 1e6:.2f} MB -> {report.store}")


if __name__ == "__main__":
    main()
