"""Compiled kernel of the shaping paper's synthetic usage curves (see ``paper_world.py``).

One curve per application and resource, one value per simulated second, as the paper's generator
makes it (fraPace/cluster-scheduler-simulator, ``TraceAllZoeWLGenerator.scala``, commit
b0fdf98, ``generateResourceUtilization``): a random walk whose steps are N(0, 1) x Bernoulli(0.01),
smoothed by a 10-point moving average, spread over [0, 1], then scaled by target / mean with
clipping to [0, 1] until its mean is within 0.001 of the target. Only the peak of each ``period``
seconds is kept: that is all the paper's simulator reads of it (the OOM check and the oracle look
at the peak of the past or next 60 s, the predictor at one peak per 60 s), and the per-second curve
of the paper's workload would be 19 GB.
"""

from __future__ import annotations

import numba
import numpy as np

SMOOTHING = 10  # points of the moving average
STEP_PROBABILITY = 0.01  # Bernoulli probability of a step in a second
MAX_ROUNDS = 10_000  # scaling rounds before a curve is given up and drawn anew
#: Curves drawn before the last one is kept however far its mean is from the target. The paper's
#: generator draws forever, and never ends where no curve can reach the target (a curve of a few
#: seconds cannot average 0.999 while its lowest point is 0).
MAX_DRAWS = 100


@numba.njit(cache=True)
def _walk(rng, n, out):
    """A smoothed random walk of ``n`` seconds into ``out[:n]``; False if it never moved.

    Steps land at geometric gaps (one Bernoulli(0.01) trial per second, drawn by gap: the same
    law at a hundredth of the draws). The moving average is centred and zero-padded, as a
    same-length convolution is.
    """
    walk = np.zeros(n)
    moved = False
    t = 0  # walk[0] = 0: a cumulative sum with a leading 0; trials at seconds 1 .. n-1
    while True:
        t += rng.geometric(STEP_PROBABILITY)
        if t >= n:
            break
        walk[t] = rng.standard_normal()
        moved = True
    for i in range(1, n):
        walk[i] += walk[i - 1]
    half = SMOOTHING // 2
    acc = 0.0
    for i in range(min(n, SMOOTHING - half)):
        acc += walk[i]
    for i in range(n):
        out[i] = acc / SMOOTHING
        leave, enter = i - half, i + SMOOTHING - half
        if leave >= 0:
            acc -= walk[leave]
        if enter < n:
            acc += walk[enter]
    return moved


@numba.njit(cache=True)
def _curve(rng, n, target, out):
    """The paper's curve of ``n`` seconds with mean ``target`` into ``out[:n]``."""
    for _ in range(MAX_DRAWS):
        if not _walk(rng, n, out):
            continue  # a walk that never moved has no span: the paper's loop draws anew
        lo, hi = out[:n].min(), out[:n].max()
        span = hi - lo
        shift = -lo / span if lo < 0 else 0.0
        total = 0.0
        for i in range(n):
            out[i] = out[i] / span + shift
            total += out[i]
        mean = total / n
        goal = round(target * 1000)
        rounds = 0
        while abs(goal - round(mean * 1000)) > 1 and rounds < MAX_ROUNDS:
            ratio = target / mean
            total = 0.0
            for i in range(n):
                v = out[i] * ratio
                out[i] = 1.0 if v > 1.0 else (0.0 if v < 0.0 else v)
                total += out[i]
            before, mean = mean, total / n
            rounds = MAX_ROUNDS if mean == before else rounds + 1
        if abs(goal - round(mean * 1000)) <= 1:
            return
    if not np.isfinite(out[:n]).all() or out[:n].max() == out[:n].min():
        out[:n] = target  # no draw moved: the curve is flat at its target


@numba.njit(cache=True)
def peak_curves(rng, durations, targets, period, indptr, out):
    """Per application ``a`` in turn: curves of ``int(durations[a])`` seconds for each resource
    ``r`` with means ``targets[a, r]``, drawn from the generator ``rng``, reduced to the peak of every
    ``period`` seconds into ``out[indptr[a]:indptr[a+1], r]``.

    A curve shorter than 2 s cannot move; it is constant at its target.
    """
    longest = 2
    for a in range(len(durations)):
        longest = max(longest, int(durations[a]))
    buf = np.empty(longest)
    for a in range(len(durations)):
        n = int(durations[a])
        first = indptr[a]
        for r in range(targets.shape[1]):
            if n < 2:
                out[first, r] = targets[a, r]
                continue
            _curve(rng, n, targets[a, r], buf)
            k = first
            for s in range(0, n, period):
                peak = 0.0
                for i in range(s, min(s + period, n)):
                    if buf[i] > peak:
                        peak = buf[i]
                out[k, r] = peak
                k += 1
