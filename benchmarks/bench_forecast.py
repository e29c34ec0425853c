"""One monitor tick of forecasting: 10,000 real series, history 10, one step ahead.

Prints, for the online (keyed) forecasters, the amortised time per tick over ``--ticks`` ticks of
windows sliding by one (hyper-parameter refreshes and order reselections included), and in the
same run the cost of the per-series tools a user would otherwise reach for: statsforecast's
AutoARIMA/AutoETS (the selection step) and scikit-learn's GaussianProcessRegressor, timed on a
subset and scaled to 10,000.

ARIMA is timed per phase for both engines (the compiled AutoARIMA search, the default, and
statsforecast's, the reference): selection per series, the batched update, and the amortised rate
they give at the default ``reselect``; so is the shaping paper's fixed ARIMA(0, 1, 1) on 2,000
points (a fit per series in both engines, the update). Then an online run measures that rate end
to end on ``--arima-online`` series for one reselection cycle (every key selected once and updated
``reselect - 1`` times) and reports the fallback share and the one-step accuracy on the series'
next values (MAE, share inside mean +- 1, 2, 3 std; ``--reference`` repeats it with statsforecast).
Times are wall clock and, in brackets, this process's CPU time (the two differ on a busy machine).
Targets: ``gp`` under 50 ms per tick amortised; ``arima`` at least 10,000 series/s amortised
(``ets`` printed beside it).

    python benchmarks/bench_forecast.py [--series 10000] [--ticks 30] [--subset 100]
        [--arima-online 1000] [--reference] [--fixed-series 40] [--fixed-only]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from reclaim import registry
from reclaim.core.grouped import GroupedArray
from reclaim.forecast.arima import SELECTIONS
from reclaim.forecast.series import store_series
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


class Clock:
    """Wall and CPU seconds of a block."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def selection_seconds(name: str, series, window: int, **params) -> tuple[float, float]:
    """Wall and CPU seconds per series of a selecting call (AutoARIMA/AutoETS on each window):
    the per-series part that ``reselect`` amortises."""
    model = registry.build("forecaster", name, window=window, **params)
    model.fit(windows_at(series[:2], 0, window))  # imports and compilation, not timed
    batch = windows_at(series, 0, window)
    SELECTIONS.clear()  # time the search, not this process's memory of earlier selections
    with Clock() as clock:
        model.forecast(batch, 1)
    return clock.wall / len(series), clock.cpu / len(series)


def update_seconds(
    name: str, selected, n: int, ticks: int, window: int, **params
) -> tuple[float, float]:
    """Wall and CPU seconds per series of a call that only updates kept models, batched over
    ``n`` keys.

    Selecting 10,000 series for every measurement would take long, so the models selected for
    ``selected`` are copied to ``n`` keys (model i % len(selected)) and every key then sees its
    own series slide on: the same work an update tick does on 10,000 distinct models.
    """
    model = registry.build("forecaster", name, window=window, reselect=10**9, **params)
    keys = np.arange(len(selected))
    model.fit(windows_at(selected, 0, window), keys)
    model.predict(1)  # compiles the update kernel (once per machine), not timed
    copy = np.arange(n) % len(selected)
    order = np.searchsorted(model.state_.keys, keys)
    model.state_.store(np.arange(n), {k: v[order][copy] for k, v in model.state_.arrays.items()})
    series = [selected[i] for i in copy]
    wall = cpu = 0.0
    for tick in range(1, ticks + 1):
        batch = windows_at(series, tick, window)
        with Clock() as clock:
            model.forecast(batch, 1, keys=np.arange(n))
        wall, cpu = wall + clock.wall, cpu + clock.cpu
    return wall / (ticks * n), cpu / (ticks * n)


def online_run(series, window: int, **params) -> dict[str, float]:
    """The ``arima`` forecaster called with keys on windows sliding by one for one reselection
    cycle (``reselect`` calls: each key selected at the first, updated at the others), one step
    ahead; each forecast is scored against the series' next value."""
    model = registry.build("forecaster", "arima", window=window, **params)
    model.fit(windows_at(series[:2], 0, window))  # compilation, not timed
    model = registry.build("forecaster", "arima", window=window, **params)
    SELECTIONS.clear()  # every key's selection runs the search, as on first sight of a window
    keys = np.arange(len(series))
    wall = cpu = 0.0
    errors, z, fallback = [], [], []
    for tick in range(model.reselect):
        batch = windows_at(series, tick, window)
        with Clock() as clock:
            fc = model.forecast(batch, 1, keys=keys)
        wall, cpu = wall + clock.wall, cpu + clock.cpu
        actual = np.array([s[tick + window] for s in series])
        errors.append(np.abs(actual - fc.mean[:, 0]))
        with np.errstate(divide="ignore", invalid="ignore"):
            z.append(np.abs(actual - fc.mean[:, 0]) / fc.std[:, 0])
        fallback.append(fc.fallback)
    count = len(series) * model.reselect
    z = np.concatenate(z)
    z = np.where(np.isnan(z), 0.0, z)  # exact forecast of a flat window (0/0): inside
    out = {
        "wall": count / wall,
        "cpu": count / cpu,
        "fallback": float(np.concatenate(fallback).mean()),
        "mae": float(np.concatenate(errors).mean()),
    }
    out |= {f"inside{k}": float((z <= k).mean()) for k in (1, 2, 3)}
    return out


