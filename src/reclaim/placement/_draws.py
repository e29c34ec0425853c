"""Random-fit's draw in compiled code, bit for bit the one its Python ``score`` makes.

``RandomFit.score`` seeds ``np.random.default_rng([seed, digest])`` with a blake2b digest of the
call's input and takes uniform doubles from it. Speed trick: the simulator's event loop binds in
compiled code, where neither hashlib nor a Generator can be built, and at the paper's scale
random placement through Python cost most of a run. So this module computes the same chain:
blake2b (RFC 7693, 8-byte digest), numpy's ``SeedSequence`` mixing of the entropy words into the
state of a ``PCG64`` (XSL-RR output, 128-bit state in two 64-bit halves) and numpy's uniform double
``(next64 >> 11) / 2**53``. ``tests/placement/test_draws.py`` checks it against numpy and hashlib.
"""

from __future__ import annotations

import numba
import numpy as np

_U64 = np.uint64
_M32 = np.uint64(0xFFFFFFFF)

_IV = np.array(
    [
        0x6A09E667F3BCC908,
        0xBB67AE8584CAA73B,
        0x3C6EF372FE94F82B,
        0xA54FF53A5F1D36F1,
        0x510E527FADE682D1,
        0x9B05688C2B3E6C1F,
        0x1F83D9ABFB41BD6B,
        0x5BE0CD19137E2179,
    ],
    np.uint64,
)
_SIGMA = np.array(
    [
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
        [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
        [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
        [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
        [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
        [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
        [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
        [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
        [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    ],
    np.int64,
)
#: blake2b's parameter block for an 8-byte digest without key: digest length, fanout 1, depth 1.
_PARAM = np.uint64(0x01010008)
_BLOCK = 128

# numpy's SeedSequence constants (numpy/random/bit_generator.pyx).
_INIT_A, _MULT_A = np.uint64(0x43B0D7E5), np.uint64(0x931E8875)
_INIT_B, _MULT_B = np.uint64(0x8B51F9DD), np.uint64(0x58F38DED)
_MIX_L, _MIX_R = np.uint64(0xCA01F9DD), np.uint64(0x4973F715)
_POOL = 4
# PCG64's 128-bit multiplier, high and low halves.
_PCG_HI, _PCG_LO = np.uint64(0x2360ED051FC65DA4), np.uint64(0x4385DF649FCCF645)


def seed_words(seed: int) -> np.ndarray:
    """(k,) uint32: the words numpy's ``SeedSequence`` makes of a non-negative int (little end
    first; 0 is one word)."""
    if seed < 0:
        raise ValueError(f"a seed must be non-negative, got {seed}")
    words = [0] if seed == 0 else []
    while seed > 0:
        words.append(seed & 0xFFFFFFFF)
        seed >>= 32
    return np.array(words, np.uint32)


@numba.njit(cache=True, inline="always")
def _rotr(x, n):
    """``x`` rotated right by ``n`` (uint64, 0 to 63) bits."""
    return (x >> n) | (x << ((_U64(64) - n) & _U64(63)))


@numba.njit(cache=True, inline="always")
def _g(a, b, c, d, x, y):
    a = a + b + x
    d = _rotr(d ^ a, _U64(32))
    c = c + d
    b = _rotr(b ^ c, _U64(24))
    a = a + b + y
    d = _rotr(d ^ a, _U64(16))
    c = c + d
    b = _rotr(b ^ c, _U64(63))
    return a, b, c, d


@numba.njit(cache=True)
def _compress(h, m, counter, last):
    """blake2b's compression of the 16-word block ``m`` into ``h``; the working vector lives in
    locals (as an array it cost four times as much)."""
    v0, v1, v2, v3, v4, v5, v6, v7 = h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]
    v8, v9, v10, v11 = _IV[0], _IV[1], _IV[2], _IV[3]
    v12, v13, v14, v15 = _IV[4] ^ _U64(counter), _IV[5], _IV[6], _IV[7]
    if last:
        v14 = ~v14
    for rnd in range(12):
        s = _SIGMA[rnd % 10]
        v0, v4, v8, v12 = _g(v0, v4, v8, v12, m[s[0]], m[s[1]])
        v1, v5, v9, v13 = _g(v1, v5, v9, v13, m[s[2]], m[s[3]])
        v2, v6, v10, v14 = _g(v2, v6, v10, v14, m[s[4]], m[s[5]])
        v3, v7, v11, v15 = _g(v3, v7, v11, v15, m[s[6]], m[s[7]])
        v0, v5, v10, v15 = _g(v0, v5, v10, v15, m[s[8]], m[s[9]])
        v1, v6, v11, v12 = _g(v1, v6, v11, v12, m[s[10]], m[s[11]])
        v2, v7, v8, v13 = _g(v2, v7, v8, v13, m[s[12]], m[s[13]])
        v3, v4, v9, v14 = _g(v3, v4, v9, v14, m[s[14]], m[s[15]])
    h[0] ^= v0 ^ v8
    h[1] ^= v1 ^ v9
    h[2] ^= v2 ^ v10
    h[3] ^= v3 ^ v11
    h[4] ^= v4 ^ v12
    h[5] ^= v5 ^ v13
    h[6] ^= v6 ^ v14
    h[7] ^= v7 ^ v15


@numba.njit(cache=True)
def blake2b_8(message, n):
    """The 8-byte blake2b digest of ``message[:n]`` (uint8, its length a multiple of 128 and at
    least ``n`` rounded up to one; the bytes past ``n`` are zeroed here), as a little-endian
    uint64: ``int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")``."""
    h = _IV.copy()
    h[0] ^= _PARAM
    n_blocks = max(1, (n + _BLOCK - 1) // _BLOCK)
    message[n : n_blocks * _BLOCK] = 0
    words = message[: n_blocks * _BLOCK].view(np.uint64)
    for b in range(n_blocks):
        last = b == n_blocks - 1
        counter = n if last else (b + 1) * _BLOCK
        _compress(h, words[16 * b : 16 * b + 16], counter, last)
    return h[0]


@numba.njit(cache=True)
def blake2b_8_resumed(message, n, previous, chain, hashed):
    """:func:`blake2b_8` of ``message[:n]``, resumed from the call before where the two messages
    agree: ``previous`` (bytes, as long as ``message``) holds the message hashed last,
    ``chain`` (blocks, 8) uint64 blake2b's state before each of its blocks and ``hashed`` (1,)
    int64 its length (0: none yet); all three are updated.

    Speed trick: random-fit hashes the whole cluster's free capacity for every bind (4 KB at 250
    hosts), and between two binds only a host or two changed; the state before a block depends
    on the blocks before it alone, so hashing restarts at the first block that differs
    (half the blocks on average; ``benchmarks/bench_pace.py``).
    """
    n_blocks = max(1, (n + _BLOCK - 1) // _BLOCK)
    message[n : n_blocks * _BLOCK] = 0
    words = message[: n_blocks * _BLOCK].view(np.uint64)
    before = previous[: n_blocks * _BLOCK].view(np.uint64)
    first = 0
    if hashed[0] == n:
        while first < n_blocks - 1:  # the last block is always hashed again: it is flagged
            same = True
            for k in range(16 * first, 16 * first + 16):
                if words[k] != before[k]:
                    same = False
                    break
            if not same:
                break
            first += 1
    else:
        chain[0, :] = _IV
        chain[0, 0] ^= _PARAM
    h = chain[first].copy()
    for b in range(first, n_blocks):
        chain[b, :] = h
        last = b == n_blocks - 1
        counter = n if last else (b + 1) * _BLOCK
        _compress(h, words[16 * b : 16 * b + 16], counter, last)
    before[16 * first :] = words[16 * first :]
    hashed[0] = n
    return h[0]


@numba.njit(cache=True, inline="always")
def _hashmix(value, const):
    """numpy's ``hashmix``: returns the mixed value and the next hash constant."""
    value = (value ^ const) & _M32
    const = (const * _MULT_A) & _M32
    value = (value * const) & _M32
    return value ^ (value >> _U64(16)), const


@numba.njit(cache=True, inline="always")
def _mix(x, y):
    result = (_MIX_L * x - _MIX_R * y) & _M32
    return result ^ (result >> _U64(16))


@numba.njit(cache=True, inline="always")
def _mul_hi(a, b):
    """The high 64 bits of the 128-bit product of two uint64."""
    a_lo, a_hi = a & _M32, a >> _U64(32)
    b_lo, b_hi = b & _M32, b >> _U64(32)
    lo_lo = a_lo * b_lo
    hi_lo = a_hi * b_lo
    lo_hi = a_lo * b_hi
    cross = (lo_lo >> _U64(32)) + (hi_lo & _M32) + lo_hi
    return a_hi * b_hi + (hi_lo >> _U64(32)) + (cross >> _U64(32))


@numba.njit(cache=True, inline="always")
def _step(hi, lo, inc_hi, inc_lo):
    """One PCG64 step: state x multiplier + increment, mod 2**128."""
    new_hi = hi * _PCG_LO + lo * _PCG_HI + _mul_hi(lo, _PCG_LO)
    new_lo = lo * _PCG_LO
    out_lo = new_lo + inc_lo
    carry = _U64(1) if out_lo < new_lo else _U64(0)
    return new_hi + inc_hi + carry, out_lo


@numba.njit(cache=True)
def uniform_draws(seed, digest, out):
    """Fill ``out`` with ``np.random.default_rng([seed, digest]).random(len(out))``: ``seed`` the
    words of :func:`seed_words`, ``digest`` a uint64."""
    n_seed = len(seed)
    n_digest = 2 if digest >> _U64(32) else 1
    entropy = np.empty(n_seed + n_digest, np.uint64)
    for i in range(n_seed):
        entropy[i] = _U64(seed[i])
    entropy[n_seed] = digest & _M32
    if n_digest == 2:
        entropy[n_seed + 1] = digest >> _U64(32)
    # SeedSequence.mix_entropy into a pool of 4 words
    pool = np.zeros(_POOL, np.uint64)
    const = _INIT_A
    for i in range(_POOL):
        pool[i], const = _hashmix(entropy[i] if i < len(entropy) else _U64(0), const)
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                mixed, const = _hashmix(pool[src], const)
                pool[dst] = _mix(pool[dst], mixed)
    for src in range(_POOL, len(entropy)):
        for dst in range(_POOL):
            mixed, const = _hashmix(entropy[src], const)
            pool[dst] = _mix(pool[dst], mixed)
    # generate_state(4, uint64): 8 words cycling the pool, paired little end first
    state = np.empty(4, np.uint64)
    const = _INIT_B
    for i in range(8):
        value = (pool[i % _POOL] ^ const) & _M32
        const = (const * _MULT_B) & _M32
        value = (value * const) & _M32
        value ^= value >> _U64(16)
        if i % 2 == 0:
            state[i // 2] = value
        else:
            state[i // 2] |= value << _U64(32)
    # PCG64 seeding: state 0, increment 2 x initseq + 1, a step, add initstate, a step
    inc_hi = (state[2] << _U64(1)) | (state[3] >> _U64(63))
    inc_lo = (state[3] << _U64(1)) | _U64(1)
    hi, lo = _step(_U64(0), _U64(0), inc_hi, inc_lo)
    lo_sum = lo + state[1]
    hi = hi + state[0] + (_U64(1) if lo_sum < lo else _U64(0))
    hi, lo = _step(hi, lo_sum, inc_hi, inc_lo)
    for i in range(len(out)):
        hi, lo = _step(hi, lo, inc_hi, inc_lo)
        word = _rotr(hi ^ lo, hi >> _U64(58))
        out[i] = np.float64(word >> _U64(11)) * (1.0 / 9007199254740992.0)
