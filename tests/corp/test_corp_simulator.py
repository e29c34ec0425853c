"""The opportunistic-provisioning simulator: owners first, borrowers at risk; provisioners by name."""

from __future__ import annotations

import numpy as np
import pytest

from reclaim.core.capabilities import ProvisionerCapabilities
from reclaim.core.component import Component
from reclaim.corp.provisioning import UnusedEstimate
from reclaim.corp.scenario import CorpScenario, JobSet, build_scenario, split_pms
from reclaim.corp.simulator import WALL_TIME_KEYS, provisioner_names, simulate
from reclaim.errors import ReclaimError
from reclaim.registry import register


@register("provisioner", "test-share")
class ShareLender(Component):
    """Lends ``share`` of each request once the job has run ``after`` slots; learns nothing. A
    component like the built-ins: registered, it is one more provisioner the conformance suite
    checks when this module is collected first."""

    __capabilities__ = ProvisionerCapabilities()

    def __init__(self, share: float = 0.5, after: int = 1) -> None:
        self.share = share
        self.after = after

    def fit(self, usage, request):
        return self

    def lendable(self, history, request, horizon):
        return self.estimate(history, request, horizon).lower

    def estimate(self, history, request, horizon):
        valid = history.lengths >= self.after
        amount = np.where(valid, self.share * np.asarray(request, np.float64), 0.0)
        return UnusedEstimate(amount, amount, valid)


def two_vms(share_job_b_submit: float = 60.0, vm_capacity=((1.0, 1.0), (1.0, 1.0))) -> CorpScenario:
    """Two VMs (default 1 core, 1 GiB each). Job A asks (1, 1) and idles at 0.2 for 6 slots, then
    needs 0.6 core for 4; job B asks (0.8, 0.5), uses all of it for 4 slots and arrives in slot 6.
    SLO thresholds (slack 0.2): A 12 slots, B 4.8."""
    a = [[0.2, 0.2]] * 6 + [[0.6, 0.2]] * 4
    b = [[0.8, 0.5]] * 4
    jobs = JobSet.from_profiles([0.0, share_job_b_submit], [[1.0, 1.0], [0.8, 0.5]], [a, b])
    train = JobSet.from_profiles([], np.zeros((0, 2)), [])
    cap = np.asarray(vm_capacity, np.float64)
    return CorpScenario(jobs, train, cap, np.array([0, 1], np.int32), cap.copy())


def test_a_lenders_rebound_slows_its_borrower_past_its_slo_and_not_the_lender():
    res = simulate(two_vms(), "test-share", {"share": 0.8}, placement="first-fit", window=6)
    # B borrows A's lent 0.8 core on VM 0. From slot 6 A needs 0.6 core: its reservation comes
    # first, B gets the 0.4 left and runs at rate 0.5 for slots 6-9 (progress 2); A ends after
    # slot 9 on time; B runs alone at full speed for slots 10-11: response 12 - 6 = 6 > 4.8
    assert res.host.tolist() == [0, 0]
    assert res.borrower.tolist() == [False, True]
    assert res.finish.tolist() == [10, 12]
    assert res.response.tolist() == [10.0, 6.0]
    assert res.slowed.tolist() == [0, 4]  # the owner is never slowed by lending
    s = res.summary()
    assert s["slo_violation_rate"] == 0.5 and s["borrowers"] == 1.0
    assert s["borrower_violations"] == 1.0
    assert s["slowed_jobs"] == 1.0 and s["slowed_slots"] == 4.0
    tl = res.timeline
    assert tl["slowed"].to_list()[6:10] == [1, 1, 1, 1] and tl["slowed"].sum() == 4
    assert np.allclose(tl["used_cpu"].to_numpy()[6:10], 0.6 + 0.4)
    assert np.allclose(tl["short_cpu"].to_numpy()[6:10], 0.4)  # B's unmet demand
    assert np.allclose(tl["short_mem"].to_numpy(), 0.0)  # memory: 0.2 + 0.5 fit in 1 GiB
    # A kept 1 - 0.8 = 0.2 core but takes back 0.6; B holds its request 0.8
    assert np.allclose(tl["held_cpu"].to_numpy()[6:10], 0.6 + 0.8)
    assert np.allclose(tl["lent_cpu"].to_numpy()[6:10], 0.8)
    # eq. 1 by hand: served CPU / held CPU over running jobs and slots; d <= r for every job
    used = 6 * 0.2 + 4 * (0.6 + 0.4) + 2 * 0.8
    held = 6 * 1.0 + 4 * (0.6 + 0.8) + 2 * 0.8
    assert s["util_cpu"] == pytest.approx(used / held)
    assert (tl["used_cpu"] <= tl["held_cpu"] + 1e-12).all()


