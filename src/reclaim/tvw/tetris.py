"""Tetris (Grandl et al. 2014) as Tetris defines it, on the TVW replay: it chooses the workload too.

At every step, while some waiting workload fits some machine, Tetris scores every (waiting
workload, machine it fits) pair and binds the best one:

- alignment a(w, m): the dot product of the workload's request and the machine's free resources,
  both as shares of the machine's capacity (the ``tetris`` placement plugin's score);
- remaining-time term: Tetris prefers the job with the least remaining work (shortest remaining
  time first); a TVW workload is one task, not started, so its remaining work p(w) is all of it:
  its duration (steps) x the sum over resources of its request / capacity (Tetris assumes
  complete knowledge of durations and requests);
- score = a - eps x p, eps = m x mean(a) / mean(p) over the pairs scored, Tetris's scaling that
  makes the two terms comparable; ``m`` (Tetris's knob) is 1 by default: equal weight;
- the fairness knob is off (TVW-RL's comparison turns it off): no job is favoured for its share.

Ties go to the earliest workload (arrival order), then the lowest machine. The request is the
workload's peak in the ``peak`` view (the paper's Tetris), so machines are never over-committed.
A workload that fits nowhere is passed by the others (``tvw.evaluate``'s queue discipline).
"""

from __future__ import annotations

import numpy as np

from reclaim.placement.framework import CycleState, fits
from reclaim.tvw.replay import Replay, ReplayResult
from reclaim.tvw.scenario import ScenarioSpec, Sequence


def scores(
    capacity: np.ndarray,
    free: np.ndarray,
    request: np.ndarray,
    duration: np.ndarray,
    feasible: np.ndarray,
    m: float = 1.0,
) -> np.ndarray:
    """(B, H) Tetris's score of each waiting workload (rows: request (B, R), duration (B,) steps)
    on each machine (free (H, R), capacity (H, R)); -inf where ``feasible`` (B, H) is False."""
    share = request.astype(np.float64) / capacity[0]  # identical machines
    free_share = np.divide(free, capacity, out=np.zeros_like(free), where=capacity > 0)
    align = share @ free_share.T  # (B, H)
    work = duration.astype(np.float64) * share.sum(axis=1)  # (B,) remaining work
    rows = feasible.any(axis=1)
    mean_a = align[feasible].mean() if feasible.any() else 0.0
    mean_p = work[rows].mean() if rows.any() else 0.0
    eps = m * mean_a / mean_p if mean_p > 0 else 0.0
    return np.where(feasible, align - eps * work[:, None], -np.inf)


def run_tetris(
    sequence: Sequence, spec: ScenarioSpec, view: str = "peak", m: float = 1.0
) -> ReplayResult:
    """Replay ``sequence`` with Tetris choosing, at every step, the best (workload, machine) pair
    over all waiting workloads until none fits (module docstring)."""
    replay = Replay.of(sequence, spec, view)
    lengths = sequence.usage.lengths
    while True:
        while replay.queue:
            jobs = np.asarray(replay.queue, np.int64)
            free, request = replay.free(), replay.demand(jobs)
            feasible = fits(CycleState(replay.capacity_, free, replay.up_, request))
            if not feasible.any():
                break
            score = scores(replay.capacity_, free, request, lengths[jobs], feasible, m)
            b, host = np.unravel_index(int(np.argmax(score)), score.shape)  # ties: first
            replay.bind(int(jobs[b]), int(host))
        if not replay.advance():
            return replay.result()
