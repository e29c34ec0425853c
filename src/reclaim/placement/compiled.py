"""Placement inside compiled code of a caller's own: the simulator's event loop binds between two
monitor ticks without returning to Python.

:func:`compiled_binding` says, once, whether a placer can be bound this way and how (a
:class:`Binding`: which score, its weight and seed); :func:`place` and :func:`place_runs` then do
what :meth:`Placer.place <reclaim.placement.framework.Placer.place>` does for it, bit for bit:

- best-fit and first-fit, one plugin with a score kernel: the greedy fill of each run of identical
  requests (``_kernels.fill_run``);
- random-fit: one fresh draw per bind, ``RandomFit.score``'s own (``_draws``), ranked as
  ``Placer._place_run`` ranks it (min-max normalised, weighted, ties to the lower index).

``tests/placement/test_compiled.py`` and the simulator's tests compare both with the reference.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
from numba.np.unsafe.ndarray import to_fixed_tuple
from numpy.typing import NDArray

from reclaim.core.types import R
from reclaim.placement._draws import blake2b_8_resumed, seed_words, uniform_draws
from reclaim.placement._kernels import (
    best_by_levels,
    fill_run,
    fill_run_into,
    fits_into,
    run_starts_into,
)
from reclaim.placement.framework import Placer
from reclaim.placement.plugins.best_fit import best_fit_kernel
from reclaim.placement.plugins.first_fit import first_fit_kernel
from reclaim.placement.plugins.random_fit import RandomFit

BEST_FIT, FIRST_FIT, RANDOM_FIT = 0, 1, 2
_BLOCK = 128  # bytes of a blake2b block
_SCORE_KERNELS = {best_fit_kernel: BEST_FIT, first_fit_kernel: FIRST_FIT}


class Binding(NamedTuple):
    """How compiled code binds for a placer: ``kind`` (BEST_FIT, FIRST_FIT or RANDOM_FIT), the
    plugin's ``weight`` and, for random-fit, its ``seed`` as numpy's seed words (else empty)."""

    kind: int
    weight: float
    seed: NDArray[np.uint32]


def compiled_binding(placer: Placer) -> Binding | None:
    """The :class:`Binding` that reproduces ``placer`` in compiled code, or None where none does
    (several plugins, a filter or grouping, a plugin that needs the view, ``compiled`` off)."""
    kernel = placer.compiled_kernel
    if kernel in _SCORE_KERNELS:
        return Binding(_SCORE_KERNELS[kernel], float(placer.plugins[0].weight), seed_words(0)[:0])
    lean = placer._lean_scorer if placer.compiled else None
    if isinstance(lean, RandomFit) and not placer.monotone:
        weight = float(placer.plugins[0].weight)
        return Binding(RANDOM_FIT, weight, seed_words(int(lean.seed)))
    return None


def message_buffer(n_hosts: int, n_res: int) -> NDArray[np.uint8]:
    """Scratch for random-fit's digest: free capacity, up mask and one request as bytes, padded
    to whole blake2b blocks, then what ``_draws.blake2b_8_resumed`` keeps from one hash to the
    next (the message hashed last, the state before each block, its length)."""
    blocks = _blocks(n_hosts, n_res)
    return np.zeros(blocks * (2 * _BLOCK + 64) + 8, np.uint8)


@numba.njit(cache=True)
def _blocks(n_hosts, n_res):
    """blake2b blocks of random-fit's message for ``n_hosts`` hosts and ``n_res`` resources."""
    return max(1, -(-(8 * n_hosts * n_res + n_hosts + 4 * n_res) // _BLOCK))


@numba.njit(cache=True)
def random_fit_scores(free, up, req, seed, message, out):
    """``RandomFit.score`` of one request ``req`` (R-tuple of float32 values) into ``out`` (H,):
    the same bytes hashed (``free`` (H, R) float64, ``up``, the request as float32), the same
    draws. ``message``: :func:`message_buffer` scratch."""
    n_hosts, n_res = free.shape
    size = _blocks(n_hosts, n_res) * _BLOCK
    previous = message[size : 2 * size]
    chain = message[2 * size : 2 * size + size // 2].view(np.uint64).reshape((size // _BLOCK, 8))
    hashed = message[2 * size + size // 2 : 2 * size + size // 2 + 8].view(np.int64)
    values = message[: 8 * n_hosts * n_res].view(np.float64)
    for h in range(n_hosts):
        for r in range(n_res):
            values[h * n_res + r] = free[h, r]
    k = 8 * n_hosts * n_res
    for h in range(n_hosts):
        message[k + h] = up[h]
    k += n_hosts
    req32 = np.empty(n_res, np.float32)
    for r in range(n_res):
        req32[r] = req[r]
    message[k : k + 4 * n_res] = req32.view(np.uint8)
    digest = blake2b_8_resumed(message[:size], k + 4 * n_res, previous, chain, hashed)
    uniform_draws(seed, digest, out)


@numba.njit(cache=True)
def _request_tuple(request, i, buf):
    """Row ``i`` of ``request`` as an R-tuple of float64, as ``Placer.place`` hands it on."""
    for r in range(R):
        buf[r] = np.float64(request[i, r])
    return to_fixed_tuple(buf, R)


@numba.njit(cache=True)
def _score(kind, capacity, free, req, raw):
    if kind == BEST_FIT:
        best_fit_kernel(capacity, free, req, raw)
    else:
        first_fit_kernel(capacity, free, req, raw)


@numba.njit(cache=True)
def place(binding, capacity, free, up, request, all_or_nothing, hosts, raw, before, buf, open_,
          runs, message, levels):  # fmt: skip
    """``Placer.place`` for the placer ``binding`` stands for: binds ``request`` (n, R) in order
    into ``free``, writing (n,) hosts (-1 unplaced) to ``hosts``. ``raw`` and ``levels`` (H,),
    ``before`` (H, R), ``buf`` (R,), ``open_`` (H,) bool, ``runs`` (n + 1,) and ``message``
    (:func:`message_buffer`) are scratch."""
    bounds = run_starts_into(request, runs) if len(request) > 1 else runs[:0]
    place_runs(binding, capacity, free, up, request, all_or_nothing, hosts, raw, before, buf,
               open_, bounds, message, levels)  # fmt: skip


@numba.njit(cache=True)
def place_runs(binding, capacity, free, up, request, all_or_nothing, hosts, raw, before, buf,
               open_, bounds, message, levels):  # fmt: skip
    """:func:`place` given ``bounds`` = ``run_starts(request)`` (read only when n > 1 and the
    score is monotone)."""
    kind, weight, seed = binding
    n = len(request)
    if kind == RANDOM_FIT:
        _place_random(weight, seed, free, up, request, all_or_nothing, hosts, raw, before, buf,
                      open_, message, levels)  # fmt: skip
        return
    if n == 1:
        req = _request_tuple(request, 0, buf)
        _score(kind, capacity, free, req, raw)
        if fill_run(free, up, req, raw, hosts) == 0:
            hosts[0] = -1
        return
    hosts[:] = -1
    if n == 0:
        return
    if all_or_nothing:
        before[:] = free
    for k in range(len(bounds) - 1):
        i, j = bounds[k], bounds[k + 1]
        req = _request_tuple(request, i, buf)
        _score(kind, capacity, free, req, raw)
        if j - i == 1:
            placed = fill_run(free, up, req, raw, hosts[i:j])
        else:
            placed = fill_run_into(free, up, req, raw, hosts[i:j], open_)
        if placed < j - i and all_or_nothing:
            free[:] = before
            hosts[:] = -1
            return


@numba.njit(cache=True)
def _place_random(weight, seed, free, up, request, all_or_nothing, hosts, raw, before, buf, ok,
                  message, levels):  # fmt: skip
    """Random-fit's binds, one request at a time: where it fits some host, a draw picks one.

    The reference ranks runs of identical requests and skips a run that fits nowhere from the
    start; since free capacity only shrinks within a call and each draw is a function of the
    call's state alone, taking the rows one by one binds the same hosts and leaves the same free
    capacity. With ``all_or_nothing`` a row that fits nowhere undoes the call."""
    n, n_res = request.shape
    if all_or_nothing:
        before[:] = free
    fit = np.empty(n_res)
    for i in range(n):
        req = _request_tuple(request, i, buf)
        for r in range(n_res):
            fit[r] = np.float64(np.float32(req[r]))  # the reference tests room at float32
        if fits_into(free, up, fit, ok) == 0:
            hosts[i] = -1
            if all_or_nothing:
                free[:] = before
                hosts[:n] = -1
                return
            continue
        random_fit_scores(free, up, req, seed, message, raw)
        best = best_by_levels(raw, ok, weight, levels)
        hosts[i] = best
        for r in range(n_res):
            free[best, r] -= req[r]