def test_shared_borrowers_use_the_capacity_the_owners_leave_not_what_they_promised():
    # VM 0 has 2 cores: after A's 0.6, 1.4 are left, B gets its 0.8 and is never slowed
    sc = two_vms(vm_capacity=((2.0, 2.0), (1.0, 1.0)))
    res = simulate(
        sc, "test-share", {"share": 0.8}, placement="first-fit", window=6, borrowing="shared"
    )
    assert res.borrower.tolist() == [False, True] and res.host.tolist() == [0, 0]
    assert res.response.tolist() == [10.0, 4.0]
    assert res.summary()["slo_violation_rate"] == 0.0 and res.slowed.sum() == 0
    assert res.reclaimed.sum() == 0


def test_borrowers_on_loans_lose_what_the_lender_takes_back_even_with_idle_capacity():
    # the same VM of 2 cores, but B runs on its loan: A kept 0.2 and serves 0.6, so it takes
    # 0.4 of the 0.8 lent back; B gets 0.4 of its 0.8 for slots 6-9 although 1 core sits idle
    sc = two_vms(vm_capacity=((2.0, 2.0), (1.0, 1.0)))
    res = simulate(sc, "test-share", {"share": 0.8}, placement="first-fit", window=6)
    assert res.borrower.tolist() == [False, True]
    assert res.response.tolist() == [10.0, 6.0] and res.slowed.tolist() == [0, 4]
    assert res.reclaimed.tolist() == [0, 4]
    assert np.allclose(res.timeline["used_cpu"].to_numpy()[6:10], 0.6 + 0.4)
    s = res.summary()
    assert s["slo_violation_rate"] == 0.5
    assert s["reclaimed_jobs"] == 1.0 and s["availability_violation_rate"] == 0.5
    # the one lending window (slots 6-11) lent 0.8 core; A left 1 - 0.6 = 0.4 unused on average
    assert res.overlent.tolist() == [True] and s["overlend_rate"] == 1.0


def test_a_reclaim_the_borrower_does_not_feel_still_counts_against_availability():
    # B demands only 0.3 of its 0.8: the 0.4 left of its loan covers it, so B is on time, but
    # its allocation was not fully there (RCCR's availability SLO)
    a = [[0.2, 0.2]] * 6 + [[0.6, 0.2]] * 4
    jobs = JobSet.from_profiles([0.0, 60.0], [[1.0, 1.0], [0.8, 0.5]], [a, [[0.3, 0.2]] * 4])
    cap = np.ones((2, 2))
    sc = CorpScenario(
        jobs, JobSet.from_profiles([], np.zeros((0, 2)), []), cap, np.array([0, 1], np.int32), cap
    )
    res = simulate(sc, "test-share", {"share": 0.8}, placement="first-fit", window=6)
    assert res.borrower.tolist() == [False, True] and res.slowed.sum() == 0
    s = res.summary()
    assert s["slo_violation_rate"] == 0.0 and s["availability_violation_rate"] == 0.5


