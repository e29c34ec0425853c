"""Metrics: pure functions from simulator output to tables and summaries."""

from reclaim.metrics.apps import (
    application_slack,
    application_table,
    shapeable_share,
    summarize_applications,
)
from reclaim.metrics.timeline import summarize_timeline, timeline_table

__all__ = [
    "application_slack",
    "application_table",
    "shapeable_share",
    "summarize_applications",
    "summarize_timeline",
    "timeline_table",
]
