"""Every registered defragmenter passes the same checks (reclaim.testing.defrag)."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim import registry
from reclaim.core.types import Decisions
from reclaim.testing.defrag import check_defrag


@pytest.mark.parametrize("name", registry.names("defrag"))
def test_registered_defragmenter_conforms(name):
    check_defrag(name)


class DrainsTheFullest(registry.factory("defrag", "lars").func):
    """Drains the host with the most VMs, even with empty hosts to spare."""

    def choose_hosts(self, view):
        hosts = np.argsort(-view.host_count, kind="stable")[:1]
        view.draining[hosts] = True
        return hosts


def test_the_suite_catches_a_drain_with_empty_hosts_to_spare():
    with pytest.raises(AssertionError, match="drains"):
        check_defrag("eager", DrainsTheFullest)


class SendsNowhere(registry.factory("defrag", "lars").func):
    """Names a destination past the last host for every VM it moves."""

    def decide(self, view):
        return Decisions(migrate_rows=self.queue(view), migrate_hosts=len(view.capacity))


def test_the_suite_catches_a_migration_outside_the_pool():
    with pytest.raises(AssertionError, match="outside the pool"):
        check_defrag("nowhere", SendsNowhere)
