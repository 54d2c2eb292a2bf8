"""tl.constexpr objects behave like Triton's inside kernels; cache keys keep plain values."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
import tiles.language.core as core
from tiles.core.errors import CompilationError

SCALE = tl.constexpr(3)
ACTIVATIONS = tl.constexpr({"relu": 1, "gelu": 2})


def test_constexpr_object_on_the_host():
    c = tl.constexpr(6)
    assert c.value == 6 and isinstance(c, tl.constexpr) and isinstance(c, core.constexpr)
    assert repr(c) == "constexpr[6]" and tl.constexpr(c).value == 6
    for result, plain in [(c + 1, 7), (1 + c, 7), (c * 2, 12), (c // 4, 1), (c % 4, 2), (c ** 2, 36),
                          (-c, -6), (c << 1, 12), (c >> 1, 3), (c & 3, 2), (c | 1, 7), (c ^ 5, 3),
                          (c / 4, 1.5), (7 - c, 1)]:
        assert isinstance(result, tl.constexpr) and result.value == plain
    assert isinstance(c == 6, tl.constexpr) and (c == 6) and not (c != 6) and (c < 7) and (c >= 6)
    assert int(c) == 6 and float(c) == 6.0 and bool(tl.constexpr(0)) is False
    assert hash(c) == hash(6) and {6: "six"}[c] == "six" and list(range(c)) == list(range(6))
    assert [10, 20, 30, 40, 50, 60, 70][c] == 70
    assert tl.constexpr("relu") == "relu" and tl.constexpr(tl.float16).is_fp16()
    assert tl.constexpr(1).logical_and(0).value == 0 and tl.constexpr(0).logical_or(5).value == 5


@tiles.jit
def helper(x, N: tl.constexpr, FACTOR: tl.constexpr):
    tl.static_assert(isinstance(N, tl.constexpr))
    return x * FACTOR + N


@tiles.jit
def constexpr_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr, DTYPE: tl.constexpr, ACT: tl.constexpr,
                     HAS_BIAS: tl.constexpr, BIAS: tl.constexpr):
    tl.static_assert(isinstance(BLOCK, tl.constexpr) and BLOCK.value == 16)
    HALF: tl.constexpr = BLOCK // 2
    tl.static_assert(isinstance(BLOCK // 2, tl.constexpr) and HALF == 8)
    tl.static_assert(BLOCK > HALF and (BLOCK == 16) and int(BLOCK) == 16 and ACTIVATIONS[ACT] == 1)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    total = tl.zeros([BLOCK], dtype=DTYPE)
    for _ in range(HALF):                  # Python range over a constexpr
        total += 1
    for i in tl.static_range(SCALE):       # module-level tl.constexpr global
        total += i
    y = helper(x.to(DTYPE), HALF, SCALE) + total + BLOCK   # constexpr + tile gives a tile
    if ACT == "relu":
        y = tl.maximum(y, 0)
    if HAS_BIAS:
        y = y + BIAS
    if DTYPE.is_fp32():
        y = y * 1
    tl.store(o_ptr + offs, y.to(tl.float32), mask=mask)


def test_constexpr_parameters_and_globals(rng):
    x = rng.integers(-40, 40, 16).astype(np.int32)
    o = np.zeros(16, np.float32)
    constexpr_kernel[(1,)](x, o, 13, BLOCK=16, DTYPE=tl.float32, ACT="relu", HAS_BIAS=True, BIAS=0.5)
    y = x.astype(np.float32) * 3 + 8 + 8 + (0 + 1 + 2) + 16
    want = np.where(np.arange(16) < 13, np.maximum(y, 0) + 0.5, 0)
    np.testing.assert_array_equal(o, want)


def test_cache_keys_hold_plain_values(rng):
    x, o = np.ones(16, np.int32), np.zeros(16, np.float32)
    constexpr_kernel.cache.clear()
    constexpr_kernel[(1,)](x, o, 13, BLOCK=16, DTYPE=tl.float32, ACT="relu", HAS_BIAS=False, BIAS=0.0)
    constexpr_kernel[(1,)](x, o, 11, BLOCK=16, DTYPE=tl.float32, ACT="relu", HAS_BIAS=False, BIAS=0.0)
    assert len(constexpr_kernel.cache) == 1
    (key,) = constexpr_kernel.cache
    flat = repr(key)
    assert "constexpr[" not in flat and "16" in flat


@tiles.jit
def none_kernel(x_ptr, bias_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offs)
    tl.store(o_ptr + offs, x)


def test_none_stays_none(rng):
    x = rng.standard_normal(8).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    o = np.zeros(8, np.float32)
    none_kernel[(1,)](x, None, o, N=8)
    np.testing.assert_array_equal(o, x)
    none_kernel[(1,)](x, b, o, N=8)
    np.testing.assert_array_equal(o, x + b)


def test_constexpr_static_assert_failure_names_line():
    @tiles.jit
    def k(x_ptr, BLOCK: tl.constexpr):
        tl.static_assert(BLOCK % 32 == 0, "BLOCK must be a multiple of 32")
        tl.store(x_ptr, 1)
    with pytest.raises(CompilationError, match="BLOCK must be a multiple of 32") as info:
        k[(1,)](np.zeros(1, np.int32), BLOCK=16)
    assert info.value.loc.line > 0


@tiles.jit
def plain_ints_to_helper_kernel(x_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, helper(tl.load(x_ptr + offs), 5, 2))   # helper sees constexpr objects


def test_helper_constexpr_parameters_get_constexpr_objects(rng):
    x = rng.integers(-9, 9, 8).astype(np.int32)
    o = np.zeros(8, np.int32)
    plain_ints_to_helper_kernel[(1,)](x, o, N=8)
    np.testing.assert_array_equal(o, x * 2 + 5)


@tiles.jit
def host_constexpr_kernel(x_ptr, o_ptr, n, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.load(x_ptr + offs) + n + SCALE)


def test_constexpr_objects_from_the_host_are_keyed_on_their_values(rng):
    x = rng.integers(-9, 9, 8).astype(np.int32)
    o = np.zeros(8, np.int32)
    host_constexpr_kernel.cache.clear()
    host_constexpr_kernel[(1,)](x, o, 4, N=tl.constexpr(8))
    np.testing.assert_array_equal(o, x + 4 + 3)
    host_constexpr_kernel[(1,)](x, o, tl.constexpr(5), N=8)   # a run-time parameter given a constexpr
    np.testing.assert_array_equal(o, x + 5 + 3)
    assert "constexpr[" not in repr(list(host_constexpr_kernel.cache))


@tiles.jit
def lowest(dtype):
    """FlagGems' limits helpers: a dtype argument is a constexpr object (``.value`` is the dtype)."""
    dt = dtype.value
    if dt.is_floating():
        return float("-inf")
    return -1 * 2 ** (dt.int_bitwidth - 1)


