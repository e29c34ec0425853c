"""Compiled kernels of the vectorised TVW-RL environment (``rl.vector``): B episodes of
:class:`reclaim.rl.env.PlacementEnv` (the ``current`` view) stepped in one call.

Every episode follows the single env's step exactly (``tests/rl/test_rl_vector.py`` checks
observations, masks, rewards and ends bit for bit): the replay's clock and queue
(``tvw.replay.Replay`` in the current view), the queue discipline (the subject), the hold action,
the penalties (the counts of ``rl._kernels.charge_window``, summed in the single env's order)
and the observation (``rl._kernels.observation``).

Per episode b the state is: usage (H, T, R) units per machine and step (the whole future of
every placed workload, as the replay records it; machine-major, unlike the replay's (T, H, R): a
bind writes one workload's whole future, contiguous this way), used (T,) a bitmask of the machines
with a resident at each step, pairs (T, R) twice the residents' pairwise inner products per step
and resource summed over the machines (kept up to date at each bind, so the contention penalty is
a sum over the window, and no squared usage is stored), host/start (n,), seen (n, R), fits (H,) the
next decision's fit mask, and the scalars in ``clock``. Sequence s of episode b is ``seq[b]``; its
workloads' rows are data[doff[s]:], its local row pointers indptr[ioff[s]:ioff[s] + n + 1], its
workloads job[joff[s]:].
"""

from __future__ import annotations

import numba
import numpy as np

from reclaim._numba_util import borrow
from reclaim.rl._kernels import observation, queue_slot
from reclaim.tvw._kernels import background_units

# clock columns: the step, steps charged, workloads arrived, holds, ended, workloads placed, the
# first workload not placed (every one before it is), the subject of the next decision (-1
# none), and the steps the episode's binds wrote ([0, written): what a reset clears)
CLOCK = NOW, CHARGED, ARRIVED, HOLDS, DONE, PLACED, FIRST, SUBJECT, WRITTEN = range(9)


@numba.njit(cache=True)
def _waiting(clock):
    return clock[ARRIVED] - clock[PLACED]


