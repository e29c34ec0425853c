"""The checks every registered provisioner must pass (``check_provisioner``), on real series.

Fitted on real memory series (the shipped Bitbrains sample) with their peaks as requests,
``fit`` returns the provisioner; ``lendable`` gives one finite amount per job within
[0, request], nothing for a job with no history or no request; ``estimate`` gives a point and a
conservative prediction within [0, request], the conservative one never above the point, none for
a job with no history, and ``lendable`` never lends more than the conservative one; the same input
gives the same answer, from the same instance and from a clone fitted alike.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import clone

from reclaim import registry
from reclaim.core.grouped import GroupedArray
from reclaim.testing.forecasters import real_windows

#: Slots predicted: the CORP scenario's window (one minute of 10-second slots).
HORIZON = 6


def _jobs() -> tuple[GroupedArray, np.ndarray, GroupedArray, np.ndarray]:
    """(training usage, requests, running histories, requests) from real series; the running
    batch adds a job with no history and one with a zero request."""
    _, _, full = real_windows(n_series=8, length=48)
    train = [np.asarray(s[:288], np.float64) for s in full[:4]]
    running = [np.asarray(s[:60], np.float64) for s in full[4:8]]
    running += [np.zeros(0), np.asarray(full[0][:30], np.float64)]
    req_train = np.array([1.2 * s.max() for s in train])
    req_run = np.array([1.2 * s.max() for s in running[:4]] + [1.0, 0.0])
    return GroupedArray.from_series(train), req_train, GroupedArray.from_series(running), req_run


def check_provisioner(name: str, build: Callable[[], object] | None = None) -> None:
    """Raise AssertionError naming the first broken promise of provisioner ``name``.

    ``build`` makes a fresh instance (default: the registry's ``name`` with default settings).
    """
    build = build or (lambda: registry.build("provisioner", name))
    train, req_train, running, req = _jobs()
    method = build()
    twin = clone(method)
    assert method.fit(train, req_train) is method, f"{name}: fit does not return the provisioner"
    lend = method.lendable(running, req, HORIZON)
    assert lend.shape == (len(req),), f"{name}: lendable shape {lend.shape}"
    assert np.all(np.isfinite(lend)), f"{name}: non-finite lendable amount"
    assert np.all((lend >= 0) & (lend <= req)), f"{name}: lendable outside [0, request]"
    assert lend[-2] == 0 and lend[-1] == 0, f"{name}: lends without history or request"
    again = method.lendable(running, req, HORIZON)
    assert np.array_equal(lend, again), f"{name}: same input, another answer"
    fitted_twin = twin.fit(train, req_train).lendable(running, req, HORIZON)
    assert np.array_equal(lend, fitted_twin), f"{name}: a clone fitted alike answers otherwise"
    est = method.estimate(running, req, HORIZON)
    for part in ("point", "lower", "valid"):
        got = np.asarray(getattr(est, part))
        assert got.shape == (len(req),), f"{name}: estimate {part} shape {got.shape}"
    point, lower = np.asarray(est.point), np.asarray(est.lower)
    assert np.all(np.isfinite(point) & np.isfinite(lower)), f"{name}: non-finite estimate"
    assert np.all((lower >= 0) & (point <= req)), f"{name}: estimate outside [0, request]"
    assert np.all(lower <= point + 1e-12), f"{name}: conservative estimate above the point"
    assert not est.valid[-2], f"{name}: predicts without history"
    assert np.all(lend <= lower + 1e-12), f"{name}: lends more than its conservative estimate"
