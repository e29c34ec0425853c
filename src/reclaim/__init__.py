"""reclaim: turn usage predictions into cluster resource decisions."""

from reclaim.errors import ReclaimError, TraceError
from reclaim.state.grouped import GroupedArray
from reclaim.types import RESOURCES, Status
from reclaim.workload.model import Workload

__all__ = ["RESOURCES", "GroupedArray", "ReclaimError", "Status", "TraceError", "Workload"]
__version__ = "0.1.0"
