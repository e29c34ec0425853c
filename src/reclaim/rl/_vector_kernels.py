"""Compiled kernels of the vectorised TVW-RL environment (``rl.vector``): B episodes of
:class:`reclaim.rl.env.PlacementEnv` (the ``current`` view) stepped in one call.

Every episode follows the single env's step exactly (``tests/rl/test_rl_vector.py`` checks
observations, masks, rewards and ends bit for bit): the replay's clock and queue
(``tvw.replay.Replay`` in the current view), the queue discipline (the subject), the hold action,
the penalties (``rl._kernels.charge_window``, summed in the single env's order) and the
observation (``rl._kernels.observation``).

Per episode b the state is: usage (H, T, R) units and count (H, T) residents per machine and
step (the whole future of every placed workload, as the replay records it), squares (H, T, R) the
residents' squared usage (machine-major, unlike the replay's (T, H, R): a bind writes one
workload's whole future, contiguous this way), host/start (n,), seen (n, R), and the scalars in ``clock`` (now,
charged, arrived, holds, done). Sequence s of episode b is ``seq[b]``; its workloads' rows are
data[doff[s]:], its local row pointers indptr[ioff[s]:ioff[s] + n + 1], its workloads job[joff[s]:].
"""

from __future__ import annotations

import numba
import numpy as np

from reclaim._numba_util import borrow
from reclaim.rl._kernels import charge_window, observation, queue_slot

# clock columns: the step, steps charged, workloads arrived, holds, ended, workloads placed, and
# the first workload not placed (every one before it is)
NOW, CHARGED, ARRIVED, HOLDS, DONE, PLACED, FIRST = range(7)


@numba.njit(cache=True)
def _waiting(clock):
    return clock[ARRIVED] - clock[PLACED]


@numba.njit(cache=True)
def _subject(usage_now, units, demand, host, clock, out):
    """The first waiting workload (index order) that fits some machine, its fit mask in out[:H]
    (out zeroed first); -1 when none. Integer units: free + tolerance >= request is free >=
    request."""
    n_hosts, n_res = usage_now.shape
    out[:] = False
    while clock[FIRST] < clock[ARRIVED] and host[clock[FIRST]] >= 0:
        clock[FIRST] += 1
    for j in range(clock[FIRST], clock[ARRIVED]):
        if host[j] >= 0:
            continue
        some = False
        for m in range(n_hosts):
            ok = True
            for r in range(n_res):
                if units - usage_now[m, r] < demand[j, r]:
                    ok = False
                    break
            out[m] = ok
            some = some or ok
        if some:
            return j
    out[:] = False
    return -1


@numba.njit(cache=True)
def _advance(clock, host, arrival, n):
    """Replay.advance in the current view (call only when not done)."""
    waits = _waiting(clock) > 0 or clock[ARRIVED] >= n
    nxt = clock[NOW] + 1 if waits else arrival[clock[ARRIVED]]
    clock[NOW] = nxt
    while clock[ARRIVED] < n and arrival[clock[ARRIVED]] <= nxt:
        clock[ARRIVED] += 1


@numba.njit(cache=True)
def _done(clock, host, n):
    return clock[ARRIVED] == n and clock[PLACED] == n