def test_a_loan_outlives_its_lender_whole():
    # A lends 0.8 and ends after slot 7; B (10 slots of 0.8) keeps the whole loan to the end
    a = [[0.1, 0.1]] * 8
    jobs = JobSet.from_profiles([0.0, 60.0], [[1.0, 1.0], [0.8, 0.5]], [a, [[0.8, 0.5]] * 10])
    cap = np.ones((2, 2))
    sc = CorpScenario(
        jobs, JobSet.from_profiles([], np.zeros((0, 2)), []), cap, np.array([0, 1], np.int32), cap
    )
    res = simulate(sc, "test-share", {"share": 0.8}, placement="first-fit", window=6)
    assert res.borrower.tolist() == [False, True] and res.host.tolist() == [0, 0]
    assert res.finish.tolist() == [8, 16] and res.reclaimed.sum() == 0


def _one_vm(cores: float, submit, request, profiles) -> CorpScenario:
    jobs = JobSet.from_profiles(submit, request, profiles)
    cap = np.array([[cores, cores]])
    train = JobSet.from_profiles([], np.zeros((0, 2)), [])
    return CorpScenario(jobs, train, cap, np.zeros(1, np.int32), cap.copy())


def test_a_request_split_among_lenders_is_covered_whole_despite_rounding():
    # two idle lenders share B's request 0.7 as 0.7 * 0.3 / 0.9 + 0.7 * 0.6 / 0.9, which sums to
    # a rounding error below 0.7; B demands exactly its request and must not count as slowed
    idle = [[0.0, 0.0]] * 12
    sc = _one_vm(
        3.0, [0.0, 0.0, 60.0], [[0.3, 0.3], [0.6, 0.6], [0.7, 0.7]], [idle, idle, [[0.7, 0.7]] * 4]
    )
    res = simulate(sc, "test-share", {"share": 1.0}, placement="first-fit", window=6)
    assert res.borrower.tolist() == [False, False, True]
    assert res.slowed.sum() == 0 and res.reclaimed.sum() == 0
    assert res.finish[2] == 10


def test_a_lender_takes_back_from_its_borrowers_in_proportion_to_their_loans():
    # A (1 core) lends 0.9; B borrows 0.6 and C 0.3. A then serves 0.4: it kept 0.1, so it takes
    # 0.3 of the 0.9 lent, a third of each loan: B keeps 0.4, C 0.2
    a = [[0.1, 0.1]] * 6 + [[0.4, 0.1]] * 6
    sc = _one_vm(
        1.0,
        [0.0, 60.0, 60.0],
        [[1.0, 1.0], [0.6, 0.1], [0.3, 0.1]],
        [a, [[0.6, 0.1]] * 3, [[0.3, 0.1]] * 3],
    )
    res = simulate(sc, "test-share", {"share": 0.9}, placement="first-fit", window=6)
    assert res.borrower.tolist() == [False, True, True]
    tl = res.timeline
    assert np.allclose(tl["used_cpu"].to_numpy()[6], 0.4 + 0.4 + 0.2)
    assert np.allclose(tl["short_cpu"].to_numpy()[6], 0.2 + 0.1)
    # both run at 2/3 speed while A needs 0.4: 3 slots of work take 5 slots, all reclaimed
    assert res.reclaimed.tolist() == [0, 5, 5] and res.finish.tolist() == [12, 11, 11]


def test_an_unknown_borrowing_mode_is_refused():
    with pytest.raises(ReclaimError, match="borrowing must be one of loans, shared"):
        simulate(two_vms(), "test-share", borrowing="everything")