@numba.njit(cache=True)
def _subject(usage, now, units, demand, host, clock, out):
    """The first waiting workload (index order) that fits some machine at step ``now`` (usage
    (H, T, R)), its fit mask in out[:H] (out zeroed first); -1 when none. Integer units: free +
    tolerance >= request is free >= request."""
    n_hosts, n_res = usage.shape[0], usage.shape[2]
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
                if units - usage[m, now, r] < demand[j, r]:
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
    """Add the penalties of steps [charged, stop) to pen (4,), component by component, with the
    counts of ``rl._kernels.charge_window`` (integers, so the same values) added as the single
    env adds them. ``ep``: the episode's state arrays (``step_all``).

    Speed tricks (the window took 30 % of a step): the pairs are summed off ``pairs`` (kept per
    step at each bind) instead of from the squared usage of every machine; the under-use is
    summed as integer costs (no histogram: a store per element) over the machines the ``used``
    bitmask names; only residents of machines above capacity in the window are scanned for first
    overshoots; the waiting count starts at the first workload not placed."""
    usage, used, pairs, host, start, length, seen, arrival, _ = ep
    first = clock[CHARGED]
    if stop <= first:
        return True
    if stop > usage.shape[1]:
        return False
    clock[CHARGED] = stop
    n_hosts, n_res = usage.shape[0], usage.shape[2]
    twice = 0
    flat = pairs.reshape(pairs.size)
    for i in range(first * n_res, stop * n_res):
        twice += np.int64(flat[i])
    under = 0
    over = np.int64(0)  # bitmask: machines above capacity somewhere in the window
    for m in range(n_hosts):
        bit = np.int64(1) << m
        for t in range(first, stop):
            if used[t] & bit:
                for r in range(n_res):
                    s = np.int64(usage[m, t, r])
                    under += cost[max(units - s, 0)]
                    if s > units:
                        over |= bit
    overs = 0
    if over != 0:
        for j in range(len(host)):
            m = host[j]
            if m < 0 or not (over >> m) & 1:
                continue
            end = start[j] + length[j]
            if start[j] >= stop or end <= first:
                continue
            a, b = max(start[j], first), min(end, stop)
            for r in range(n_res):
                if seen[j, r]:
                    continue
                for t in range(a, b):
                    if usage[m, t, r] > units:
                        overs += 1
                        seen[j, r] = True
                        break
    # workload-steps waiting in the window: the overlap of [arrival, start) with it. Every
    # workload before the first not placed started at a step already charged (binds happen at
    # the step charged up to), so it adds nothing: start from there.
    waiting = 0
    for j in range(clock[FIRST], len(arrival)):
        if arrival[j] >= stop:
            break  # sorted: no later workload has arrived either
        began = stop if start[j] < 0 else min(start[j], stop)
        waiting += max(began - max(arrival[j], first), 0)
    pen[0] += w[0] * float(twice // 2)
    pen[1] += float(under)  # integers below 2**53 (VectorEnv checks): the reference's sum
    pen[2] += w[2] * overs
    pen[3] += w[3] * waiting
    return True


@numba.njit(cache=True)
def _settle(clock, ep, units, cost, w, fit, pen, step):
    """Run the clock while no waiting workload fits; once all are placed charge the rest.
    Leaves the next decision's subject in clock[SUBJECT] (-1 once all are placed) and its fit
    mask in fit (H,). False when the episode outgrows its T steps. ``step`` (4,): scratch."""
    usage, _, _, host, start, length, _, arrival, demand = ep
    n = len(host)
    clock[SUBJECT] = -1
    while True:
        finished = _done(clock, host, n)
        if finished:
            stop = 0
            for j in range(n):
                stop = max(stop, start[j] + length[j])
        else:
            subject = _subject(usage, clock[NOW], units, demand, host, clock, fit)
            if subject >= 0:
                clock[SUBJECT] = subject
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
    compact, levels, tail, head, label, rows, key, background,
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
                head, profile, backlog, key, background, out)  # fmt: skip


@numba.njit(cache=True)
def _machine_levels(usage, now, units, history, levels):
    """Each machine image row's level (m, r, k), min(usage, C) at step now - h + 1 + k (0
    before step 0), into levels[:H * R * h]; returns H * R * h. usage (H, T, R)."""
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
def _bind(usage, used, pairs, machine, now, data, lo, k):
    """Add one workload's k steps of usage, data[lo:lo + k] (k, R), to its machine's usage (T, R)
    from step now; its contention to the episode's pairs (T, R) (with s the machine's usage
    before and d the workload's, twice the pairwise products gain 2 s d); mark the machine
    used (T,) over those steps. Speed trick: flat loops over the contiguous (step, resource)
    runs, which LLVM vectorises; integer adds, so the same values in any order."""
    n = k * data.shape[1]
    u = usage[now : now + k].reshape(n)
    p = pairs[now : now + k].reshape(n)
    d = data[lo : lo + k].reshape(n)
    for i in range(n):
        v = np.int64(d[i])
        s = np.int64(u[i])
        p[i] += 2 * s * v
        u[i] = s + v
    bit = np.int64(1) << machine
    on = used[now : now + k]
    for t in range(k):
        on[t] |= bit


@numba.njit(cache=True)
def _fill_background(usage, key, level):
    """usage (H, T, R) set to the machines' background alone (``tvw._kernels.background_units``),
    the state before anything is placed."""
    for m in range(usage.shape[0]):
        for t in range(usage.shape[1]):
            for r in range(usage.shape[2]):
                usage[m, t, r] = background_units(key, t, m, r, level)


@numba.njit(cache=True)
def _mask(clock, fit, hold, limit, out):
    """out (A,): the subject's fit mask (``_settle`` left both), then hold."""
    n_hosts = len(fit)
    subject = clock[SUBJECT]
    for m in range(n_hosts):
        out[m] = fit[m] if subject >= 0 else False
    if hold:
        out[n_hosts] = subject >= 0 and clock[HOLDS] < limit