@numba.njit(cache=True)
def _charge(stop, clock, ep, units, cost, w, pen):
    """Add the penalties of steps [charged, stop) to pen (4,), component by component
    (``rl._kernels.charge_window`` on the window of the machine-major arrays). ``ep``: the
    episode's state arrays (``step_all``)."""
    usage, count, squares, host, start, length, seen, arrival, _ = ep
    first = clock[CHARGED]
    if stop <= first:
        return True
    if stop > usage.shape[1]:
        return False
    clock[CHARGED] = stop
    pairs, underuse, overs, waiting = charge_window(
        usage[:, first:stop].transpose(1, 0, 2),
        count[:, first:stop].T,
        squares[:, first:stop].transpose(1, 0, 2),
        first,
        units,
        host,
        start,
        length,
        seen,
        arrival,
        cost,
    )
    pen[0] += w[0] * float(pairs // 2)
    pen[1] += underuse
    pen[2] += w[2] * overs
    pen[3] += w[3] * waiting
    return True


@numba.njit(cache=True)
def _settle(clock, ep, units, cost, w, fit, pen, step):
    """Run the clock while no waiting workload fits; once all are placed charge the rest.
    False when the episode outgrows its T steps. ``step`` (4,): scratch."""
    usage, _, _, host, start, length, _, arrival, demand = ep
    n = len(host)
    while True:
        finished = _done(clock, host, n)
        if finished:
            stop = 0
            for j in range(n):
                stop = max(stop, start[j] + length[j])
        else:
            if _subject(usage[:, clock[NOW]], units, demand, host, clock, fit) >= 0:
                return True
            _advance(clock, host, arrival, n)
            if clock[NOW] >= usage.shape[1]:
                return False
            stop = clock[NOW]
        step[:] = 0.0
        if not _charge(stop, clock, ep, units, cost, w, step):
            return False
        for k in range(4):
            pen[k] += step[k]
        if finished:
            return True


@numba.njit(cache=True)
def _queue(clock, host, subject, head):
    """The observation's queue into head (slots,): the subject, then the other waiting workloads
    in index order (-1 empty); returns the backlog fraction (not clipped)."""
    slots = len(head)
    head[:] = -1
    filled = 0
    if subject >= 0 and slots > 0:
        head[0] = subject
        filled = 1
    waiting = 0
    for j in range(clock[FIRST], clock[ARRIVED]):
        if host[j] >= 0:
            continue
        waiting += 1
        if j != subject and filled < slots:
            head[filled] = j
            filled += 1
    return max(waiting - slots, 0) / max(len(host), 1)


@numba.njit(cache=True)
def _observe(
    clock, usage, host, start, data, indptr, table, ages, demand, cfg, subject, uniform, out,
    compact, levels, tail, head, label, rows,
):  # fmt: skip
    """Write the episode's observation into out (D,) as PlacementEnv.observe does; ``cfg``: the
    env's (units, history, classes, queue images). ``uniform``: the one label of every workload
    of the sequence at every age (0: they differ). ``compact`` (uniform labels and queue images
    only): write its row levels and backlog into ``levels`` and tail[0] instead (``rl.fused``).
    Scratch: head (queue slots,), label (n,) and rows (H * R * h,)."""
    units, history, classes, profile = cfg
    n = len(host)
    now = clock[NOW]
    backlog = _queue(clock, host, subject, head)
    if compact:
        tail[0] = _levels_uniform(usage, now, data, indptr, units, history, head, backlog, levels)
        return
    if uniform > 0:
        value = np.float32(uniform / classes)
        _observe_uniform(usage, now, data, indptr, value, units, history, demand, head, profile,
                         backlog, out, rows)  # fmt: skip
        return
    label = label[:n]
    for j in range(n):
        if ages == 1 or start[j] < 0:
            label[j] = table[j * ages]
        else:
            label[j] = table[j * ages + min(now - start[j], ages - 1)]
    machines = usage.shape[0]
    observation(data, indptr, host, start, label, classes, now, machines, history, units, demand,
                head, profile, backlog, out)  # fmt: skip


@numba.njit(cache=True)
def _machine_levels(usage, now, units, history, levels):
    """Each machine image row's level (m, r, k), min(usage, C) at step now - h + 1 + k (0
    before step 0), into levels[:H * R * h]; returns H * R * h."""
    n_hosts, _, n_res = usage.shape
    oldest = now - history + 1
    for m in range(n_hosts):
        for r in range(n_res):
            for k in range(history):
                t = oldest + k
                level = 0 if t < 0 else min(np.int64(usage[m, t, r]), units)
                levels[(m * n_res + r) * history + k] = level
    return n_hosts * n_res * history


@numba.njit(cache=True)
def _observe_uniform(usage, now, data, indptr, value, units, history, demand, head, profile,
                     backlog, out, levels):  # fmt: skip
    """``_observe`` when every label has pixel ``value``: a machine image's row is then its
    recorded usage at that step, min(usage, C) pixels of the one label from the left (the
    residents' stacking order no longer shows), so each pixel is written once and no resident is
    visited. levels (H * R * h,): scratch."""
    base = _machine_levels(usage, now, units, history, levels) * units
    for row in range(len(levels)):
        at = row * units
        for c in range(levels[row]):
            out[at + c] = value
        for c in range(levels[row], units):
            out[at + c] = 0.0
    out[base:] = 0.0
    for s in range(len(head)):
        if head[s] >= 0:
            queue_slot(data, indptr, head[s], s, base, value, units, history, demand, profile, out)
    out[len(out) - 1] = np.float32(min(backlog, 1.0))


@numba.njit(cache=True)
def _levels_uniform(usage, now, data, indptr, units, history, head, backlog, levels):
    """The compact observation (``rl.fused``) of ``_observe_uniform`` with queue images: each
    image row's level, min(units, C) pixels filled from the left, into levels (rows,) int8:
    machine rows (m, r, k) then slot rows (s, r, k), in the dense observation's order. Returns
    the backlog (the observation's last entry)."""
    n_res = usage.shape[2]
    base = _machine_levels(usage, now, units, history, levels)
    levels[base:] = 0
    for s in range(len(head)):
        j = head[s]
        if j < 0:
            continue
        at = base + s * n_res * history
        for k in range(min(indptr[j + 1] - indptr[j], history)):
            for r in range(n_res):
                levels[at + r * history + k] = min(data[indptr[j] + k, r], units)
    return np.float32(min(backlog, 1.0))


@numba.njit(cache=True)
def _bind(usage, count, squares, now, data, lo, k):
    """Add one workload's k steps of usage, data[lo:lo + k] (k, R), to its machine's usage and
    squares (T, R) and count (T,) from step now. Speed trick: flat loops over the contiguous
    (step, resource) runs, which LLVM vectorises (12 % of a step as a loop per step and
    resource); integer adds, so the same values."""
    n = k * data.shape[1]
    u = usage[now : now + k].reshape(n)
    sq = squares[now : now + k].reshape(n)
    d = data[lo : lo + k].reshape(n)
    for i in range(n):
        v = np.int64(d[i])
        u[i] += v
        sq[i] += v * v
    c = count[now : now + k]
    for t in range(k):
        c[t] += 1


@numba.njit(cache=True)
def _mask(clock, usage, units, demand, host, hold, limit, fit, out):
    """out (A,): the subject's fit mask, then hold; returns the subject."""
    n_hosts = usage.shape[0]
    subject = -1
    if not _done(clock, host, len(host)):
        subject = _subject(usage[:, clock[NOW]], units, demand, host, clock, fit)
    for m in range(n_hosts):
        out[m] = fit[m] if subject >= 0 else False
    if hold:
        out[n_hosts] = subject >= 0 and clock[HOLDS] < limit
    return subject


@numba.njit(cache=True)
def step_all(
    actions,
    reset,
    seq,
    doff,
    ioff,
    joff,
    data,
    indptr,
    arrival_all,
    length_all,
    demand_all,
    table_all,
    ages,
    uniform,
    njobs,
    limits,
    clock,
    usage,
    count,
    squares,
    host,
    start,
    seen,
    cost,
    w,
    units,
    history,
    classes,
    profile,
    hold,
    obs,
    mask,
    reward,
    done,
    truncated,
    compact,
    levels,
    tail,
    work,
):
    """Step (or, with ``reset``, start) every episode b not done: actions (B,) as
    PlacementEnv.step takes them. Writes obs (B, D) (``compact``: levels (B, rows) and tail
    (B,) instead), mask (B, A), reward, done, truncated (B,). ``work``: scratch, (H,) bool,
    (3, 4) float64, and int64 (queue slots,), (n,) and (H * R * h,). Returns -1, or the first episode
    that outgrew its T steps.

    Speed trick: every array reaches the functions below borrowed (``_numba_util.borrow``): the
    atomic reference counting of a dozen owned arrays per call took 13 % of a step. The owners
    are this call's arguments, alive until it returns."""
    n_hosts = usage.shape[1]
    cfg = (units, history, classes, profile)
    fit, sums = borrow(work[0]), borrow(work[1])
    head, label, rows = borrow(work[2]), borrow(work[3]), borrow(work[4])
    pen, rest, step = sums[0], sums[1], sums[2]
    cost, w = borrow(cost), borrow(w)
    for b in range(len(actions)):
        if not reset and clock[b, DONE]:
            reward[b] = 0.0
            continue
        s = seq[b]
        n = njobs[s]
        lo, hi = joff[s], joff[s] + n
        arrival, length = borrow(arrival_all[lo:hi]), borrow(length_all[lo:hi])
        demand = borrow(demand_all[lo:hi])
        table = borrow(table_all[lo * ages : hi * ages])
        dat = borrow(data[doff[s] : doff[s + 1]])
        ptr = borrow(indptr[ioff[s] : ioff[s] + n + 1])
        c = borrow(clock[b])
        h, st, sn = borrow(host[b, :n]), borrow(start[b, :n]), borrow(seen[b, :n])
        u, cnt, sq = borrow(usage[b]), borrow(count[b]), borrow(squares[b])
        mask_b = borrow(mask[b])
        pen[:] = 0.0
        ep = (u, cnt, sq, h, st, length, sn, arrival, demand)
        if reset:
            # Speed trick: only the steps written so far are cleared (binds write [start, end),
            # and a fresh env has none), so a new env's untouched pages are never faulted in
            used = 0
            for j in range(n):
                if h[j] >= 0:
                    used = max(used, st[j] + length[j])
            u[:, :used] = 0
            cnt[:, :used] = 0
            sq[:, :used] = 0
            h[:] = -1
            st[:] = -1
            sn[:] = False
            c[:] = 0
            while c[ARRIVED] < n and arrival[c[ARRIVED]] <= 0:
                c[ARRIVED] += 1
            if not _settle(c, ep, units, cost, w, fit, pen, step):
                return b
            reward[b] = 0.0
            truncated[b] = False
        else:
            action = actions[b]
            subject = _mask(c, u, units, demand, h, hold, limits[b], fit, mask_b)
            if 0 <= action < n_hosts and mask_b[action]:
                now = c[NOW]
                k = ptr[subject + 1] - ptr[subject]
                if now + k > u.shape[1]:
                    return b
                _bind(u[action], cnt[action], sq[action], now, dat, ptr[subject], k)
                h[subject] = action
                c[PLACED] += 1
                st[subject] = now
                if not _settle(c, ep, units, cost, w, fit, pen, step):
                    return b
            else:
                c[HOLDS] += 1
                _advance(c, h, arrival, n)
                if c[NOW] >= u.shape[1]:
                    return b
                if not _charge(c[NOW], c, ep, units, cost, w, pen):
                    return b
                rest[:] = 0.0
                if not _settle(c, ep, units, cost, w, fit, rest, step):
                    return b
                for k in range(4):
                    pen[k] += rest[k]
            reward[b] = -((((0.0 + pen[0]) + pen[1]) + pen[2]) + pen[3])
            truncated[b] = (not _done(c, h, n)) and c[HOLDS] > limits[b]
        finished = _done(c, h, n)
        done[b] = finished
        c[DONE] = finished or truncated[b]
        subject = _mask(c, u, units, demand, h, hold, limits[b], fit, mask_b)
        _observe(c, u, h, st, dat, ptr, table, ages, demand, cfg, subject, uniform[s],
                 borrow(obs[b]), compact, borrow(levels[b]), borrow(tail[b : b + 1]), head, label,
                 rows)  # fmt: skip
    return -1
