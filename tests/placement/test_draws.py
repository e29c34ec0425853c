"""Random-fit's compiled draw chain against hashlib and numpy, bit for bit."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reclaim.placement._draws import blake2b_8, blake2b_8_resumed, seed_words, uniform_draws


@pytest.mark.parametrize("n", [0, 1, 5, 127, 128, 129, 255, 256, 257, 4258])
def test_blake2b_equals_hashlib(n):
    data = np.random.default_rng(n).integers(0, 256, n).astype(np.uint8)
    message = np.zeros(max(1, -(-n // 128)) * 128, np.uint8)
    message[:n] = data
    message[n:] = 7  # bytes past the message are not hashed
    expected = hashlib.blake2b(data.tobytes(), digest_size=8).digest()
    assert int(blake2b_8(message, n)) == int.from_bytes(expected, "little")


@settings(max_examples=60)
@given(st.integers(0, 2**32 - 1), st.lists(st.sampled_from([300, 4258, 4258, 4258]), max_size=8))
def test_resumed_blake2b_equals_hashlib_from_call_to_call(seed, lengths):
    # one buffer and one chain through messages that change in a byte or two, or in length
    rng = np.random.default_rng(seed)
    size = -(-4258 // 128) * 128
    message, previous = np.zeros(size, np.uint8), np.zeros(size, np.uint8)
    chain, hashed = np.zeros((size // 128, 8), np.uint64), np.zeros(1, np.int64)
    data = rng.integers(0, 256, size).astype(np.uint8)
    for n in lengths:
        data[rng.integers(0, n, rng.integers(0, 3))] ^= 0xFF
        message[:n] = data[:n]
        expected = hashlib.blake2b(data[:n].tobytes(), digest_size=8).digest()
        digest = blake2b_8_resumed(message, n, previous, chain, hashed)
        assert int(digest) == int.from_bytes(expected, "little")


@settings(max_examples=200)
@given(
    st.one_of(st.integers(0, 5), st.integers(0, 2**128)),
    st.one_of(st.sampled_from([0, 1, 2**32 - 1, 2**32, 2**64 - 1]), st.integers(0, 2**64 - 1)),
    st.integers(0, 40),
)
def test_uniform_draws_equal_default_rng(seed, digest, n):
    out = np.empty(n)
    uniform_draws(seed_words(seed), np.uint64(digest), out)
    assert np.array_equal(out, np.random.default_rng([seed, digest]).random(n))


def test_a_negative_seed_is_refused_as_numpy_refuses_it():
    with pytest.raises(ValueError):
        seed_words(-1)
