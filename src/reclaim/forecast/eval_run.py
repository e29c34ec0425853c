"""``reclaim forecast eval``: many models x histories x resources x stores, resumable.

Every finished cell is written at once to ``OUT/parts/`` (its forecasts as Parquet, its scores as
JSON); a rerun skips cells already there, so an interrupted evaluation resumes where it stopped.
The summary table, ``summary.parquet`` and the plots are rebuilt from all parts at the end.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import polars as pl
from rich.console import Console

from reclaim.core.grouped import GroupedArray
from reclaim.forecast.evaluate import EvalTask, evaluate_task, model_label, planned_forecasts
from reclaim.forecast.series import store_series
from reclaim.progress import count_progress
from reclaim.traces.store import Store


def run_evaluation(
    stores: dict[str, Store],
    models: list[tuple[str, dict]],
    histories: list[int],
    resources: list[str],
    out: Path,
    max_series: int | None = None,
    origins: int = 200,
    console: Console | None = None,
) -> pl.DataFrame:
    """Evaluate every cell not already in ``out/parts`` and return the summary of all cells."""
    parts = out / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    series: dict[tuple[str, str], GroupedArray] = {}
    for store_name, store in stores.items():
        for resource in resources:
            if resource == "mem" and store.units.get("mem") is None:
                continue
            series[store_name, resource] = store_series(store, resource, max_series)[1]
    cells = [
        (EvalTask(s, r, model_label(name, params), h), name, params)
        for (s, r) in series
        for name, params in models
        for h in histories
    ]
    todo = [cell for cell in cells if not (parts / f"{cell[0].key}.json").exists()]
    total = sum(
        planned_forecasts(series[t.store, t.resource], t.history, origins) for t, *_ in todo
    )
    with count_progress("forecasts", console) as progress:
        bar = progress.add_task("evaluating", total=total)
        for task, name, params in todo:
            progress.update(bar, description=f"{task.model} h={task.history} {task.resource}")
            frame, scores = evaluate_task(
                task,
                name,
                params,
                series[task.store, task.resource],
                origins,
                on_step=lambda n: progress.advance(bar, n),
            )
            frame.write_parquet(parts / f"{task.key}.parquet")
            # the JSON is written last: its presence marks the cell as done
            (parts / f"{task.key}.json").write_text(json.dumps(asdict(task) | scores) + "\n")
    summary = summarize(parts, [t for t, *_ in cells])
    summary.write_parquet(out / "summary.parquet")
    return summary


def summarize(parts: Path, tasks: list[EvalTask]) -> pl.DataFrame:
    rows = [json.loads((parts / f"{t.key}.json").read_text()) for t in tasks]
    return pl.DataFrame(rows)


def load_errors(parts: Path, tasks: list[EvalTask]) -> pl.DataFrame:
    """Absolute one-step errors of every cell, for the error-distribution plot."""
    frames = []
    for t in tasks:
        frame = pl.read_parquet(parts / f"{t.key}.parquet", columns=["actual", "mean"])
        frames.append(
            frame.select((pl.col("actual") - pl.col("mean")).abs().alias("abs_error")).with_columns(
                store=pl.lit(t.store),
                resource=pl.lit(t.resource),
                model=pl.lit(t.model),
                history=pl.lit(t.history),
            )
        )
    return pl.concat(frames)
