"""LARS: which hosts to drain, the migration order, and the 3-in-flight / 20-minute rule."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from lifetime_pools import HOUR, Oracle, vm_table
from reclaim.core.types import Decisions
from reclaim.defrag import Defragmenter, choose_drain_hosts, migration_order, replay_migrations
from reclaim.errors import ReclaimError
from reclaim.lifetime.replay import PoolView, replay_pool

CAP3 = np.tile([10.0, 100.0, 0.0], (3, 1))


def test_drain_hosts_with_fewest_vms_then_most_free():
    vms = vm_table([0] * 6, [np.inf] * 6, cpu=[1, 1, 2, 4, 1, 1], window=(0.0, 1e6))
    cap = np.tile([10.0, 100.0, 0.0], (4, 1))
    view = PoolView.with_placements(vms, cap, np.array([0, 0, 1, 2, 3, 3]), 0.0)
    # hosts 1 and 2 hold one VM each, host 1 has more room free; hosts 0 and 3 tie: lower index.
    assert choose_drain_hosts(view, 3).tolist() == [1, 2, 0]
    view.draining[1] = True
    assert choose_drain_hosts(view, 1).tolist() == [2]


def test_orders_baseline_oldest_placement_first_lars_longest_remaining_first():
    vms = vm_table([0, 0, 0, 0], [5 * HOUR, 50 * HOUR, np.inf, 2 * HOUR], cpu=1, window=(0, 1e6))
    view = PoolView.with_placements(vms, CAP3, np.array([0, 0, 0, 0]), HOUR, Oracle(vms))
    assert migration_order(view, np.array([3, 1, 0, 2]), "baseline").tolist() == [0, 1, 2, 3]
    assert migration_order(view, np.array([3, 1, 0, 2]), "lars").tolist() == [2, 1, 0, 3]
    with pytest.raises(ReclaimError, match="order"):
        Defragmenter(order="random")


def drain_scenario():
    """Host 0 gets 5 VMs of 2 cores (full), host 1 the next 4, host 2 stays empty: one empty host
    of three is below the 50 % threshold, so the check at 1 h drains host 1 (fewest VMs) into
    host 2. VM 5, the first placed on host 1, exits at 4000 s; the others never leave."""
    exit = [np.inf] * 9
    exit[5] = 4000.0
    return vm_table([0] * 9, exit, cpu=2, window=(0.0, 7000.0))


@pytest.mark.parametrize("order, migrations", [("baseline", 4), ("lars", 3)])
def test_three_in_flight_for_twenty_minutes(order, migrations):
    vms = drain_scenario()
    defrag = Defragmenter(order=order, threshold=0.5, period_s=HOUR, hosts_per_round=1)
    result = replay_pool(vms, CAP3, "best-fit", Oracle(vms), defrag=defrag, inflation_period_s=600)
    timeline = dict(zip(result.timeline["time"], result.timeline["migrations"], strict=True))
    # Three start at 3600 s. Baseline migrates VM 5 first; it exits mid-migration (4000 s), which
    # frees its slot for the fourth. LARS migrates the three long-lived VMs first; VM 5 exits
    # while waiting and is never migrated; the next slot would only open at 4800 s (20 min).
    assert timeline[3000.0] == 0 and timeline[3600.0] == 3
    assert timeline[4200.0] == migrations == result.migrations
    view = result.view
    assert view.vm_host[[6, 7, 8]].tolist() == [2, 2, 2]
    assert not view.draining.any()  # host 1 was emptied at 4800 s and is back in service
    assert view.host_count.tolist() == [5, 0, 3]
    empty = dict(zip(result.timeline["time"], result.timeline["empty_hosts"], strict=True))
    assert empty[3000.0] == 1 and empty[4200.0] == 0 and empty[5400.0] == 1


def test_no_defragmentation_while_empty_hosts_are_plentiful():
    vms = drain_scenario()
    defrag = Defragmenter(order="lars", threshold=0.3, period_s=HOUR)
    assert replay_pool(vms, CAP3, "best-fit", Oracle(vms), defrag=defrag).migrations == 0


def test_the_drained_vms_are_recorded_in_placement_order():
    vms = drain_scenario()
    rule = Defragmenter(order="baseline", threshold=0.5, period_s=HOUR, hosts_per_round=1)
    result = replay_pool(vms, CAP3, "best-fit", Oracle(vms), defrag=rule)
    assert result.drains == ((3600.0, 1),)
    assert result.drained == tuple((3600.0, vm) for vm in (5, 6, 7, 8))


def test_fixed_migration_list_longest_first_saves_the_short_ones():
    # Five VMs released at 0 (3 slots, 20 min each); rows 0 and 1 exit at 10 and 30 min.
    release = np.zeros(5)
    exit = np.array([600.0, 1800.0, np.inf, np.inf, 5000.0])
    baseline = replay_migrations(release, exit)
    # baseline: rows 0, 1, 2 start at 0; row 0 exits at 600 mid-migration (counted; its slot
    # frees) and row 3 starts; row 1's migration ends at 1200 and row 4 starts.
    assert baseline.tolist() == [True] * 5
    lars = replay_migrations(release, exit, key=exit)
    # LARS: rows 2, 3 (inf) and 4 (5000 s) start at 0 and end at 1200; row 1 (exits at 1800)
    # then starts; row 0 exited at 600 while waiting.
    assert lars.tolist() == [False, True, True, True, True]
    late = replay_migrations(release, np.array([600.0, 1100.0, np.inf, np.inf, 5000.0]), key=exit)
    assert late.tolist() == [False, False, True, True, True]


def test_fixed_migration_list_waits_for_releases_and_slots():
    release = np.array([0.0, 0.0, 0.0, 0.0, 5000.0])
    done = replay_migrations(release, np.array([np.inf, np.inf, np.inf, 1300.0, 6000.0]))
    # row 3 waits for a slot until 1200, starts (exits at 1300, still counted); row 4 at 5000
    assert done.tolist() == [True] * 5
    done = replay_migrations(release, np.array([np.inf, np.inf, np.inf, 1100.0, 4000.0]))
    assert done.tolist() == [True, True, True, False, False]


def test_a_round_is_stated_as_migrate_decisions_for_the_placer_to_place():
    vms = drain_scenario()
    view = PoolView.with_placements(vms, CAP3, np.array([0] * 5 + [1] * 4), HOUR, Oracle(vms))
    defrag = Defragmenter(order="lars", threshold=0.5, hosts_per_round=1)
    assert defrag.choose_hosts(view).tolist() == [1]
    wanted = defrag.decide(view)
    assert wanted.migrate_rows.tolist() == defrag.queue(view).tolist()
    assert sorted(wanted.migrate_rows.tolist()) == [5, 6, 7, 8]
    assert (wanted.migrate_hosts == -1).all() and len(wanted) == 4


@dataclass
class ToHost(Defragmenter):
    """LARS's rounds, but naming the destination of every VM itself."""

    host: int = 2

    def decide(self, view, forecast=None) -> Decisions:
        return Decisions(migrate_rows=self.queue(view), migrate_hosts=self.host)


@pytest.mark.parametrize(("host", "migrations"), [(2, 3), (0, 0)])
def test_a_named_destination_is_used_when_the_vm_fits_there(host, migrations):
    vms = drain_scenario()
    defrag = ToHost(threshold=0.5, period_s=HOUR, hosts_per_round=1, host=host)
    result = replay_pool(vms, CAP3, "best-fit", Oracle(vms), defrag=defrag)
    assert result.migrations == migrations
    if migrations == 0:  # host 0 is full: every VM stays (VM 5 exits at 4000 s)
        assert result.view.host_count.tolist() == [5, 3, 0] and result.drains == ((3600.0, 1),)


def test_a_destination_outside_the_pool_is_an_error():
    vms = drain_scenario()
    defrag = ToHost(threshold=0.5, period_s=HOUR, hosts_per_round=1, host=7)
    with pytest.raises(ReclaimError, match="named host 7; the pool has 3"):
        replay_pool(vms, CAP3, "best-fit", Oracle(vms), defrag=defrag)
