"""Reductions, scans, sort, histogram and gather."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def reduce_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, KIND: tl.constexpr, AXIS: tl.constexpr,
                  KEEP: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    if KIND == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif KIND == "max":
        r = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif KIND == "min":
        r = x.min(AXIS, keep_dims=KEEP)
    elif KIND == "argmax":
        r = tl.argmax(x, axis=AXIS, keep_dims=KEEP)
    elif KIND == "argmin":
        r = tl.argmin(x, axis=AXIS, keep_dims=KEEP)
    else:
        r = tl.xor_sum(x, axis=AXIS, keep_dims=KEEP)
    if AXIS is None:
        tl.store(out_ptr, tl.reshape(r, []) if KEEP else r)
    elif AXIS == 0:
        tl.store(out_ptr + tl.arange(0, C), tl.reshape(r, [C]))
    else:
        tl.store(out_ptr + tl.arange(0, R), tl.reshape(r, [R]))


NUMPY_REDUCTIONS = {"sum": np.sum, "max": np.max, "min": np.min, "argmax": np.argmax,
                    "argmin": np.argmin, "xor": np.bitwise_xor.reduce}


@pytest.mark.parametrize("kind", ["sum", "max", "min", "argmax", "argmin", "xor"])
@pytest.mark.parametrize("axis", [0, 1, None])
@pytest.mark.parametrize("keep", [False, True])
def test_int_reductions(rng, kind, axis, keep):
    x = rng.integers(-1000, 1000, (8, 16)).astype(np.int32)
    x[2, 3] = x[2, 5] = x.max() + 1  # ties: the lowest index wins
    if kind in ("argmax", "argmin") and axis is None:
        pytest.skip("argmax/argmin take an axis")
    n = {0: 16, 1: 8, None: 1}[axis]
    out = np.empty(n, np.int32)
    reduce_kernel[(1,)](x, out, R=8, C=16, KIND=kind, AXIS=axis, KEEP=keep)
    want = NUMPY_REDUCTIONS[kind](x, axis=axis) if axis is not None else NUMPY_REDUCTIONS[kind](x.ravel())
    np.testing.assert_array_equal(out, np.atleast_1d(want))


@pytest.mark.parametrize("kind", ["sum", "max", "min", "argmax", "argmin"])
def test_float_reductions_ignore_nan_in_max_min(rng, kind):
    x = rng.standard_normal((8, 16)).astype(np.float32)
    x[1, 4] = np.nan
    x[3, :] = np.nan                      # a row of NaN only
    x[5, 7] = np.inf
    x[6, 2] = -np.inf
    out = np.empty(8, np.float32 if kind in ("sum", "max", "min") else np.int32)
    reduce_kernel[(1,)](x, out, R=8, C=16, KIND=kind, AXIS=1, KEEP=False)
    with np.errstate(all="ignore"):
        want = {"sum": lambda: x.astype(np.float64).sum(1), "max": lambda: np.nanmax(x, 1),
                "min": lambda: np.nanmin(x, 1)}.get(kind)
    if want is not None:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(out, want(), rtol=1e-5, equal_nan=True)
    else:
        fn = np.nanargmax if kind == "argmax" else np.nanargmin
        rows = [r for r in range(8) if r != 3]
        np.testing.assert_array_equal(out[rows], fn(x[rows], axis=1))


@tiles.jit
def small_int_sum_kernel(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    s = tl.sum(x, axis=0)
    tl.static_assert(s.dtype == tl.int32, "sums of int8 accumulate in int32")
    tl.store(out_ptr, s)


def test_sum_of_int8_accumulates_in_int32():
    x = np.full(128, 100, dtype=np.int8)
    x[:5] = -128
    out = np.empty(1, np.int32)
    small_int_sum_kernel[(1,)](x, out, N=128)
    assert out[0] == int(x.astype(np.int64).sum())


@tiles.jit
def multiply(a, b):
    return a * b


@tiles.jit
def pick_larger_with_index(va, ia, vb, ib):
    take_b = (vb > va) | ((vb == va) & (ib < ia))
    return tl.where(take_b, vb, va), tl.where(take_b, ib, ia)


@tiles.jit
def custom_reduce_kernel(x_ptr, prod_ptr, val_ptr, idx_ptr, R: tl.constexpr, C: tl.constexpr):
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    x = tl.load(x_ptr + rows[:, None] * C + cols[None, :])
    tl.store(prod_ptr + rows, tl.reduce(x, 1, multiply))
    idx = tl.broadcast_to(cols[None, :], (R, C))
    v, i = tl.reduce((x, idx), 1, pick_larger_with_index)
    tl.store(val_ptr + rows, v)
    tl.store(idx_ptr + rows, i)


def test_reduce_with_custom_combine_functions(rng):
    x = rng.integers(-3, 4, (4, 8)).astype(np.int32)
    prod, val, idx = np.empty(4, np.int32), np.empty(4, np.int32), np.empty(4, np.int32)
    custom_reduce_kernel[(1,)](x, prod, val, idx, R=4, C=8)
    np.testing.assert_array_equal(prod, np.prod(x, axis=1))
    np.testing.assert_array_equal(val, x.max(1))
    np.testing.assert_array_equal(idx, x.argmax(1))


@tiles.jit
def row_reductions_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :])
    rows = tl.arange(0, R)
    tl.store(out_ptr + rows, tl.sum(x, axis=1))
    tl.store(out_ptr + R + rows, tl.max(x, axis=1))
    tl.store(out_ptr + 2 * R + rows, tl.argmin(x, axis=1).to(tl.float32))
    tl.store(out_ptr + 3 * R + rows, tl.reduce(x, 1, running_max_abs))


@tiles.jit
def running_max_abs(a, b):
    return tl.maximum(tl.abs(a), tl.abs(b))


@pytest.mark.parametrize("R, C, warps", [(4, 128, 4), (32, 16, 4), (8, 256, 4), (64, 8, 8), (2, 8, 4), (16, 4, 1)])
def test_reductions_of_rows_shorter_than_the_thread_block(rng, R, C, warps):
    """Rows that a few lanes, a warp, or two warps hold (the shuffle path on CUDA), and tiles smaller
    than the block (threads hold copies); ties for argmin."""
    x = rng.integers(-50, 50, (R, C)).astype(np.float32) + rng.choice([0.0, 0.25], (R, C)).astype(np.float32)
    x[0, :] = -0.0
    out = np.full(4 * R, np.nan, np.float32)
    row_reductions_kernel[(1,)](x, out, R=R, C=C, num_warps=warps)
    np.testing.assert_allclose(out[:R], x.sum(1), rtol=1e-6)
    np.testing.assert_array_equal(out[R:2 * R], x.max(1))
    np.testing.assert_array_equal(out[2 * R:3 * R], x.argmin(1).astype(np.float32))
    np.testing.assert_array_equal(out[3 * R:], np.abs(x).max(1))


@tiles.jit
def either(a, b):
    return a or b


@tiles.jit
def both(a, b):
    return a and not (b == 0)


@tiles.jit
def any_all_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    """FlagGems' any/all: combine functions written with Python's ``or`` / ``and`` / ``not``."""
    rows = tl.arange(0, R)
    x = tl.load(x_ptr + rows[:, None] * C + tl.arange(0, C)[None, :]) != 0
    tl.store(out_ptr + rows, tl.reduce(x, 1, either))
    tl.store(out_ptr + R + rows, tl.reduce(x, 1, both))
    tl.store(out_ptr + 2 * R + rows[:, None] * C + tl.arange(0, C)[None, :], tl.associative_scan(x, 1, either))


def test_combine_functions_with_python_boolean_operators(rng):
    x = (rng.random((4, 8)) < 0.2).astype(np.int32) * rng.integers(1, 9, (4, 8)).astype(np.int32)
    x[0] = 0
    x[1] = -7
    out = np.zeros(2 * 4 + 4 * 8, np.bool_)
    any_all_kernel[(1,)](x, out, R=4, C=8)
    np.testing.assert_array_equal(out[:4], x.any(1))
    np.testing.assert_array_equal(out[4:8], x.all(1))
    np.testing.assert_array_equal(out[8:].reshape(4, 8), np.logical_or.accumulate(x != 0, axis=1))


@tiles.jit
def running_max(a, b):
    return tl.maximum(a, b)


@tiles.jit
def scan_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    x = tl.load(x_ptr + offs)
    n = R * C
    tl.store(out_ptr + offs, tl.cumsum(x, axis=1, reverse=REVERSE))
    tl.store(out_ptr + n + offs, tl.cumprod(x, axis=0, reverse=REVERSE))
    tl.store(out_ptr + 2 * n + offs, tl.associative_scan(x, 1, running_max, reverse=REVERSE))


@pytest.mark.parametrize("R, C", [(4, 8), (16, 256)])  # 16x256 on 4 warps: a row on two warps (Mamba's tile)
@pytest.mark.parametrize("reverse", [False, True])
def test_scans(rng, reverse, R, C):
    x = rng.integers(-3, 4, (R, C)).astype(np.int32)
    out = np.empty(3 * R * C, np.int32)
    scan_kernel[(1,)](x, out, R=R, C=C, REVERSE=reverse)

    def scan(fn, a, axis):
        if reverse:
            return np.flip(fn(np.flip(a, axis), axis=axis), axis)
        return fn(a, axis=axis)
    parts = out.reshape(3, R, C)
    np.testing.assert_array_equal(parts[0], scan(np.cumsum, x, 1))
    np.testing.assert_array_equal(parts[1], scan(np.cumprod, x, 0))
    np.testing.assert_array_equal(parts[2], scan(np.maximum.accumulate, x, 1))


@tiles.jit
def affine_compose(a1, b1, a2, b2):
    """(h -> a1 h + b1) then (h -> a2 h + b2): associative, not commutative (Mamba's recurrence)."""
    return a1 * a2, b1 * a2 + b2


@tiles.jit
def recurrence_kernel(a_ptr, b_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    _, h = tl.associative_scan((tl.load(a_ptr + offs), tl.load(b_ptr + offs)), 1, affine_compose, reverse=REVERSE)
    tl.store(out_ptr + offs, h)


@pytest.mark.parametrize("R, C", [(4, 32), (8, 128), (16, 256)])  # one element a thread; chunks of four in
# registers, a row on a lane group; a row on two warps (Mamba's 16x256 tile)
@pytest.mark.parametrize("reverse", [False, True])
def test_linear_recurrence_scan_keeps_operand_order(rng, reverse, R, C):
    a = rng.integers(-3, 4, (R, C)).astype(np.int32)
    b = rng.integers(-1000, 1000, (R, C)).astype(np.int32)
    out = np.empty((R, C), np.int32)
    recurrence_kernel[(1,)](a, b, out, R=R, C=C, REVERSE=reverse)
    expected = np.empty((R, C), np.int64)
    h = np.zeros(R, np.int64)
    for c in (range(C - 1, -1, -1) if reverse else range(C)):  # h = a h + b, wrapped to int32 as it goes
        h = (a[:, c] * h + b[:, c] + 2**31) % 2**32 - 2**31
        expected[:, c] = h
    np.testing.assert_array_equal(out, expected.astype(np.int32))


@tiles.jit
def long_cumsum_kernel(x_ptr, i_ptr, out_ptr, iout_ptr, n, N: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, N)
    mask = offs < n
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0, reverse=REVERSE), mask=mask)
    tl.store(iout_ptr + offs, tl.cumsum(tl.load(i_ptr + offs, mask=mask, other=0), 0, reverse=REVERSE), mask=mask)