@numba.njit(cache=True)
def _step_one(b, reset, action, seqs, state, outs, cfg, cost, w, scratch):
    """Step (or, with ``reset``, start) episode b (``step_all``'s arguments, grouped and
    borrowed; scratch: this thread's). False when it outgrew its T steps."""
    seq, doff, ioff, joff, data, indptr, arrival_all, length_all, demand_all = seqs[:9]
    table_all, ages, uniform, njobs, limits, keys = seqs[9:]
    clock, usage, used, pairs, host, start, seen, fits = state
    obs, mask, reward, done, truncated, levels, tail = outs
    units, history, classes, profile, hold, compact, background = cfg
    sums, head, label, rows = scratch
    pen, rest, step = sums[0], sums[1], sums[2]
    n_hosts = usage.shape[1]
    if not reset and clock[b, DONE]:
        reward[b] = 0.0
        return True
    s = seq[b]
    n = njobs[s]
    lo, hi = joff[s], joff[s] + n
    arrival, length = arrival_all[lo:hi], length_all[lo:hi]
    demand = demand_all[lo:hi]
    table = table_all[lo * ages : hi * ages]
    dat = data[doff[s] : doff[s + 1]]
    ptr = indptr[ioff[s] : ioff[s] + n + 1]
    c = clock[b]
    h, st, sn = host[b, :n], start[b, :n], seen[b, :n]
    u, on, pr = usage[b], used[b], pairs[b]
    fit = fits[b]  # the subject's fit mask, as the last step's _settle left it
    mask_b = mask[b]
    pen[:] = 0.0
    ep = (u, on, pr, h, st, length, sn, arrival, demand)
    if reset:
        # Speed trick: only the steps written so far are cleared (binds write [start, end),
        # and a fresh env has none), so a new env's untouched pages are never faulted in
        written = c[WRITTEN]
        if background > 0:
            _fill_background(u, keys[s], background)
        else:
            u[:, :written] = 0
        on[:written] = 0
        pr[:written] = 0
        h[:] = -1
        st[:] = -1
        sn[:] = False
        c[:] = 0
        while c[ARRIVED] < n and arrival[c[ARRIVED]] <= 0:
            c[ARRIVED] += 1
        if not _settle(c, ep, units, cost, w, fit, pen, step):
            return False
        reward[b] = 0.0
        truncated[b] = False
    else:
        # Speed trick: the subject and its fit are the last step's (kept in clock and fits), not
        # searched for again (each search twice more per step, as the single env's mask is)
        subject = c[SUBJECT]
        if 0 <= action < n_hosts and subject >= 0 and fit[action]:
            now = c[NOW]
            k = ptr[subject + 1] - ptr[subject]
            if now + k > u.shape[1]:
                return False
            _bind(u[action], on, pr, action, now, dat, ptr[subject], k)
            c[WRITTEN] = max(c[WRITTEN], now + k)
            h[subject] = action
            c[PLACED] += 1
            st[subject] = now
            if not _settle(c, ep, units, cost, w, fit, pen, step):
                return False
        else:
            c[HOLDS] += 1
            _advance(c, h, arrival, n)
            if c[NOW] >= u.shape[1]:
                return False
            if not _charge(c[NOW], c, ep, units, cost, w, pen):
                return False
            rest[:] = 0.0
            if not _settle(c, ep, units, cost, w, fit, rest, step):
                return False
            for k in range(4):
                pen[k] += rest[k]
        reward[b] = -((((0.0 + pen[0]) + pen[1]) + pen[2]) + pen[3])
        truncated[b] = (not _done(c, h, n)) and c[HOLDS] > limits[b]
    finished = _done(c, h, n)
    done[b] = finished
    c[DONE] = finished or truncated[b]
    _mask(c, fit, hold, limits[b], mask_b)
    subject = c[SUBJECT]
    _observe(c, u, h, st, dat, ptr, table, ages, demand, cfg[:4], subject, uniform[s], obs[b],
             compact, levels[b], tail[b : b + 1], head, label, rows, keys[s],
             background)  # fmt: skip
    return True


