"""Hand-built cluster views for controller tests: a few rows on a few hosts, nothing simulated."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from reclaim.core.control import UsageForecast
from reclaim.core.tables import HostTable, WorkloadTable


def hand_view(rows, hosts="2x4c8g", now=3600.0, failures=None, ooms=None):
    """``rows``: list of (app, host, core, start, request (cpu, mem)); limits start at requests.
    Row i runs component i; ``failures`` per application, ``ooms`` per component."""
    wt = WorkloadTable.empty(len(rows))
    for i, (app, host, core, start, request) in enumerate(rows):
        wt.component[i], wt.app[i], wt.host[i] = i, app, host
        wt.core[i], wt.start[i] = core, start
        wt.request[i] = wt.limit[i] = request
    n_apps = max(r[0] for r in rows) + 1
    return SimpleNamespace(
        now=now,
        hosts=HostTable.parse(hosts),
        workloads=wt,
        running=np.arange(len(rows)),
        app_failures=np.asarray(failures if failures is not None else [0] * n_apps, np.int32),
        component_ooms=np.asarray(ooms if ooms is not None else [0] * len(rows), np.uint8),
    )


def exact_forecast(view, mean, std=0.0):
    """A forecast of every running row: ``mean`` (n, R), ``std`` scalar or (n, R)."""
    mean = np.asarray(mean, np.float64)
    return UsageForecast(
        view.running,
        mean,
        np.broadcast_to(np.float64(std), mean.shape).copy(),
        np.zeros(len(mean), bool),
    )
