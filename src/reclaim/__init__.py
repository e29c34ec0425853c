"""reclaim: turn usage predictions into cluster resource decisions.

    import reclaim
    result = reclaim.simulate("pessimistic", "gp-exp", hosts="20x32c128g",
                              sample=reclaim.Sample(apps=200))
    result.summary["failure_rate"], result.summary["slack_cpu_mean"]

Every built-in is buildable by name at once (``reclaim.build("forecaster", "gp-exp")``,
``reclaim.names("placement")``): the registry finds them through the package's entry points.
The classes below are imported on first use, so that ``import reclaim`` stays quick.
"""

from importlib import import_module
from typing import Any

from reclaim.errors import ReclaimError, TraceError
from reclaim.registry import build, names, register

__version__ = "0.1.0"

#: Public name -> module that defines it, imported on first access.
_LAZY = {
    "simulate": "reclaim.api",
    "Sample": "reclaim.api",
    "RESOURCES": "reclaim.core.types",
    "Status": "reclaim.core.types",
    "Decisions": "reclaim.core.types",
    "GroupedArray": "reclaim.core.grouped",
    "HostTable": "reclaim.core.tables",
    "WorkloadTable": "reclaim.core.tables",
    "ClusterView": "reclaim.core.view",
    "UsageForecast": "reclaim.core.control",
    "Component": "reclaim.core.component",
    "ControllerCapabilities": "reclaim.core.capabilities",
    "ForecasterCapabilities": "reclaim.core.capabilities",
    "PlacementCapabilities": "reclaim.core.capabilities",
    "ProvisionerCapabilities": "reclaim.core.capabilities",
    "capabilities": "reclaim.core.capabilities",
    "SimClock": "reclaim.core.clock",
    "WallClock": "reclaim.core.clock",
    "Forecast": "reclaim.forecast.base",
    "Forecaster": "reclaim.forecast.base",
    "Placer": "reclaim.placement.framework",
    "SimResult": "reclaim.sim.results",
    "Simulator": "reclaim.sim.simulator",
    "Workload": "reclaim.workload.model",
}

__all__ = ["ReclaimError", "TraceError", "build", "names", "register", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'reclaim' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
