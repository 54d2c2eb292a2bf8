"""Python numbers given to memory ops and mixed with tiles take Triton's literal types.

Triton turns a Python number into a tile of its literal type (``to_tensor``: int32/uint32/int64/
uint64 by range, float32 for a float it holds as a normal value, float64 beyond) before a store,
a load's ``other=``, an atomic or a cast converts it to the element type: ``tl.store(p_fp64, 0.1)``
writes float32's 0.1 widened, in its interpreter and in compiled code alike (checked against
Triton 3.9's interpreter).
"""

from __future__ import annotations

import numpy as np
import pytest

import tiles
import tiles.language as tl


def widened(x: float) -> np.float64:
    return np.float64(np.float32(x))


@tiles.jit
def store_number(out, V: tl.constexpr):
    tl.store(out, V)


@tiles.jit
def load_with_other(out, x, n, V: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(x + offs, mask=offs < n, other=V))


@tiles.jit
def add_atomically(out, V: tl.constexpr):
    tl.atomic_add(out, V)


@pytest.mark.parametrize("value", [0.1, 1 / 3, -0.6, 1e-8, 3.0e38])
def test_a_float_stored_into_float64_is_float32s(value):
    out = np.full(1, 7.0)
    store_number[(1,)](out, value)
    assert out[0] == widened(value) and out[0] != value


@pytest.mark.parametrize("value", [1e-40, -1e-300, 1e300, 5e-324])
def test_a_float_float32_cannot_hold_stays_float64(value):
    out = np.full(1, 7.0)
    store_number[(1,)](out, value)
    assert out[0] == value


def test_other_of_a_float64_load_is_float32s(rng):
    x = rng.standard_normal(37)
    out = np.full(64, 7.0)
    load_with_other[(1,)](out, x, 37, 1 / 3, BLOCK=64)
    np.testing.assert_array_equal(out[:37], x)
    assert (out[37:] == widened(1 / 3)).all()


def test_an_atomic_add_of_a_float_into_float64_adds_float32s():
    out = np.array([0.25])
    add_atomically[(3,)](out, 0.1)
    assert out[0] == 0.25 + widened(0.1) + widened(0.1) + widened(0.1)


@pytest.mark.parametrize("value, want", [(2.75, 2), (-2.75, -2), (0.5, 0), (-0.0, 0), (True, 1)])
def test_a_number_stored_into_an_int32_converts_as_a_cast(value, want):
    out = np.full(1, 7, np.int32)
    store_number[(1,)](out, value)
    assert out[0] == want


@tiles.jit
def scale_ints(out, x, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    y = tl.load(x + offs) * 1e-300  # a float64 literal: int32 * float64 computes in float64
    tl.store(out + offs, y)


def test_an_int_tile_times_a_float64_literal_is_float64(rng):
    x = rng.integers(-1000, 1000, 16).astype(np.int32)
    out = np.zeros(16)
    scale_ints[(1,)](out, x, BLOCK=16)
    np.testing.assert_array_equal(out, x.astype(np.float64) * 1e-300)
    assert (out[x != 0] != 0).all()  # float32 would have flushed every product to 0


@tiles.jit
def tiny_sum(out, x, n):
    acc = 1e-300  # carried as float64, as Triton types it
    for i in range(n):
        acc += tl.load(x + i)
    tl.store(out, acc)


def test_a_loop_carried_float64_literal(rng):
    x = rng.standard_normal(5).astype(np.float32)
    out = np.zeros(1)
    tiny_sum[(1,)](out, x, 5)
    want = np.float64(1e-300)
    for v in x:
        want = want + np.float64(v)
    assert out[0] == want