@pytest.mark.parametrize("reverse", [False, True])
def test_long_masked_cumsum(rng, reverse):
    n, N = 1000, 1024  # ten rounds, eight elements a thread, a masked tail
    x = rng.standard_normal(n).astype(np.float32)
    xi = rng.integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max, n, dtype=np.int32)
    out, iout = np.full(n, np.nan, np.float32), np.zeros(n, np.int32)
    long_cumsum_kernel[(1,)](x, xi, out, iout, n, N=N, REVERSE=reverse)
    flip = (lambda v: v[::-1]) if reverse else (lambda v: v)
    np.testing.assert_allclose(out, flip(np.cumsum(flip(x.astype(np.float64)))), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(iout, flip(np.cumsum(flip(xi), dtype=np.int32)))  # wraps as int32


@tiles.jit
def int8_cumsum_kernel(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), 0))


def test_cumsum_of_int8_accumulates_in_int32():
    x = np.full(64, 120, np.int8)
    out = np.empty(64, np.int32)
    int8_cumsum_kernel[(1,)](x, out, N=64)
    np.testing.assert_array_equal(out, np.cumsum(x.astype(np.int32)))


@tiles.jit
def sort_kernel(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, DESCENDING: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(out_ptr + offs, tl.sort(tl.load(x_ptr + offs), descending=DESCENDING))


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint8])
@pytest.mark.parametrize("descending", [False, True])
def test_sort(rng, dtype, descending):
    x = (rng.standard_normal((4, 32)) * 50).astype(dtype)
    out = np.empty_like(x)
    sort_kernel[(1,)](x, out, R=4, C=32, DESCENDING=descending)
    want = np.sort(x, axis=1)
    np.testing.assert_array_equal(out, np.flip(want, 1) if descending else want)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_sort_nan_greatest_and_equal_keys_keep_their_order(dtype):
    """The reference's choice where Triton leaves the order open: NaN is greater than every
    number, equal keys (-0.0 and +0.0, NaNs) keep their order in either direction."""
    nan2 = np.array([0x7FF8000000000001], np.uint64).view(np.float64)[0]  # another payload
    x = np.array([[0.0, np.nan, -0.0, 1.0, -np.inf, 0.0, -0.0, nan2] * 2], dtype)
    out = np.empty_like(x)
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[x.itemsize]
    for descending in (False, True):
        sort_kernel[(1,)](x, out, R=1, C=16, DESCENDING=descending)
        order = [4, 12, 0, 2, 5, 6, 8, 10, 13, 14, 3, 11, 1, 7, 9, 15]
        if descending:
            order = [1, 7, 9, 15, 3, 11, 0, 2, 5, 6, 8, 10, 13, 14, 4, 12]
        np.testing.assert_array_equal(out.view(bits), x[:, order].view(bits))


