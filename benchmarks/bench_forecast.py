"""One monitor tick of forecasting: 10,000 real series, history 10, one step ahead.

Prints, for the online (keyed) forecasters, the amortised time per tick over ``--ticks`` ticks of
windows sliding by one (hyper-parameter refreshes and order reselections included), and in the
same run the cost of the per-series tools a user would otherwise reach for: statsforecast's
AutoARIMA/AutoETS (the selection step) and scikit-learn's GaussianProcessRegressor, timed on a
subset and scaled to 10,000.
Targets: ``gp`` under 50 ms per tick amortised; ``arima`` at least 10,000 series/s amortised
(``ets`` printed beside it).

    python benchmarks/bench_forecast.py [--series 10000] [--ticks 30] [--subset 100]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import reclaim.forecast  # noqa: F401  (registers the built-in forecasters)
from reclaim import registry
from reclaim.forecast.series import store_series
from reclaim.state.grouped import GroupedArray
from reclaim.traces import load_store, sample_path

HISTORY = 10


def real_series(n: int, length: int) -> list[np.ndarray]:
    """``n`` stretches of ``length`` observations cut from the shipped real usage series (memory and
    CPU of the Bitbrains and Google samples), at offsets spread over each series."""
    pool = []
    for name in ("bitbrains", "google2011-derived"):
        store = load_store(sample_path(name))
        for resource in ("mem", "cpu"):
            y = store_series(store, resource)[1]
            pool.extend(y[i] for i in range(len(y)))
    pool = [s for s in pool if len(s) >= length and np.ptp(s) > 0]
    out = []
    for i in range(n):
        s = pool[i % len(pool)]
        start = (i // len(pool)) * 7 % (len(s) - length + 1)
        out.append(s[start : start + length])
    return out


def windows_at(series: list[np.ndarray], tick: int, window: int) -> GroupedArray:
    data = np.stack([s[tick : tick + window] for s in series])
    return GroupedArray(data.ravel(), np.arange(len(series) + 1, dtype=np.int64) * window)


def online_ticks(name: str, series, ticks: int, window: int, **params) -> list[float]:
    """Seconds per tick of forecaster ``name`` called with keys on windows sliding by one."""
    model = registry.build("forecaster", name, **params)
    keys = np.arange(len(series))
    times = []
    for tick in range(ticks):
        batch = windows_at(series, tick, window)
        began = time.perf_counter()
        model.forecast(batch, 1, keys=keys)
        times.append(time.perf_counter() - began)
    return times


def selection_seconds(name: str, series, window: int) -> float:
    """Seconds per series of a selecting call (statsforecast's AutoARIMA/AutoETS on each window):
    the per-series part that ``reselect`` amortises."""
    model = registry.build("forecaster", name, window=window)
    model.fit(windows_at(series[:2], 0, window))  # imports and compilation, not timed
    batch = windows_at(series, 0, window)
    began = time.perf_counter()
    model.forecast(batch, 1)
    return (time.perf_counter() - began) / len(series)


def update_seconds(name: str, selected, n: int, ticks: int, window: int) -> float:
    """Seconds per series of a call that only updates kept models, batched over ``n`` keys.

    Selecting 10,000 series would take hours for ARIMA, so the models selected for ``selected``
    are copied to ``n`` keys (model i % len(selected)) and every key then sees its own series
    slide on: the same work an update tick does on 10,000 distinct models.
    """
    model = registry.build("forecaster", name, window=window, reselect=10**9)
    keys = np.arange(len(selected))
    model.fit(windows_at(selected, 0, window), keys)
    copy = np.arange(n) % len(selected)
    order = np.searchsorted(model.state_.keys, keys)
    model.state_.store(np.arange(n), {k: v[order][copy] for k, v in model.state_.arrays.items()})
    series = [selected[i] for i in copy]
    spent = 0.0
    for tick in range(1, ticks + 1):
        batch = windows_at(series, tick, window)
        began = time.perf_counter()
        model.forecast(batch, 1, keys=np.arange(n))
        spent += time.perf_counter() - began
    return spent / (ticks * n)


def per_series_sklearn_gp(series) -> float:
    """Seconds per series for scikit-learn's GP on the same history patterns, evidence maximised."""
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    began = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for s in series:
            z = (s - s.mean()) / (s.std() + 1e-12)
            rows = np.lib.stride_tricks.sliding_window_view(z, HISTORY + 1)
            X = np.column_stack([np.arange(len(rows)) - len(rows), rows[:, :-1]])
            kernel = ConstantKernel() * Matern(nu=0.5) + WhiteKernel()
            gp = GaussianProcessRegressor(kernel, random_state=0).fit(
                X[-HISTORY:], rows[-HISTORY:, -1]
            )
            gp.predict(np.r_[0, z[-HISTORY:]][None, :], return_std=True)
    return (time.perf_counter() - began) / len(series)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=10_000)
    parser.add_argument("--ticks", type=int, default=30)
    parser.add_argument(
        "--subset", type=int, default=100, help="series timed for the per-series tools"
    )
    parser.add_argument("--arima-window", type=int, default=40)
    args = parser.parse_args()

    window = 2 * HISTORY
    longest = max(window, args.arima_window) + args.ticks
    series = real_series(args.series, longest)
    n = len(series)
    print(
        f"series                      {n:,} real, history {HISTORY}, one step, {args.ticks} ticks"
    )

    online_ticks("gp-exp", series[:200], 2, window)  # compile the kernels before timing
    gp = online_ticks("gp-exp", series, args.ticks, window, history=HISTORY)
    gp_ms = 1e3 * np.mean(gp)
    print(f"gp-exp per tick             {gp_ms:.1f} ms amortised (target < 50 ms)")
    print(
        f"  slowest / fastest tick    {1e3 * max(gp):.1f} / {1e3 * min(gp):.1f} ms (refresh / reuse)"
    )

    for name, subset in (("arima", args.subset // 4), ("ets", args.subset)):
        select = selection_seconds(name, series[:subset], args.arima_window)
        update = update_seconds(name, series[:subset], n, args.ticks, args.arima_window)
        k = registry.build("forecaster", name).reselect
        rate = 1.0 / (select / k + update)
        need = select / (1e-4 - update) if update < 1e-4 else float("inf")
        print(
            f"{name:<6} selection            {1 / select:,.1f} series/s (statsforecast, per series)"
        )
        print(f"{name:<6} update               {1 / update:,.0f} series/s (batched, {n:,} keys)")
        print(
            f"{name:<6} amortised            {rate:,.0f} series/s at reselect={k} (target >= 10,000)"
        )
        print(f"{name:<6} reselect for 10,000/s {need:,.0f} ticks")
        if name == "arima":
            arima_speedup = rate * select  # against selecting every series at every tick

    subset = series[: args.subset]
    sk = per_series_sklearn_gp([s[:window] for s in subset])
    print(f"scikit-learn GP per series  {1 / sk:,.0f} series/s -> {sk * n:.1f} s per tick of {n:,}")
    print(f"gp-exp vs scikit-learn      {sk * n / (gp_ms / 1e3):,.0f}x faster per tick")
    print(f"arima vs AutoARIMA per tick {arima_speedup:,.0f}x faster amortised")


if __name__ == "__main__":
    main()
