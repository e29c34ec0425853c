"""Shared fixtures and the reproducible hypothesis profile."""

from __future__ import annotations

import pytest
from hypothesis import settings

from tiny_workloads import tiny_workload

# Property tests search the same examples on every run, so CI is reproducible.
settings.register_profile("reclaim", derandomize=True, deadline=None)
settings.load_profile("reclaim")


@pytest.fixture
def make_workload():
    return tiny_workload