@tiles.jit
def histogram_kernel(x_ptr, out_ptr, n, N: tl.constexpr, BINS: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + tl.arange(0, BINS), tl.histogram(x, BINS, mask=offs < n))


def test_histogram_with_mask(rng):
    x = rng.integers(0, 16, 128).astype(np.int32)
    out = np.empty(16, np.int32)
    histogram_kernel[(1,)](x, out, 100, N=128, BINS=16)
    np.testing.assert_array_equal(out, np.bincount(x[:100], minlength=16))


@tiles.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    src = tl.load(src_ptr + offs)
    idx = tl.load(idx_ptr + offs)
    tl.store(out_ptr + offs, tl.gather(src, idx, axis=1))
    tl.store(out_ptr + R * C + offs, tl.gather(src, idx % R, axis=0))


def test_gather(rng):
    src = rng.standard_normal((4, 8)).astype(np.float32)
    idx = rng.integers(0, 8, (4, 8)).astype(np.int32)
    out = np.empty(64, np.float32)
    gather_kernel[(1,)](src, idx, out, R=4, C=8)
    np.testing.assert_array_equal(out[:32].reshape(4, 8), np.take_along_axis(src, idx, 1))
    np.testing.assert_array_equal(out[32:].reshape(4, 8), np.take_along_axis(src, idx % 4, 0))


