"""The shaping paper's headline numbers, and the cells of a result store that reproduce them.

Pace et al., "A Data-Driven Approach to Dynamically Adjust Resource Allocation for Compute
Clusters", section 4.2 (Figures 3 and 4: 250 hosts of 32 cores and 128 GB, 150,000 applications,
10 runs). Figure 4 studies the paper's own (pessimistic) shaper, so those rows match pessimistic
runs; "slack" there is Figure 4's memory slack.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

SOURCE = "Pace et al., section 4.2"


@dataclass(frozen=True)
class Headline:
    """One number the paper states. ``forecaster`` matches itself and its variants (``gp`` matches
    ``gp-exp``); ``k1``/``k2`` None match any value; ``metric`` is a column of ``aggregate``."""

    where: str
    setting: str
    controller: str
    forecaster: str
    k1: float | None
    k2: float | None
    metric: str
    value: float


PAPER = (
    Headline(
        "Fig. 4b", "GP, K1 = 5 %, K2 = 3", "pessimistic", "gp", 0.05, 3.0, "turnaround_ratio", 10.6
    ),
    Headline("Fig. 4b", "GP, K1 = 5 %, K2 = 3", "pessimistic", "gp", 0.05, 3.0, "slack_mem", 0.22),
    Headline(
        "Fig. 4a",
        "ARIMA, K1 = 5 %, K2 = 0",
        "pessimistic",
        "arima",
        0.05,
        0.0,
        "turnaround_ratio",
        7.5,
    ),
    Headline(
        "Fig. 4a", "ARIMA, K1 = 5 %, K2 = 0", "pessimistic", "arima", 0.05, 0.0, "slack_mem", 0.30
    ),
    Headline(
        "Fig. 4a",
        "ARIMA, K1 = 5 %, K2 = 0",
        "pessimistic",
        "arima",
        0.05,
        0.0,
        "failure_rate",
        0.26,
    ),
    Headline(
        "Fig. 3", "oracle, pessimistic", "pessimistic", "oracle", None, None, "failure_rate", 0.0
    ),
    Headline(
        "Fig. 3", "oracle, optimistic", "optimistic", "oracle", None, None, "failure_rate", 0.3767
    ),
)


@dataclass(frozen=True)
class Comparison:
    """A headline beside one matching cell of ours (``cell`` None: not in the store)."""

    headline: Headline
    cell: dict | None


def compare(cells: pl.DataFrame) -> list[Comparison]:
    """Each headline with every cell of ``cells`` (from ``aggregate``) that matches it, or alone."""
    out = []
    for h in PAPER:
        mask = (pl.col("controller") == h.controller) & (
            (pl.col("forecaster") == h.forecaster)
            | pl.col("forecaster").str.starts_with(f"{h.forecaster}-")
        )
        for name, value in (("k1", h.k1), ("k2", h.k2)):
            if value is not None:
                mask &= (pl.col(name) - value).abs() < 1e-9
        matches = cells.filter(mask.fill_null(False)).to_dicts()
        out += [Comparison(h, cell) for cell in matches] or [Comparison(h, None)]
    return out
