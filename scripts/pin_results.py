"""Pin what experiments produce, to check that a refactoring changed nothing.

    python scripts/pin_results.py run RESULTS_DIR
    python scripts/pin_results.py record RESULTS_DIR pins.json
    python scripts/pin_results.py check RESULTS_DIR pins.json

``run`` runs every shipped experiment at its smallest scale and the other commands that
simulate (``simulate``, ``place eval``, ``rl eval``) on the shipped samples, into RESULTS_DIR
(about two minutes on two cores). ``record`` hashes every table and summary under RESULTS_DIR (result stores of
``reclaim experiment run``, CSV or JSON outputs of other commands) into ``pins.json``;
``check`` recomputes the hashes and names every file that differs. Fields that measure the
machine rather than the policy (wall-clock seconds, latencies) are left out of the hashes, so
a run on a busy machine still matches; everything else must be bit for bit equal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import polars as pl

#: Names of columns and summary keys that hold wall-clock measurements.
TIMING = {"wall_s", "tick_s", "fit_s", "seconds", "elapsed_s", "train_s", "model_us_per_vm"}
TIMING_PREFIXES = ("latency_", "seconds_", "wall_")


#: The smallest scale of each shipped experiment spec that runs on the shipped samples
#: (lava-azure needs an imported Azure 2017 store, see its spec).
EXPERIMENTS = {
    "conformal": "tiny",
    "corp": "tiny",
    "headline": "demo",
    "lava": "tiny",
    "pace-fig3": "tiny",
    "pace-fig4": "tiny",
}
#: Other simulating commands, each writing into its own folder (given as ``-o``).
COMMANDS = {
    "simulate": ["simulate"],
    "place": ["place", "eval", "--sequences", "3", "--load", "30,50"],
    "rl": ["rl", "eval", "--sequences", "3", "--load", "50"],
}


def run(root: Path) -> None:
    reclaim = [str(Path(sys.executable).with_name("reclaim"))]
    jobs = [
        (name, ["experiment", "run", name, "--scale", scale, "--jobs", "1"])
        for name, scale in EXPERIMENTS.items()
    ] + list(COMMANDS.items())
    for name, args in jobs:
        if (root / name).exists():
            continue
        print(f"{name}: reclaim {' '.join(args)}", flush=True)
        subprocess.run([*reclaim, *args, "-o", str(root / name)], check=True, capture_output=True)


def _is_timing(name: str) -> bool:
    return name in TIMING or name.startswith(TIMING_PREFIXES)


def _strip(value):
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not _is_timing(k)}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def digest(path: Path) -> str:
    """sha256 of the file's content, its timing fields left out."""
    if path.suffix == ".parquet":
        frame = pl.read_parquet(path)
        frame = frame.select([c for c in frame.columns if not _is_timing(c)])
        text = frame.write_csv(float_precision=None)
    elif path.suffix == ".json":
        text = json.dumps(_strip(json.loads(path.read_text())), sort_keys=True)
    else:
        text = path.read_text()
    return hashlib.sha256(text.encode()).hexdigest()


def pins(root: Path) -> dict[str, str]:
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and p.suffix in {".parquet", ".json", ".csv"} and ".unreadable" not in str(p)
    )
    return {str(p.relative_to(root)): digest(p) for p in files}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["run", "record", "check"])
    parser.add_argument("results", type=Path)
    parser.add_argument("pins", type=Path, nargs="?")
    args = parser.parse_args()
    if args.mode == "run":
        run(args.results)
        return 0
    now = pins(args.results)
    if args.mode == "record":
        args.pins.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"{len(now)} files pinned in {args.pins}")
        return 0
    held = json.loads(args.pins.read_text())
    differ = sorted(k for k in held.keys() & now.keys() if held[k] != now[k])
    missing, extra = sorted(held.keys() - now.keys()), sorted(now.keys() - held.keys())
    for name, group in (("differs", differ), ("missing", missing), ("new", extra)):
        for path in group:
            print(f"{name}: {path}")
    same = len(held) - len(differ) - len(missing)
    print(f"{same} of {len(held)} pinned files identical")
    return 1 if differ or missing or extra else 0


if __name__ == "__main__":
    sys.exit(main())
