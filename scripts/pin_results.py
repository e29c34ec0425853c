"""Pin what experiments produce, to check that a refactoring changed nothing.

    python scripts/pin_results.py run RESULTS_DIR
    python scripts/pin_results.py record RESULTS_DIR pins.json
    python scripts/pin_results.py check RESULTS_DIR pins.json

``run`` runs every shipped experiment at its smallest scale, the other commands that simulate
(``simulate``, ``place eval``, ``rl eval``) on the shipped samples, and the live agent for 40
periods on a fake cgroup tree, into RESULTS_DIR (about twenty minutes on two cores). ``record`` hashes every table and summary under RESULTS_DIR (result stores of
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

import numpy as np
import polars as pl

#: Names of columns and summary keys that hold wall-clock measurements.
TIMING = {"wall_s", "tick_s", "fit_s", "seconds", "elapsed_s", "train_s", "model_us_per_vm"}
TIMING_PREFIXES = ("latency_", "seconds_", "wall_")


#: The smallest scale of each shipped experiment spec that runs on the shipped samples
#: (lava-azure needs an imported Azure 2017 store, see its spec). pace-ladder is left out: its
#: tiny scale is 108 runs of 90 simulated days (over an hour); its "paper" world is pace-paper's
#: and its "reclaim" world pace-fig3/4's, which are pinned.
EXPERIMENTS = {
    "conformal": "tiny",
    "corp": "tiny",
    "corp-sensitivity": "tiny",
    "headline": "demo",
    "lava": "tiny",
    "pace-fig3": "tiny",
    "pace-fig4": "tiny",
    "pace-paper": "tiny",
    "tvw": "tiny",
}
#: Cells left out of a pinned spec: pace-paper's forecasting cells refit ARIMA on 2,000 points
#: and the GP every minute of 90 days (over an hour at tiny scale); the same forecasters are
#: pinned through pace-fig4.
LEFT_OUT = {"pace-paper": ('forecaster = "arima"', 'forecaster = "gp-exp"')}
#: Other simulating commands, each writing into its own folder (given as ``-o``).
COMMANDS = {
    "simulate": ["simulate"],
    "place": ["place", "eval", "--sequences", "3", "--load", "30,50"],
    "rl": ["rl", "eval", "--sequences", "3", "--load", "50"],
}


def run(root: Path) -> None:
    reclaim = [str(Path(sys.executable).with_name("reclaim"))]
    root.mkdir(parents=True, exist_ok=True)
    jobs = [
        (name, ["experiment", "run", _spec(root, name), "--scale", scale, "--jobs", "1"])
        for name, scale in EXPERIMENTS.items()
    ] + list(COMMANDS.items())
    for name, args in jobs:
        if (root / name).exists():
            continue
        print(f"{name}: reclaim {' '.join(args)}", flush=True)
        subprocess.run([*reclaim, *args, "-o", str(root / name)], check=True, capture_output=True)
    if not (root / "agent").exists():
        print("agent: 40 periods on a fake cgroup tree", flush=True)
        run_agent(root / "agent")


def _spec(root: Path, name: str) -> str:
    """The spec to run: its name, or a copy without the runs ``LEFT_OUT`` names."""
    if name not in LEFT_OUT:
        return name
    from importlib.resources import files

    text = (files("reclaim.experiments") / "specs" / f"{name}.toml").read_text()
    head, *blocks = text.split("[[runs]]")
    kept = [b for b in blocks if not any(mark in b for mark in LEFT_OUT[name])]
    path = root / f"{name}.toml"
    path.write_text("[[runs]]".join([head, *kept]))
    return str(path)


def run_agent(out: Path, n: int = 40, periods: int = 40) -> None:
    """The live agent's decisions, period by period, on a fake cgroup v2 tree whose usage is
    drawn from a seeded generator: the limits it writes and what it kills, as ``limits.csv``."""
    from reclaim.agent.config import AgentSettings, Components
    from reclaim.agent.fake import make_tree, set_usage
    from reclaim.agent.loop import Agent
    from reclaim.core.clock import SimClock

    parent, names = "reclaim-pins", [f"c{i}" for i in range(n)]
    out.mkdir(parents=True)
    root = out / "cgroup"
    make_tree(root, 2, parent, names)
    app = np.arange(n, dtype=np.int32) // 4
    components = Components(
        names=names,
        apps=[f"app{a}" for a in range(app[-1] + 1)],
        app=app,
        core=np.arange(n) % 4 == 0,
        request=np.tile(np.float32([1.0, 2.0]), (n, 1)),
    )
    settings = AgentSettings(
        parent=parent,
        components=components,
        database=out / "agent.db",
        cgroup_root=root,
        grace_s=300.0,
        host_cpu=float(n),
        host_mem_gib=2.0 * n,
    )
    rng = np.random.default_rng(0)
    agent = Agent(settings, clock=SimClock(1e6))
    cpu_s, rows = np.zeros(n), []
    level = rng.uniform(0.2, 0.9, n)
    for period in range(periods):
        level = np.clip(level + rng.normal(0.0, 0.05, n), 0.05, 1.2)
        cpu_s += level * 60.0
        for i, name in enumerate(names):
            set_usage(root, 2, parent, name, cpu_s[i], 2.0 * level[i])
        report = agent.step()
        for name in names:
            d = root / parent / name
            rows.append(
                (period, name, (d / "cpu.max").read_text().strip(),
                 (d / "memory.high").read_text().strip(), name in report.killed)
            )  # fmt: skip
        agent.clock.t += 60.0
    agent.close()
    pl.DataFrame(
        rows, schema=["period", "component", "cpu_max", "memory_high", "killed"], orient="row"
    ).write_csv(out / "limits.csv")


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
