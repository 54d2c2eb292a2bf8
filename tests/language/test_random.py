"""tl.rand/randn/randint/randint4x against a pure-Python Philox-4x32-10."""

import math

import numpy as np
import pytest

import tiles
import tiles.language as tl

MASK32 = 0xFFFFFFFF


def philox4x32(counter, key, rounds=10):
    """Random123's Philox-4x32: four 32-bit counter words, two 32-bit key words."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for _ in range(rounds):
        product0 = 0xD2511F53 * c0
        product1 = 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((product1 >> 32) ^ c1 ^ k0) & MASK32, product1 & MASK32, \
            ((product0 >> 32) ^ c3 ^ k1) & MASK32, product0 & MASK32
        k0 = (k0 + 0x9E3779B9) & MASK32
        k1 = (k1 + 0xBB67AE85) & MASK32
    return c0, c1, c2, c3


def test_reference_known_answer():
    assert philox4x32((0, 0, 0, 0), (0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)


@tiles.jit
def randint4x_kernel(out_ptr, seed, offset_base, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a, b, c, d = tl.randint4x(seed, offset_base + offs)
    tl.static_assert(a.dtype == tl.uint32, "Philox words are uint32")
    tl.store(out_ptr + offs, a)
    tl.store(out_ptr + BLOCK + offs, b)
    tl.store(out_ptr + 2 * BLOCK + offs, c)
    tl.store(out_ptr + 3 * BLOCK + offs, d)
    tl.store(out_ptr + 4 * BLOCK + offs, tl.randint(seed, offset_base + offs))


def expected_words(seed, offsets):
    words = [philox4x32((o & MASK32, 0, 0, 0), (seed & MASK32, (seed >> 32) & MASK32)) for o in offsets]
    return np.array(words, dtype=np.uint32).T


def test_known_answer_in_a_kernel():
    out = np.empty(5 * 16, np.uint32)
    randint4x_kernel[(1,)](out, 0, 0, BLOCK=16)
    assert [hex(v) for v in out.reshape(5, 16)[:4, 0]] == ["0x6627e8d5", "0xe169c58d", "0xbc57ac4c",
                                                          "0x9b00dbd8"]


@pytest.mark.parametrize("seed", [0, 12345, 2**31 - 1, 2**40 + 77, 1])
def test_randint4x_matches_reference(rng, seed):
    base = int(rng.integers(0, 2**30))
    out = np.empty(5 * 32, np.uint32)
    randint4x_kernel[(1,)](out, seed, base, BLOCK=32)
    words = expected_words(seed, range(base, base + 32))
    np.testing.assert_array_equal(out.reshape(5, 32)[:4], words)
    np.testing.assert_array_equal(out.reshape(5, 32)[4], words[0])


@tiles.jit
def uniform_normal_kernel(out_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.rand(seed, offs), mask=mask)
    tl.store(out_ptr + n + offs, tl.randn(seed, offs), mask=mask)


def uniform(words):
    signed = words.view(np.int32).astype(np.int64)
    signed = np.where(signed < 0, -signed - 1, signed)
    return signed.astype(np.float32) * np.float32(4.6566127342e-10)


def test_rand_and_randn_match_reference_and_statistics(rng):
    seed = int(rng.integers(0, 2**31))
    n = 5000
    out = np.empty(2 * n, np.float32)
    uniform_normal_kernel[(tiles.cdiv(n, 512),)](out, seed, n, BLOCK=512)
    words = expected_words(seed, range(n))
    u = uniform(words[0])
    np.testing.assert_array_equal(out[:n], u)
    assert ((0 <= out[:n]) & (out[:n] < 1)).all()
    u1 = np.maximum(np.float32(1e-7), u)
    u2 = uniform(words[1])
    normal = np.sqrt(-2.0 * np.log(u1.astype(np.float64))) * np.cos(2 * math.pi * u2.astype(np.float64))
    np.testing.assert_allclose(out[n:], normal, rtol=1e-4, atol=1e-4)
    assert abs(out[n:].mean()) < 0.1 and abs(out[n:].std() - 1) < 0.1
