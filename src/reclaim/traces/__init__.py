"""Real traces -> one canonical Parquet store (tables and units in :mod:`reclaim.traces.schema`).

Import with :func:`import_trace` (``reclaim traces import``), read with :func:`load_store`, and
find the real-trace samples shipped in the package with :func:`sample_path`.
"""

from reclaim.traces.importer import ImportReport, import_trace, print_report
from reclaim.traces.store import Store, load_store, sample_path

__all__ = ["ImportReport", "Store", "import_trace", "load_store", "print_report", "sample_path"]