@numba.njit(cache=True, inline="always")
def _borrowed(seqs, state, outs, cost, w):
    """Every array of ``step_all``'s groups borrowed (``_numba_util.borrow``)."""
    seq, doff, ioff, joff, data, indptr, arrival_all, length_all, demand_all = seqs[:9]
    table_all, ages, uniform, njobs, limits, keys = seqs[9:]
    seqs = (
        borrow(seq), borrow(doff), borrow(ioff), borrow(joff), borrow(data), borrow(indptr),
        borrow(arrival_all), borrow(length_all), borrow(demand_all), borrow(table_all), ages,
        borrow(uniform), borrow(njobs), borrow(limits), borrow(keys),
    )  # fmt: skip
    clock, usage, used, pairs, host, start, seen, fits = state
    state = (
        borrow(clock), borrow(usage), borrow(used), borrow(pairs), borrow(host),
        borrow(start), borrow(seen), borrow(fits),
    )  # fmt: skip
    obs, mask, reward, done, truncated, levels, tail = outs
    outs = (
        borrow(obs), borrow(mask), borrow(reward), borrow(done), borrow(truncated),
        borrow(levels), borrow(tail),
    )  # fmt: skip
    return seqs, state, outs, borrow(cost), borrow(w)


@numba.njit(cache=True, inline="always")
def _scratch(work, thread):
    """Thread ``thread``'s scratch of ``work`` (``step_all``), borrowed."""
    return (
        borrow(work[0][thread]), borrow(work[1][thread]), borrow(work[2][thread]),
        borrow(work[3][thread]),
    )  # fmt: skip


@numba.njit(cache=True)
def step_all(actions, reset, seqs, state, outs, cfg, cost, w, work):
    """Step (or, with ``reset``, start) every episode b not done: actions (B,) as
    PlacementEnv.step takes them. ``seqs``: the sequences (seq, doff, ioff, joff, data, indptr,
    arrival, length, demand, table, ages, uniform, njobs, limits, keys: their noise keys);
    ``state``: the episodes' (clock, usage, used, pairs, host, start, seen, fits (B, H) the
    subject's fit); ``outs``: (obs (B, D), mask (B, A), reward, done, truncated (B,), levels
    (B, rows), tail (B,)), written (``compact``: levels and tail instead of obs); ``cfg``:
    (units, history, classes, profile, hold, compact, background). ``work``:
    scratch per thread, (P, 3, 4) float64, and int64 (P, queue slots), (P, n) and
    (P, H * R * h). Returns -1, or the first episode that outgrew its T steps.

    Speed trick: every array reaches the functions below borrowed (``_numba_util.borrow``): the
    atomic reference counting of a dozen owned arrays per call took 13 % of a step. The owners
    are this call's arguments, alive until it returns."""
    seqs, state, outs, cost, w = _borrowed(seqs, state, outs, cost, w)
    scratch = _scratch(work, 0)
    for b in range(len(actions)):
        if not _step_one(b, reset, actions[b], seqs, state, outs, cfg, cost, w, scratch):
            return b
    return -1


@numba.njit(cache=True, parallel=True)
def step_all_parallel(actions, reset, seqs, state, outs, cfg, cost, w, work):
    """``step_all`` with the episodes shared among numba's threads (each its own scratch, row
    ``numba.get_thread_id()`` of ``work``): every episode is stepped as the serial call steps it,
    so the results are the same bits. Every episode is stepped even past one that outgrew its
    steps; returns the first such (or -1)."""
    seqs, state, outs, cost, w = _borrowed(seqs, state, outs, cost, w)
    bad = np.zeros(len(actions), np.bool_)
    for b in numba.prange(len(actions)):
        scratch = _scratch(work, numba.get_thread_id())
        bad[b] = not _step_one(b, reset, actions[b], seqs, state, outs, cfg, cost, w, scratch)
    for b in range(len(actions)):
        if bad[b]:
            return b
    return -1
