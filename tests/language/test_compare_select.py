"""Comparisons, where, maximum/minimum and their NaN rules."""

import numpy as np
import pytest
from lang_reference import NUMPY, random_values

import tiles
import tiles.language as tl


@tiles.jit
def compare_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    results = (x == y, x != y, x < y, x <= y, x > y, x >= y)
    for i in tl.static_range(6):
        tl.store(out_ptr + i * BLOCK + offs, results[i])


@pytest.mark.parametrize("dtype", [tl.float32, tl.float16, tl.bfloat16, tl.int8, tl.uint32, tl.int64])
def test_comparisons(rng, dtype):
    x, y = random_values(rng, dtype, 32), random_values(rng, dtype, 32)
    y[:8] = x[:8]  # equal pairs, NaN == NaN included for floats
    out = np.empty(6 * 32, np.bool_)
    compare_kernel[(1,)](x, y, out, BLOCK=32)
    xa, ya = (x.astype(np.float64), y.astype(np.float64)) if dtype == tl.bfloat16 else (x, y)
    for i, fn in enumerate((np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal)):
        np.testing.assert_array_equal(out[32 * i:32 * (i + 1)], fn(xa, ya), err_msg=fn.__name__)


def test_mixed_sign_comparison_follows_c_rules():
    x = np.array([-1, 0, 5, -(2**31)] * 8, dtype=np.int32)
    y = np.array([1, 0, 4, 1] * 8, dtype=np.uint32)
    out = np.empty(6 * 32, np.bool_)
    compare_kernel[(1,)](x, y, out, BLOCK=32)
    as_unsigned = x.astype(np.uint32)  # int32 meets uint32: both become uint32
    np.testing.assert_array_equal(out[64:96], as_unsigned < y)


@tiles.jit
def minmax_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, tl.maximum(x, y))
    tl.store(out_ptr + BLOCK + offs, tl.minimum(x, y))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 3 * BLOCK + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 4 * BLOCK + offs, tl.where(x > y, x, y))
    tl.store(out_ptr + 5 * BLOCK + offs, max(x, y))


@pytest.mark.parametrize("dtype", [tl.float32, tl.float16, tl.int16, tl.uint8])
def test_maximum_minimum_nan_rules(rng, dtype):
    x, y = random_values(rng, dtype, 32), random_values(rng, dtype, 32)
    out = np.empty(6 * 32, NUMPY[dtype])
    minmax_kernel[(1,)](x, y, out, BLOCK=32)
    parts = out.reshape(6, 32)
    np.testing.assert_array_equal(parts[0], np.fmax(x, y))   # a NaN loses to a number
    np.testing.assert_array_equal(parts[1], np.fmin(x, y))
    np.testing.assert_array_equal(parts[2], np.maximum(x, y))  # NaN wins
    np.testing.assert_array_equal(parts[3], np.minimum(x, y))
    np.testing.assert_array_equal(parts[4], np.where(x > y, x, y))
    np.testing.assert_array_equal(parts[5], np.fmax(x, y))


@tiles.jit
def where_kernel(c_ptr, x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    c = tl.load(c_ptr + offs)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, tl.where(c, x, -1))                  # tile and literal
    tl.store(out_ptr + BLOCK + offs, tl.where(c != 0, 7, x))      # int condition compared
    rows = tl.where(c[:, None] > 0, x[None, :], 0)                # broadcasting condition
    tl.store(out_ptr + 2 * BLOCK + offs, tl.sum(rows, axis=0))


def test_where_with_literals_and_broadcasting(rng):
    c = rng.integers(0, 3, 16).astype(np.int32)
    x = rng.integers(-100, 100, 16).astype(np.int32)
    out = np.empty(48, np.int32)
    where_kernel[(1,)](c, x, out, BLOCK=16)
    np.testing.assert_array_equal(out[:16], np.where(c != 0, x, -1))
    np.testing.assert_array_equal(out[16:32], np.where(c != 0, 7, x))
    np.testing.assert_array_equal(out[32:], x * (c > 0).sum())
