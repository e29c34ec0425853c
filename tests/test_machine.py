"""Work that cannot fit in memory is refused before it starts, naming the estimate."""

from __future__ import annotations

import pytest

from reclaim import machine
from reclaim.errors import ReclaimError


def test_available_memory_is_read_and_beyond_it_is_refused():
    have = machine.available_bytes()
    assert 0 < have < 1 << 50
    machine.require_memory(have / 2, "half of it")
    with pytest.raises(ReclaimError, match=r"^twice of it would need about [\d,.]+ GiB; this"):
        machine.require_memory(have * 2, "twice of it")
