"""The agent's figures as a Prometheus text endpoint on localhost (off unless a port is set).

Gauges per component and resource, the same figures as ``reclaim agent status``: reservation,
usage, forecast, limit and slack (limit - usage), labelled ``component``, ``app`` and
``resource`` (cpu in cores, mem in GiB). Served from its own registry so that a test or a second
agent in one process never collides with the global one.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from reclaim.agent.collector import LiveView
from reclaim.agent.config import Components
from reclaim.core.types import RESOURCES

_FIGURES = {
    "reservation": "Reservation (request) of the component",
    "usage": "Usage observed over the last period",
    "forecast": "Forecast mean usage for the coming period",
    "limit": "Limit set (or recommended, in dry-run) for the coming period",
    "slack": "Limit minus usage",
}


class AgentMetrics:
    """Gauges ``reclaim_agent_<figure>{component, app, resource}`` and a running count."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        labels = ("component", "app", "resource")
        self.gauges = {
            name: Gauge(f"reclaim_agent_{name}", doc, labels, registry=self.registry)
            for name, doc in _FIGURES.items()
        }
        self.running = Gauge(
            "reclaim_agent_running_components", "Components running", registry=self.registry
        )
        self.server = None

    def serve(self, port: int) -> None:
        """Listen on 127.0.0.1:``port`` in a daemon thread."""
        self.server, _ = start_http_server(port, addr="127.0.0.1", registry=self.registry)

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def update(
        self,
        comps: Components,
        view: LiveView,
        rows: NDArray[np.int64],
        mean: NDArray[np.float64],
        limit: NDArray[np.float64],
    ) -> None:
        """Set every running component's figures; components that stopped are dropped."""
        wl = view.workloads
        for gauge in self.gauges.values():
            gauge.clear()
        self.running.set(len(rows))
        used = wl.used[rows].astype(np.float64)
        figures = {
            "reservation": wl.request[rows].astype(np.float64),
            "usage": used,
            "forecast": mean,
            "limit": limit,
            "slack": limit - used,
        }
        for j, row in enumerate(rows):
            name, app = comps.names[row], comps.apps[comps.app[row]]
            for r, resource in enumerate(RESOURCES):
                for figure, values in figures.items():
                    if np.isfinite(values[j, r]):
                        self.gauges[figure].labels(name, app, resource).set(values[j, r])