def test_borrowers_share_what_is_left_in_proportion_to_their_demand():
    # A (1 core) lends 0.9 after 6 slots and then needs 0.5; B (0.4) and C (0.2) borrow in slot 6
    a = [[0.1, 0.1]] * 6 + [[0.5, 0.1]] * 6
    jobs = JobSet.from_profiles(
        [0.0, 60.0, 60.0],
        [[1.0, 1.0], [0.4, 0.2], [0.2, 0.2]],
        [a, [[0.4, 0.2]] * 3, [[0.2, 0.2]] * 3],
    )
    cap = np.ones((1, 2))
    sc = CorpScenario(
        jobs, JobSet.from_profiles([], np.zeros((0, 2)), []), cap, np.zeros(1, np.int32), cap
    )
    res = simulate(sc, "test-share", {"share": 0.9}, placement="first-fit", window=6)
    assert res.borrower.tolist() == [False, True, True]
    tl = res.timeline
    # 0.5 core left for 0.6 wanted: each gets 5/6 of its demand, rate 5/6
    assert np.allclose(tl["used_cpu"].to_numpy()[6], 1.0)
    assert np.allclose(tl["short_cpu"].to_numpy()[6], 0.1)
    assert tl["slowed"].to_list()[6] == 2
    assert res.slowed[0] == 0 and res.finish[0] == 12


def test_lending_nothing_means_no_violation():
    res = simulate(two_vms(), "test-share", {"share": 0.0}, placement="first-fit", window=6)
    assert res.host.tolist() == [0, 1]  # B takes the empty VM
    assert not res.borrower.any()
    assert res.response.tolist() == [10.0, 4.0]
    s = res.summary()
    assert s["slo_violation_rate"] == 0.0 and s["slowed_slots"] == 0.0
    assert res.timeline["slowed"].sum() == 0


def test_a_job_that_fits_nowhere_waits_in_the_queue():
    sc = two_vms(share_job_b_submit=0.0)  # B arrives with A; with a third job the VMs are full
    jobs = JobSet.from_profiles(
        [0.0, 0.0, 0.0], [[1.0, 1.0], [0.8, 0.5], [0.5, 0.5]], [[[0.1, 0.1]] * 3] * 3
    )
    sc = CorpScenario(jobs, sc.train, sc.vm_capacity, sc.vm_pm, sc.pm_capacity)
    res = simulate(sc, "test-share", {"share": 0.0}, placement="first-fit", window=6)
    assert res.waited.tolist() == [0, 0, 3]  # the third waits until A ends after slot 2
    assert res.start.tolist() == [0, 0, 3]
    assert res.summary()["queued_jobs"] == 1.0


def test_fig6_scores_predictions_and_counts_young_jobs_apart_while_offers_measure_lending():
    res = simulate(two_vms(), "test-share", {"share": 0.8}, placement="first-fit", window=6)
    # A is asked once, at slot 6 (B never lends): lent 0.8 core, then its demand is 0.6 core for
    # the 4 slots it still runs: unused 0.4 -> an offer above what stayed unused
    assert res.overlent.tolist() == [True]
    s = res.summary()
    assert s["overlend_rate"] == 1.0
    # Fig. 6 scores predictions from 12 slots of history on: both jobs (10 and 4 slots) are too
    # young, counted apart, never an error of 0
    assert s["young_jobs"] == 2.0 and s["scored_jobs"] == 0.0
    assert np.isnan(s["prediction_error_rate"])
    assert s["lent_cpu"] > 0.0 and s["lent_mem"] > 0.0


def test_provisioners_are_built_by_name():
    names = provisioner_names()
    assert {"corp", "rccr", "cloudscale", "dra", "test-share"} <= set(names)
    with pytest.raises(ReclaimError, match="unknown provisioner"):
        simulate(two_vms(), "no-such-method")


@pytest.fixture(scope="module")
def small():
    return build_scenario(n_jobs=60, n_train=150, n_vms=100, n_pms=30, seed=1)


CORP_SMALL = {"hidden_layer_sizes": (16, 16), "max_iter": 40, "max_train_windows": 3000}


def _same(a, b) -> None:
    sa, sb = a.summary(), b.summary()
    for key in sa:
        if key not in WALL_TIME_KEYS:
            assert sa[key] == sb[key] or (np.isnan(sa[key]) and np.isnan(sb[key])), key
    assert a.timeline.equals(b.timeline)
    assert np.array_equal(a.host, b.host) and np.array_equal(a.finish, b.finish)


