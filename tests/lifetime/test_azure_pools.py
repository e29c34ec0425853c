"""Azure 2017 VM streams as lifetime pools: binned lifetimes drawn per seed, pools by tenant batch,
imputed history placed at the window start, and the ``env:`` store of the lava-azure spec."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from reclaim.errors import ReclaimError
from reclaim.lifetime.censoring import kaplan_meier
from reclaim.lifetime.experiment import resolve_store
from reclaim.lifetime.replay import PoolView, replay_pool
from reclaim.lifetime.vms import _inverse_survival, azure_pool, impute_history, load_vms
from reclaim.traces import import_trace

START, CUT = 1_800_000, 1_803_000  # ten 5-minute bins, cut at the end of the tenth
INTERVALS = "".join(
    f"{s} {s // 300 if s <= 3600 else (13 if s <= 7200 else 14)}\n" for s in range(0, 10801, 300)
)


def _store(tmp_path: Path) -> Path:
    """Train span: 12 bins before the window, 3 VMs each; window: 10 bins of a two-VM batch
    (ended in bin 1 or 2) and a one-VM batch (running at the cut)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "flav_map.txt").write_text("1,0.75 a\n2,3.5 g\n")
    (src / "v1.interval_map.txt").write_text(INTERVALS)
    train = "".join(f"{START - 300 * k} a,g,|,a,|\n" for k in range(12, 0, -1))
    dev = "".join(f"{START + 300 * k} a,a,|,g,|\n" for k in range(10))
    dur = "".join(
        f"{START + 300 * k} U1,U2,|,C{(CUT - START - 300 * k) // 300 - 1 if k else 9},|\n"
        for k in range(10)
    )
    for name, text in (
        ("v1.train.txt.gz", train),
        ("v1.dev.txt.gz", dev),
        (f"v1.dev.c{CUT}.txt.gz", dur),
    ):
        (src / name).write_bytes(gzip.compress(text.encode(), mtime=0))
    import_trace("azure2017-lifetimes", src, tmp_path / "store")
    return tmp_path / "store"


@pytest.fixture
def store(tmp_path):
    return _store(tmp_path)


def test_window_vms_only_with_pools_and_batch_size(store):
    vms = load_vms(store)
    assert len(vms) == 30 and vms.window == (START, CUT)
    assert vms.imputed is not None and not vms.imputed.any()
    assert set(vms.family) <= {f"p{i:02d}" for i in range(16)}
    assert list(vms.family) == list(azure_pool(vms.features["job_id"].to_list()))
    assert vms.features["batch_size"].to_list()[:3] == [2.0, 2.0, 1.0]
    assert vms.right_censored.sum() == 10 and np.isinf(vms.exit[vms.right_censored]).all()
    # without a seed the store's point value: the middle of [300, 600) for U1
    assert vms.exit[0] - vms.arrival[0] == 450.0


def test_pool_of_a_batch_is_stable():
    assert azure_pool(["1800000-b0", "1800000-b0"]).tolist() == [azure_pool(["1800000-b0"])[0]] * 2
    # CRC-32, not Python's salted hash: the same name in every process
    assert azure_pool(["1800000-b0"])[0] == "p05"  # zlib.crc32(b"1800000-b0") % 16 == 5


def test_lifetime_draws_stay_in_their_bin_and_follow_the_seed(store):
    a, b, again = (load_vms(store, lifetime_seed=s) for s in (0, 1, 0))
    ended = ~a.right_censored
    life = a.exit[ended] - a.arrival[ended]
    lo = np.where(np.arange(ended.sum()) % 2 == 0, 300.0, 600.0)  # U1, U2 alternate
    assert (life >= lo).all() and (life < lo + 300).all()
    assert np.array_equal(a.exit, again.exit) and not np.array_equal(a.exit[ended], b.exit[ended])
    # one pool sees the same draws as the whole table
    pool = a.family[0]
    sub = load_vms(store, family=pool, lifetime_seed=0)
    assert np.array_equal(sub.exit, a.exit[a.family == pool])