@tiles.jit
def narrow_max_kernel(x_ptr, out_ptr, idx_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    top = tl.max(x, 0)
    tl.static_assert(top.dtype == (tl.float32 if x.dtype.is_floating() else tl.int32))
    low, where = tl.min(x, 0, return_indices=True)
    tl.static_assert(low.dtype == x.dtype)  # with indices the values keep their type
    tl.store(out_ptr + tl.arange(0, 2), tl.where(tl.arange(0, 2) == 0, top, low.to(top.dtype)))
    tl.store(idx_ptr, where)
    tl.store(out_ptr + 2 + tl.arange(0, N), x - top)  # in float32 / int32, as Triton computes it


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint8])
def test_max_min_of_narrow_types_reduce_in_32_bits(rng, dtype):
    """Triton reduces values alone (no indices) of types under 32 bits as float32 / int32."""
    n = 64
    if dtype == np.float16:
        x = (rng.standard_normal(n) * 300).astype(np.float16)
        x[5] = np.float16(65504)
        wide = np.float32
    else:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)
        x[7], x[9] = info.max, info.min
        wide = np.int32
    out = np.empty(n + 2, wide)
    idx = np.empty(1, np.int32)
    narrow_max_kernel[(1,)](x, out, idx, N=n)
    np.testing.assert_array_equal(out[:2], [x.max(), x.min()])
    assert idx[0] == np.argmin(x)
    np.testing.assert_array_equal(out[2:], x.astype(wide) - wide(x.max()))


@tiles.jit
def mask_count_kernel(x_ptr, out_ptr, N: tl.constexpr):
    mask = tl.load(x_ptr + tl.arange(0, N)) > 0
    count = tl.sum(mask, 0)
    tl.static_assert(count.dtype == tl.uint32)  # Triton counts a bool tile as unsigned
    tl.static_assert(tl.cumsum(mask, 0).dtype == tl.uint32)
    tl.store(out_ptr, count - 1)  # wraps when nothing is set, as on Triton
    tl.store(out_ptr + 1 + tl.arange(0, N), tl.cumsum(mask, 0))


@pytest.mark.parametrize("empty", [False, True])
def test_sum_of_a_mask_is_unsigned(rng, empty):
    x = np.full(32, -1, np.int32) if empty else rng.integers(-5, 5, 32).astype(np.int32)
    out = np.empty(33, np.uint32)
    mask_count_kernel[(1,)](x, out, N=32)
    assert out[0] == np.uint32((x > 0).sum() - 1 if not empty else 2**32 - 1)
    np.testing.assert_array_equal(out[1:], np.cumsum(x > 0).astype(np.uint32))