def test_corp_runs_by_name_and_is_deterministic(small):
    a = simulate(small, "corp", CORP_SMALL, seed=0)
    b = simulate(small, "corp", CORP_SMALL, seed=0)
    assert a.placement == "corp-packing"
    s = a.summary()
    assert s["unfinished"] == 0.0 and 0.0 < s["util_cpu"] <= 1.0 and 0.0 < s["util"] <= 1.0
    assert s["util"] == pytest.approx(0.5 * s["util_cpu"] + 0.5 * s["util_mem"], rel=0.5)
    assert s["latency_s"] > 0 and s["fit_s"] > 0
    _same(a, b)


def test_random_fit_baseline_placement_follows_the_seed(small):
    a = simulate(small, "test-share", {"share": 1.0}, seed=0)
    b = simulate(small, "test-share", {"share": 1.0}, seed=0)
    c = simulate(small, "test-share", {"share": 1.0}, seed=1)
    assert a.placement == "random-fit"
    _same(a, b)
    assert not np.array_equal(a.host, c.host)
    assert a.summary()["borrowers"] > 0


def test_vm_shapes_match_the_paper_scale():
    cap, _, _ = split_pms(400, 50)
    assert cap.shape == (400, 2) and np.allclose(cap, [2.0, 8.0])


def test_dra_as_published_lends_nothing_and_squeezes_a_vm_to_its_estimated_demand():
    # job A alone: (1, 1) asked, 0.2 used for 6 slots, then 0.6 core for 4 slots
    sc = two_vms(share_job_b_submit=1e6)  # B arrives long after A ended
    res = simulate(sc, "dra", window=6, max_slots=20)
    assert not res.borrower.any()
    # slots 0-5: A's VM holds its request (no history yet); at slot 6 DRA re-splits the
    # purchased 2 cores by demand: A's VM gets A's mean demand, 0.2, and A (wanting 0.6) runs at
    # 1/3 for slots 6-11 (progress 8); at slot 12 the estimate over 12 slots is 0.4: rate 2/3,
    # A ends after slot 14 -> response 15 > 12, an SLO violation no method with reservations has
    assert res.finish[0] == 15 and res.response[0] == 15.0
    assert res.slowed[0] == 9
    tl = res.timeline.filter(res.timeline["slot"] < 15)
    np.testing.assert_allclose(tl["held_cpu"].to_numpy(), [1.0] * 6 + [0.2] * 6 + [0.4] * 3)
    np.testing.assert_allclose(tl["used_cpu"].to_numpy(), [0.2] * 12 + [0.4] * 3)
    s = res.summary()
    assert s["util_cpu"] == pytest.approx(3.6 / 8.4)
    assert s["latency_job_p50_ms"] >= 0.0 and "latency_job_p95_ms" in WALL_TIME_KEYS
    # the earlier reading (lend request - mean usage to new jobs) is kept as mode="lend"
    lend = simulate(sc, "dra", {"mode": "lend"}, window=6, max_slots=20)
    assert lend.finish[0] == 10


def test_dra_places_new_jobs_only_on_unallocated_capacity():
    # one VM per PM of (1, 1): A's VM keeps its entitlement (1 core) until the refresh at slot
    # 6, so B (0.8, arriving at slot 1) finds 1 unallocated core on the other VM only
    sc = two_vms(share_job_b_submit=10.0)
    res = simulate(sc, "dra", window=6, seed=0)
    assert res.host[0] != res.host[1] and res.start[1] == 1
    assert not res.borrower.any()


def test_a_seeded_placement_plugin_draws_from_the_runs_seed():
    from reclaim.corp.simulator import _make_placer

    assert _make_placer("random-fit", 7).plugins[0].plugin.seed == 7
    assert _make_placer("best-fit", 7).plugins[0].plugin.get_params() == {}  # nothing to seed
