"""reclaim: turn usage predictions into cluster resource decisions."""

from reclaim.core.grouped import GroupedArray
from reclaim.core.types import RESOURCES, Status
from reclaim.errors import ReclaimError, TraceError
from reclaim.workload.model import Workload

__all__ = ["RESOURCES", "GroupedArray", "ReclaimError", "Status", "TraceError", "Workload"]
__version__ = "0.1.0"
