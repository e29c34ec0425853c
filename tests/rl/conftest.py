"""The shipped Bitbrains sample as a pool, loaded once."""

from __future__ import annotations

import pytest

from reclaim.traces.store import sample_path
from reclaim.tvw.pool import load_pool


@pytest.fixture(scope="session")
def bitbrains():
    return load_pool(sample_path("bitbrains"))
