"""Trace format readers, built by name through the registry (kind "trace_format").

To add a format, write a module here with a :class:`TraceReader` subclass decorated with
``@register("trace_format", "<name>")`` and list it among pyproject.toml's entry points, describe its files with a ``CsvLayout`` and check rows
with the helpers in :mod:`reclaim.traces.validate`; other packages register readers through the
``reclaim.trace_format`` entry point group. Formats with public schemas that fit this mould but
no rows here to test against: Google 2011 task_usage (``google2011-jobs`` reads the job and
task events), Google 2019 instance_events and the raw instance_usage tables
(``google2019-usage`` reads a per-task extract of the latter), Alibaba 2018
container_meta/container_usage and batch_task/batch_instance.
"""

from reclaim.traces.readers.base import TraceReader

__all__ = ["TraceReader"]