def arima_report(series, args) -> float:
    """Per-phase and amortised ARIMA throughput of both engines, then the online run; returns
    the amortised speed-up of the default engine over selecting every series at every tick."""
    n, window = len(series), args.arima_window
    k = registry.build("forecaster", "arima").reselect
    rates = {}
    for engine, subset in (("numba", 2 * args.subset), ("statsforecast", args.subset // 4)):
        select = selection_seconds("arima", series[:subset], window, engine=engine)
        update = update_seconds("arima", series[:25], n, args.ticks, window, engine=engine)
        rate = [1.0 / (s / k + u) for s, u in zip(select, update, strict=True)]
        need = select[0] / (1e-4 - update[0]) if update[0] < 1e-4 else float("inf")
        print(
            f"arima  {engine:<13} selection {1 / select[0]:,.1f} series/s "
            f"[{1 / select[1]:,.1f} cpu] ({subset} series)"
        )
        print(
            f"arima  {engine:<13} update    {1 / update[0]:,.0f} series/s "
            f"[{1 / update[1]:,.0f} cpu] (batched, {n:,} keys)"
        )
        print(
            f"arima  {engine:<13} amortised {rate[0]:,.0f} series/s [{rate[1]:,.0f} cpu] "
            f"at reselect={k} (target >= 10,000); 10,000/s from reselect={need:,.0f}"
        )
        rates[engine] = (rate[0], select[0])
    print(
        f"arima  compiled vs statsforecast selection "
        f"{rates['statsforecast'][1] / rates['numba'][1]:,.0f}x faster"
    )
    online = real_series(args.arima_online, window + k + 1)
    engines = ("numba", "statsforecast") if args.reference else ("numba",)
    for engine in engines:
        m = online_run(online, window, engine=engine)
        print(
            f"arima  {engine:<13} online    {m['wall']:,.0f} series/s [{m['cpu']:,.0f} cpu] "
            f"measured ({len(online):,} keys x {k} ticks); fallback {100 * m['fallback']:.2f} %"
        )
        print(
            f"arima  {engine:<13} accuracy  MAE {m['mae']:.4f}; inside 1/2/3 std "
            f"{100 * m['inside1']:.1f} / {100 * m['inside2']:.1f} / {100 * m['inside3']:.1f} %"
        )
    return rates["numba"][0] * rates["numba"][1]


def fixed_order_report(args) -> None:
    """The shaping paper's ARIMA(0, 1, 1) on 2,000 points (``order``, the ``pace-paper`` cell):
    a fit per series in both engines and the batched update, on the shipped real series that
    long (Bitbrains)."""
    length = 2000
    series = real_series(args.fixed_series, length + args.ticks)
    for engine in ("numba", "statsforecast"):
        wall, cpu = selection_seconds("arima", series, length, engine=engine, order=(0, 1, 1))
        print(
            f"arima  (0,1,1) {engine:<13} fit    {1e3 * wall:.2f} ms [{1e3 * cpu:.2f} cpu] "
            f"per series of {length:,}"
        )
    wall, cpu = update_seconds("arima", series[:10], 1000, args.ticks, length, order=(0, 1, 1))
    print(
        f"arima  (0,1,1) update               {1e6 * wall:.0f} us [{1e6 * cpu:.0f} cpu] "
        f"per series of {length:,} (batched, 1,000 keys)"
    )


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
    parser.add_argument(
        "--arima-online", type=int, default=1000, help="series of the measured online ARIMA run"
    )
    parser.add_argument(
        "--reference", action="store_true", help="online run with statsforecast too (slow)"
    )
    parser.add_argument(
        "--fixed-series", type=int, default=40, help="series of the ARIMA(0,1,1) fits on 2,000"
    )
    parser.add_argument(
        "--fixed-only", action="store_true", help="only the ARIMA(0,1,1) fits on 2,000 points"
    )
    args = parser.parse_args()
    if args.fixed_only:
        fixed_order_report(args)
        return

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

    arima_speedup = arima_report(series, args)
    fixed_order_report(args)
    select = selection_seconds("ets", series[: args.subset], args.arima_window)[0]
    update = update_seconds("ets", series[: args.subset], n, args.ticks, args.arima_window)[0]
    k = registry.build("forecaster", "ets").reselect
    rate = 1.0 / (select / k + update)
    need = select / (1e-4 - update) if update < 1e-4 else float("inf")
    print(f"ets    selection            {1 / select:,.1f} series/s (statsforecast, per series)")
    print(f"ets    update               {1 / update:,.0f} series/s (batched, {n:,} keys)")
    print(f"ets    amortised            {rate:,.0f} series/s at reselect={k} (target >= 10,000)")
    print(f"ets    reselect for 10,000/s {need:,.0f} ticks")

    subset = series[: args.subset]
    sk = per_series_sklearn_gp([s[:window] for s in subset])
    print(f"scikit-learn GP per series  {1 / sk:,.0f} series/s -> {sk * n:.1f} s per tick of {n:,}")
    print(f"gp-exp vs scikit-learn      {sk * n / (gp_ms / 1e3):,.0f}x faster per tick")
    print(f"arima vs AutoARIMA per tick {arima_speedup:,.0f}x faster amortised (compiled engine)")


if __name__ == "__main__":
    main()