def test_imputed_history_starts_alive_and_is_placed_at_the_window_start(store):
    vms = load_vms(store, lifetime_seed=0, history_days=1.0)
    hist = vms.imputed
    assert hist.any() and (vms.arrival[hist] < START).all()
    assert (vms.exit[hist] > START).all()
    assert vms.left_censored[hist].all()  # never trained on, never counted by a training cut
    # every window VM that was censored makes the lifetime curve end at S > 0: the tail lives on
    assert np.isinf(vms.exit[hist]).any()
    result = replay_pool(vms, np.tile([64.0, 256.0, 0.0], (4, 1)), "best-fit")
    placed = result.host_of[hist] >= 0
    assert placed.all() and (result.view.vm_start[hist] == START).all()
    with pytest.raises(ReclaimError, match="history_days"):
        load_vms(store, history_days=1.0)


def test_inverse_survival_draws_lifetimes_past_the_arrival_age():
    km = kaplan_meier([100.0, 200.0, 300.0, 400.0], [True, True, True, False])
    # S: 0.75 after 100, 0.5 after 200, 0.25 after 300, then flat (censored at 400)
    u = np.array([0.9, 0.6, 0.3, 0.1, 0.6])
    d = np.array([0.0, 150.0, 150.0, 150.0, 250.0])
    out = _inverse_survival(km, u, d)
    assert out[0] == 100.0  # S(0) = 1 > 0.9: dies at the first time S <= 0.9
    assert out[1] == 200.0  # S(150) = 0.75 > 0.6: alive at 150, dies at 200 (S = 0.5)
    assert out[2] == 300.0 and np.isinf(out[3])  # past the curve: outlives the window
    assert np.isnan(out[4])  # S(250) = 0.5 <= 0.6: died before the window


def test_initial_predictions_are_one_batched_call(store):
    vms = load_vms(store, lifetime_seed=0)

    class Counting:
        calls: list[int] = []

        def remaining(self, rows, uptime):
            self.calls.append(len(rows))
            return np.full(len(rows), 600.0)

    predictor = Counting()
    view = PoolView(vms, np.tile([64.0, 256.0, 0.0], (2, 1)), predictor, initial_for_all=True)
    assert view.initial(np.array([3])).tolist() == [600.0]
    view.initial(np.array([5, 7]))
    assert predictor.calls == [len(vms)]


def test_env_store_names_the_variable_when_unset(monkeypatch, store):
    monkeypatch.delenv("RECLAIM_TEST_AZURE", raising=False)
    with pytest.raises(ReclaimError, match="export RECLAIM_TEST_AZURE=STORE"):
        resolve_store("env:RECLAIM_TEST_AZURE")
    monkeypatch.setenv("RECLAIM_TEST_AZURE", str(store))
    assert resolve_store("env:RECLAIM_TEST_AZURE") == str(store.resolve())
    assert resolve_store("some/folder") == "some/folder"


def test_lava_azure_spec_parses_without_the_store(monkeypatch):
    from reclaim.experiments import load_spec

    monkeypatch.delenv("RECLAIM_AZURE2017_STORE", raising=False)
    spec = load_spec("lava-azure")
    runs = spec.runs("small")
    assert len({r.pool.name for r in runs}) == 8 and {r.seed for r in runs} == {0, 1}
    assert all(r.pool.store == "env:RECLAIM_AZURE2017_STORE" for r in runs)
    assert all(r.pool.history_days == 3.47 for r in runs)


def test_history_known_to_be_running_at_the_window_start_is_always_kept():
    # Window VMs: lifetimes 1..1000 h, so S(d) at 500 h is about one half.
    rng = np.random.default_rng(0)
    n = 2000
    hours = rng.uniform(1, 1000, n) * 3600.0
    window = pl.DataFrame(
        {"arrival": np.zeros(n), "exit": hours, "category": ["a"] * n, "batch_size": [1.0] * n}
    )
    start = 500 * 3600.0
    m = 400
    history = pl.DataFrame(
        {
            "arrival": np.zeros(m),
            "exit": np.full(m, np.inf),
            "category": ["a"] * m,
            "batch_size": [1.0] * m,
            # half unknown, half known to have run up to the window start (a dev VM at its cut)
            "lifetime_min": [None] * (m // 2) + [start] * (m // 2),
        },
        schema_overrides={"lifetime_min": pl.Float64},
    )
    kept = impute_history(window, history, (start, 2 * start), seed=0)
    known = kept.filter(pl.col("lifetime_min").is_not_null())
    unknown = kept.filter(pl.col("lifetime_min").is_null())
    assert known.height == m // 2  # alive at the start by what the trace says
    assert 0.3 * m / 2 < unknown.height < 0.7 * m / 2  # alive with probability S(d) ~ 1/2
    assert (known["exit"] >= start).all() and kept["imputed"].all()