@tiles.jit
def dtype_to_helper_kernel(x_ptr, o_ptr, n, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs, mask=offs < n, other=lowest(x_ptr.dtype.element_ty))
    tl.store(o_ptr, tl.max(x, 0))
    tl.store(o_ptr + 1, tl.min(x, 0))  # a padding lane: the type's lowest value


@pytest.mark.parametrize("dtype", [np.int16, np.float32])
def test_helper_gets_dtype_arguments_as_constexpr_objects(rng, dtype):
    x = (rng.integers(-90, 90, 8) - 100).astype(dtype)  # all negative: a padding of 0 would win the max
    o = np.zeros(2, dtype)
    dtype_to_helper_kernel[(1,)](x, o, 5, N=8)
    np.testing.assert_array_equal(o, [x[:5].max(), np.iinfo(dtype).min if dtype == np.int16 else -np.inf])


@tiles.constexpr_function
def _padded_width(k, dtype):
    return max(16, 1 << (k - 1).bit_length()) * (2 if dtype.primitive_bitwidth <= 16 else 1)


@tiles.jit
def constexpr_function_kernel(out_ptr, K: tl.constexpr):
    W: tl.constexpr = _padded_width(K, out_ptr.dtype.element_ty)
    tl.static_assert(isinstance(W, tl.constexpr))
    o = tl.arange(0, W)
    tl.store(out_ptr + o, o, mask=o < K)


@tiles.jit
def constexpr_function_on_tile_kernel(out_ptr, k):
    W: tl.constexpr = _padded_width(k, out_ptr.dtype.element_ty)
    tl.store(out_ptr, W)


def test_constexpr_function_gets_plain_values_and_gives_a_constexpr():
    """``@triton.constexpr_function`` (triton_kernels' helpers): ``int.bit_length`` works on the
    argument, the result is a constexpr, the host call is the plain function."""
    assert _padded_width(40, tl.float32) == 64 and _padded_width(40, tl.float16) == 128
    assert type(_padded_width(3, tl.int8)) is int
    out = np.full(64, -1, np.int32)
    constexpr_function_kernel[(1,)](out, K=40)
    np.testing.assert_array_equal(out[:40], np.arange(40))
    assert (out[40:] == -1).all()
    with pytest.raises(CompilationError, match="constexpr_function.*run-time tile"):
        constexpr_function_on_tile_kernel[(1,)](out, 40)


@tiles.jit
def constexpr_type_kernel(out_ptr, values, strides):
    tl.static_assert(values[1].type == tl.constexpr_type(3))
    tl.static_assert(isinstance(strides[1].type, tl.constexpr_type))  # an int 1 is specialized
    tl.store(out_ptr, tl.load(values[0]) + values[1] + strides[0])


def test_compile_time_values_have_a_constexpr_type(rng):
    """``x.type`` of a compile-time value is ``tl.constexpr_type(x)``, as in Triton: a
    ``tl.constexpr`` tuple element and a tuple's specialized 1 both answer so."""
    x = rng.integers(-100, 100, 1).astype(np.int32)
    out = np.zeros(1, np.int32)
    constexpr_type_kernel[(1,)](out, (x, tl.constexpr(3)), (7, 1))
    assert out[0] == x[0] + 3 + 7
