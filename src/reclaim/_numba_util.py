"""Helpers shared by the numba kernels: arrays passed down without reference counting, short
runs added as vectors, a radix sort, and a kernel run serially or on several threads."""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic


@intrinsic
def _pointer(typingctx, address, like):
    """The integer ``address`` as a pointer to the dtype of the array ``like`` (for :func:`borrow`)."""
    sig = types.CPointer(like.dtype)(types.uintp, like)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

    return sig, codegen


def _lanes(context, builder, aryty, ary, offset, size):
    """(a pointer to the vector of ``size`` bytes at ary[offset], its type); ary a C-contiguous
    array of float32 or float64."""
    data = context.make_array(aryty)(context, builder, ary).data
    vector = ir.VectorType(context.get_value_type(aryty.dtype), 8 * size // aryty.dtype.bitwidth)
    return builder.bitcast(builder.gep(data, [offset]), vector.as_pointer()), vector


def _size(size) -> int:
    """The literal byte count of a vector intrinsic's last argument."""
    if not isinstance(size, types.IntegerLiteral) or size.literal_value not in (8, 16, 32, 64):
        raise numba.core.errors.TypingError("the vector's size: a literal 8, 16, 32 or 64 bytes")
    return size.literal_value


@intrinsic
def add_lanes(typingctx, dst, doff, src, soff, size):
    """dst[doff : doff + L] += src[soff : soff + L], L the elements in ``size`` bytes (a literal
    8, 16, 32 or 64: 16 float32 in 64), as one vector add: the same IEEE add in each lane as a
    loop's.

    Why: LLVM does not vectorise such a loop of 20 elements in the kernels (it cannot rule out
    that dst and src overlap, and its vector loop wants 64 iterations), so a row of a table
    added into an accumulator ran as 20 scalar adds (``rl.fused``). The caller keeps both runs
    inside their arrays."""
    width = _size(size)
    sig = types.void(dst, types.intp, src, types.intp, size)

    def codegen(context, builder, signature, args):
        target, vector = _lanes(context, builder, signature.args[0], args[0], args[1], width)
        source, _ = _lanes(context, builder, signature.args[2], args[2], args[3], width)
        align = signature.args[0].dtype.bitwidth // 8
        total = builder.fadd(
            builder.load(target, typ=vector, align=align),
            builder.load(source, typ=vector, align=align),
        )
        builder.store(total, target, align=align)
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def sub_scaled_lanes(typingctx, dst, doff, scale, src, soff, size):
    """dst[doff : doff + L] -= scale * src[soff : soff + L] (:func:`add_lanes`' L): in each lane
    a multiply then a subtract, rounded each (no fused multiply-add), as a loop's."""
    width = _size(size)
    sig = types.void(dst, types.intp, dst.dtype, src, types.intp, size)

    def codegen(context, builder, signature, args):
        target, vector = _lanes(context, builder, signature.args[0], args[0], args[1], width)
        source, _ = _lanes(context, builder, signature.args[3], args[3], args[4], width)
        align = signature.args[0].dtype.bitwidth // 8
        scale = ir.Constant(vector, None)
        for lane in range(vector.count):  # the scale in every lane
            scale = builder.insert_element(scale, args[2], ir.IntType(32)(lane))
        step = builder.fmul(scale, builder.load(source, typ=vector, align=align))
        before = builder.load(target, typ=vector, align=align)
        builder.store(builder.fsub(before, step), target, align=align)
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(cache=True, inline="always")
def add_run(dst, doff, src, soff, n):
    """dst[doff : doff + n] += src[soff : soff + n] (float32 or float64 arrays): as vectors when
    n is 20 (the TVW-RL network's hidden units: 16 + 4 float32, 8 + 8 + 4 float64), else element
    by element. Straight-line on purpose: vector adds whose offsets came out of a loop or a
    chain of tests ran three times slower (the rows of ``rl.fused``)."""
    if n == 20 and dst.itemsize == 4:
        add_lanes(dst, doff, src, soff, 64)
        add_lanes(dst, doff + 16, src, soff + 16, 16)
    elif n == 20 and dst.itemsize == 8:
        add_lanes(dst, doff, src, soff, 64)
        add_lanes(dst, doff + 8, src, soff + 8, 64)
        add_lanes(dst, doff + 16, src, soff + 16, 32)
    else:
        for k in range(n):
            dst[doff + k] += src[soff + k]


@numba.njit(cache=True, inline="always")
def sub_scaled_run(dst, doff, scale, src, soff, n):
    """dst[doff : doff + n] -= scale * src[soff : soff + n], as :func:`add_run` splits it."""
    if n == 20 and dst.itemsize == 4:
        sub_scaled_lanes(dst, doff, scale, src, soff, 64)
        sub_scaled_lanes(dst, doff + 16, scale, src, soff + 16, 16)
    elif n == 20 and dst.itemsize == 8:
        sub_scaled_lanes(dst, doff, scale, src, soff, 64)
        sub_scaled_lanes(dst, doff + 8, scale, src, soff + 8, 64)
        sub_scaled_lanes(dst, doff + 16, scale, src, soff + 16, 32)
    else:
        for k in range(n):
            dst[doff + k] -= scale * src[soff + k]


@numba.njit(cache=True, inline="always")
def borrow(a):
    """A view of the contiguous array ``a`` that does not own its memory.

    Why: passing an owned array to a function that is not inlined costs an atomic increment and
    decrement of its reference count; in kernels that call small functions millions of times with
    a dozen arrays each, those atomics took 60 % of the time (the ARIMA objective,
    ``_arima_kernels``; the CORP HMM, ``_corp_kernels``). A borrowed view skips them. The caller
    keeps the owner alive for as long as the view is used: numba frees an array after its last
    use, so the owner must be used after the views' last use."""
    return numba.carray(_pointer(a.ctypes.data, a), a.shape)


#: Bits per digit of :func:`radix_argsort`: 2,048 counters stay in L1.
RADIX_BITS = 11
RADIX_BUCKETS = 1 << RADIX_BITS


@numba.njit(cache=True)
def radix_argsort(keys):
    """``np.argsort(keys, kind="stable")`` of ``keys`` (n,) uint64, by least-significant-digit
    radix: 11-bit digits up to the largest key's, a digit every key shares skipped.

    Why here: the simulator orders finish times (as their bit patterns) and Algorithm 1 orders
    rows by application this way, both because numba's merge sort cost more than the rest of
    their step. (numba caches a caller by its own file: after editing this, delete the callers'
    cached builds.)"""
    n = len(keys)
    idx = np.arange(n)
    tmp = np.empty(n, np.int64)
    count = np.empty(RADIX_BUCKETS, np.int64)
    top = keys.max() if n else np.uint64(0)
    shift = np.uint64(0)
    while shift < np.uint64(64) and (top >> shift) > 0:
        idx, tmp = _radix_pass(keys, shift, idx, tmp, count)
        shift += np.uint64(RADIX_BITS)
    return idx


@numba.njit(cache=True)
def _radix_pass(keys, shift, idx, tmp, count):
    """One stable pass: the permutation ``idx`` reordered into ``tmp`` by the digit
    ``(keys >> shift) % 2048`` (``count`` (2048,) scratch). Returns (permutation, scratch) for
    the next pass, unswapped when every key has this digit (nothing moves)."""
    n = len(idx)
    mask = np.uint64(RADIX_BUCKETS - 1)
    count[:] = 0
    for i in range(n):
        count[(keys[i] >> shift) & mask] += 1
    if count[(keys[0] >> shift) & mask] == n:
        return idx, tmp
    total = 0
    for bucket in range(RADIX_BUCKETS):
        c = count[bucket]
        count[bucket] = total
        total += c
    for i in range(n):
        j = idx[i]
        d = (keys[j] >> shift) & mask
        tmp[count[d]] = j
        count[d] += 1
    return tmp, idx


def threaded(serial, spread, threads: int, *args, chunk: int = 0):
    """``serial(*args)``, or with ``threads`` > 1 its ``parallel=True`` twin ``spread(*args)`` on
    that many numba threads (at most numba's), ``prange`` handing out ``chunk`` iterations at a
    time (0: numba's even split); numba's thread count is restored after."""
    if threads <= 1:
        return serial(*args)
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        with numba.parallel_chunksize(chunk):
            return spread(*args)
    finally:
        numba.set_num_threads(before)
