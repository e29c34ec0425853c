"""Usage paired with requests as real tasks pair them: shapes calibrated to measured usage ratios.

A usage shape (shapes.py) is a real series read as a fraction of *its own* trace's request. Mixed
with requests from another trace, that fraction is an accident of the two traces: Bitbrains VMs
and the Google 2011 derived job-days use about a fifth of what they are scaled to, so a cluster
built from them never runs short of memory, and no shaping policy can be told from another.

Real long-running tasks whose usage sits beside their own limits (Google's 2019 Borg trace, the
``google2019-usage`` store) say how usage relates to a request. Per task and resource we measure

- ``mean``: mean usage / request over the task's life, and
- ``peak``: highest usage / request (5-minute means, the resolution the simulator works at).

Calibration keeps each shape's pattern in time and moves its level and swing to those of a real
task: shape ``s`` with mean ``mu`` and maximum ``M`` becomes ``m + (s - mu) * (p - m) / (M - mu)``,
where ``(m, p)`` is the (mean, peak) pair of one task drawn uniformly, the same task for both
resources so that their correlation is kept. A constant shape becomes ``m``.

Rules, none of them silent (``Calibration`` counts each):

- A peak above 1 (Borg lets CPU run past its limit, and memory past it while the machine has room)
  is lowered to 1: in the simulator the request is the most a component may hold, so it would be
  clipped there anyway. Means above 1 are lowered alike.
- Calibrated samples below 0 (deep dips of a shape stretched to a wide swing) are raised to 0.
- Series whose request is missing or not positive cannot give a ratio and are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
from numpy.typing import NDArray

from reclaim.core.grouped import GroupedArray
from reclaim.core.types import RESOURCES
from reclaim.errors import TraceError
from reclaim.traces.schema import USAGE_FILE
from reclaim.traces.store import load_store
from reclaim.workload.shapes import PERCENT_UNITS, store_unit


@dataclass(frozen=True)
class UsageRatios:
    """Measured usage / request per real task. mean, peak: (N, R) float64 (unitless)."""

    store: str
    mean: NDArray[np.float64]
    peak: NDArray[np.float64]
    skipped_no_request: int

    def quantiles(self, qs: tuple[float, ...] = (0.1, 0.5, 0.9)) -> dict[str, list[float]]:
        """``<kind>_<resource>`` -> its quantiles over tasks, for reports and docs."""
        out = {}
        for kind, values in (("mean", self.mean), ("peak", self.peak)):
            for r, name in enumerate(RESOURCES):
                out[f"{kind}_{name}"] = [float(v) for v in np.quantile(values[:, r], qs)]
        return out


@dataclass(frozen=True)
class Calibration:
    """What calibration did. ``peaks_lowered``/``means_lowered``: (R,) draws above 1 set to 1;
    ``samples_raised``: (R,) calibrated samples below 0 set to 0; ``mean_share``: (R,) mean of
    the calibrated shapes' own means (the usage share a component sees on average)."""

    ratios: UsageRatios
    peaks_lowered: tuple[int, ...]
    means_lowered: tuple[int, ...]
    samples_raised: tuple[int, ...]
    mean_share: tuple[float, ...]


def measure_ratios(path: Path) -> UsageRatios:
    """Per series of the store at ``path``: (mean, peak) usage over its own request."""
    store = load_store(Path(path))
    for r in RESOURCES:
        if store_unit(store, r) in PERCENT_UNITS:
            raise TraceError(
                store.path / USAGE_FILE,
                f"{r} usage is in percent; pairing needs usage and requests in one unit",
            )
    requests = store.workloads().select("id", *(f"{r}_request" for r in RESOURCES))
    ratio = [(pl.col(r) / pl.col(f"{r}_request")).alias(r) for r in RESOURCES]
    positive = pl.all_horizontal(
        (pl.col(f"{r}_request") > 0) & pl.col(f"{r}_request").is_finite() for r in RESOURCES
    ).fill_null(False)
    joined = (
        store.usage()
        .select("id", *RESOURCES)
        .join(requests, on="id", how="left", maintain_order="left")
    )
    skipped = joined.filter(~positive).select(pl.col("id").n_unique()).collect().item()
    per_task = (
        joined.filter(positive)
        .select("id", *ratio)
        .group_by("id")
        .agg(
            *(pl.col(r).mean().alias(f"mean_{r}") for r in RESOURCES),
            *(pl.col(r).max().alias(f"peak_{r}") for r in RESOURCES),
        )
        .sort("id")
        .collect()
    )
    if not per_task.height:
        raise TraceError(store.path / USAGE_FILE, "no series with a positive request to pair with")
    bad = per_task.filter(pl.any_horizontal(~pl.all().exclude("id").is_finite()))
    if bad.height:
        raise TraceError(
            store.path / USAGE_FILE,
            f"series {bad['id'][0]!r} has unknown usage; pairing needs every sample",
        )
    mean = per_task.select(f"mean_{r}" for r in RESOURCES).to_numpy().astype(np.float64)
    peak = per_task.select(f"peak_{r}" for r in RESOURCES).to_numpy().astype(np.float64)
    return UsageRatios(str(store.path), mean, peak, int(skipped))


def calibrate_shapes(
    shapes: GroupedArray, ratios: UsageRatios, rng: np.random.Generator
) -> tuple[GroupedArray, Calibration]:
    """Each shape moved to the (mean, peak) of one task of ``ratios`` drawn with ``rng``.

    shapes: data (N, R) float32 fractions of the request; returns the same layout.
    """
    data = shapes.data.astype(np.float64)
    lengths = shapes.lengths
    starts = shapes.indptr[:-1]
    mu = np.add.reduceat(data, starts, axis=0) / lengths[:, None]
    top = np.maximum.reduceat(data, starts, axis=0)
    task = rng.integers(0, len(ratios.mean), size=len(lengths))
    mean, peak = ratios.mean[task], ratios.peak[task]
    means_lowered, peaks_lowered = (mean > 1.0).sum(axis=0), (peak > 1.0).sum(axis=0)
    mean, peak = np.minimum(mean, 1.0), np.clip(peak, mean, 1.0)
    swing = top - mu
    with np.errstate(invalid="ignore", divide="ignore"):
        gain = np.where(swing > 0, (peak - mean) / swing, 0.0)
    owner = np.repeat(np.arange(len(lengths)), lengths)
    out = mean[owner] + (data - mu[owner]) * gain[owner]
    below = out < 0.0
    np.clip(out, 0.0, 1.0, out=out)
    calibrated = out.astype(np.float32)
    share = np.add.reduceat(calibrated.astype(np.float64), starts, axis=0) / lengths[:, None]
    report = Calibration(
        ratios=ratios,
        peaks_lowered=tuple(int(n) for n in peaks_lowered),
        means_lowered=tuple(int(n) for n in means_lowered),
        samples_raised=tuple(int(n) for n in below.sum(axis=0)),
        mean_share=tuple(float(v) for v in share.mean(axis=0)),
    )
    return GroupedArray(calibrated, shapes.indptr), report
