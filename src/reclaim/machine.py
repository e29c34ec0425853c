"""What this machine can hold: work whose estimated memory exceeds what is available is refused
before it starts, with the estimate, instead of being killed (or swapping) an hour in."""

from __future__ import annotations

import os

from reclaim.errors import ReclaimError

GIB = float(1 << 30)


def available_bytes() -> float:
    """Memory the kernel says a new allocation can get (MemAvailable), else all of it."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024.0
    except OSError:
        pass
    return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def require_memory(need_bytes: float, what: str) -> None:
    """Refuse ``what`` (e.g. "150,000 applications (1.4e8 components at 56 B)") when it needs
    more than is available."""
    have = available_bytes()
    if need_bytes > have:
        raise ReclaimError(
            f"{what} would need about {need_bytes / GIB:,.1f} GiB; this machine has "
            f"{have / GIB:,.1f} GiB available"
        )
