"""tl.dot: 2D and batched 3D, fp16 -> fp32, int8 -> int32, accumulators, tf32 vs ieee."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               PRECISION: tl.constexpr, OUT: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b, input_precision=PRECISION, out_dtype=OUT)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@pytest.mark.parametrize("m,n,k", [(16, 16, 16), (32, 64, 16), (16, 32, 64)])
def test_fp32_ieee(rng, m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.empty((m, n), np.float32)
    dot_kernel[(1,)](a, b, c, M=m, N=n, K=k, PRECISION="ieee", OUT=tl.float32)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


def round_to_tf32(x):
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000
    return rounded.astype(np.uint32).view(np.float32)


def test_tf32_rounds_inputs_to_10_mantissa_bits(rng):
    a = np.full((16, 16), 1 + 2**-20, np.float32)   # not representable in tf32: rounds to 1
    b = np.ones((16, 16), np.float32)
    ieee, tf32 = np.empty((16, 16), np.float32), np.empty((16, 16), np.float32)
    dot_kernel[(1,)](a, b, ieee, M=16, N=16, K=16, PRECISION="ieee", OUT=tl.float32)
    dot_kernel[(1,)](a, b, tf32, M=16, N=16, K=16, PRECISION="tf32", OUT=tl.float32)
    np.testing.assert_array_equal(ieee, np.float32(16 * (1 + 2**-20)))
    np.testing.assert_array_equal(tf32, np.float32(16))
    a = rng.standard_normal((16, 32)).astype(np.float32)
    b = rng.standard_normal((32, 16)).astype(np.float32)
    c = np.empty((16, 16), np.float32)
    dot_kernel[(1,)](a, b, c, M=16, N=16, K=32, PRECISION="tf32", OUT=tl.float32)
    want = round_to_tf32(a).astype(np.float64) @ round_to_tf32(b)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


@tiles.jit
def dot_flags_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                     PRECISION: tl.constexpr, ALLOW: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, input_precision=PRECISION, allow_tf32=ALLOW))


@pytest.mark.parametrize("precision,allow,rounded", [
    (None, None, True),        # the default, as in Triton: tf32
    (None, True, True), (None, False, False),
    ("tf32", None, True), ("ieee", None, False), ("tf32x3", None, False),
    ("ieee", True, False),     # input_precision wins over allow_tf32
])
def test_float32_inputs_are_rounded_to_tf32_exactly_when_the_precision_says(rng, precision, allow, rounded):
    """Against the identity every product is one input times 1, exact in any summation order: the
    result is the input itself, or the input rounded to tf32 (nearest even), bit for bit."""
    m, k = 32, 16
    a = (rng.standard_normal((m, k)) * 3).astype(np.float32)
    a[0, :4] = [1 + 2**-20, 1 + 3 * 2**-11, -(1 + 2**-11), 2**-126 * 1.5]  # ties to even; near the smallest normal
    assert not np.array_equal(round_to_tf32(a), a)
    eye = np.eye(k, dtype=np.float32)
    c = np.full((m, k), np.nan, np.float32)
    dot_flags_kernel[(1,)](a, eye, c, M=m, N=k, K=k, PRECISION=precision, ALLOW=allow)
    np.testing.assert_array_equal(c, round_to_tf32(a) if rounded else a)
    c_t = np.full((k, m), np.nan, np.float32)  # the rounding applies to the right operand too
    dot_flags_kernel[(1,)](eye, np.ascontiguousarray(a.T), c_t, M=k, N=m, K=k, PRECISION=precision, ALLOW=allow)
    np.testing.assert_array_equal(c_t, (round_to_tf32(a) if rounded else a).T)


def test_fp16_inputs_accumulate_in_fp32(rng):
    a = rng.standard_normal((32, 64)).astype(np.float16)
    b = rng.standard_normal((64, 16)).astype(np.float16)
    c = np.empty((32, 16), np.float32)
    dot_kernel[(1,)](a, b, c, M=32, N=16, K=64, PRECISION="ieee", OUT=tl.float32)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)
    c16 = np.empty((32, 16), np.float16)
    dot_kernel[(1,)](a, b, c16, M=32, N=16, K=64, PRECISION="ieee", OUT=tl.float16)
    np.testing.assert_allclose(c16.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32),
                               rtol=2e-2, atol=5e-2)


def test_int8_accumulates_in_int32(rng):
    a = rng.integers(-128, 128, (16, 64)).astype(np.int8)
    b = rng.integers(-128, 128, (64, 32)).astype(np.int8)
    a[0, :] = -128
    b[:, 0] = -128                                  # 64 * 16384: far beyond int16
    c = np.empty((16, 32), np.int32)
    dot_kernel[(1,)](a, b, c, M=16, N=32, K=64, PRECISION="ieee", OUT=tl.int32)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@tiles.jit
def batched_dot_kernel(a_ptr, b_ptr, acc_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
                       K: tl.constexpr):
    rb = tl.arange(0, B)[:, None, None]
    rm = tl.arange(0, M)[None, :, None]
    rn = tl.arange(0, N)[None, None, :]
    rk_col = tl.arange(0, K)[None, None, :]
    rk_row = tl.arange(0, K)[None, :, None]
    a = tl.load(a_ptr + rb * M * K + rm * K + rk_col)
    b = tl.load(b_ptr + rb * K * N + rk_row * N + rn)
    acc = tl.load(acc_ptr + rb * M * N + rm * N + rn)
    tl.store(c_ptr + rb * M * N + rm * N + rn, tl.dot(a, b, acc, input_precision="ieee"))


def test_batched_3d_dot_with_accumulator(rng):
    a = rng.standard_normal((2, 16, 32)).astype(np.float32)
    b = rng.standard_normal((2, 32, 16)).astype(np.float32)
    acc = rng.standard_normal((2, 16, 16)).astype(np.float32)
    c = np.empty_like(acc)
    batched_dot_kernel[(1,)](a, b, acc, c, B=2, M=16, N=16, K=32)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b + acc, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (2, 4, 8), (16, 16, 8), (16, 2, 16), (4, 32, 16), (8, 8, 32)])
def test_dot_below_16(rng, m, n, k):
    """M, N or K below 16 work, as on Triton's interpreter and AMD backend (M, N >= 1; its NVIDIA
    backend takes M and N of 1 too, but wants K >= 16 for 16-bit operands, 8 for float32)."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.empty((m, n), np.float32)
    dot_kernel[(1,)](a, b, c, M=m, N=n, K=k, PRECISION="ieee", OUT=tl.float32)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    dot_kernel[(1,)](a16, b16, c, M=m, N=n, K=k, PRECISION="ieee", OUT=tl.float32)
    np.testing.assert_allclose(c, a16.astype(np.float64) @ b16.astype(np.float64), rtol=1e-5, atol=1e-5)
    ai = rng.integers(-128, 128, (m, k)).astype(np.int8)
    bi = rng.integers(-128, 128, (k, n)).astype(np.int8)
    ci = np.empty((m, n), np.int32)
    dot_kernel[(1,)](ai, bi, ci, M=m, N=n, K=k, PRECISION="ieee", OUT=tl.int32)
    np.testing.assert_array_equal(ci, ai.astype(np.int32) @ bi.astype(np.int32))


def test_small_batched_dot(rng):
    a = rng.standard_normal((2, 4, 8)).astype(np.float32)
    b = rng.standard_normal((2, 8, 2)).astype(np.float32)
    acc = rng.standard_normal((2, 4, 2)).astype(np.float32)
    c = np.empty_like(acc)
    batched_dot_kernel[(1,)](a, b, acc, c, B=2, M=4, N=2, K=8)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b + acc, rtol=1e-5, atol=1e-5)


@tiles.jit
def mismatched_dot(p_ptr):
    r8, r16 = tl.arange(0, 8), tl.arange(0, 16)
    a = tl.load(p_ptr + r16[:, None] * 8 + r8[None, :])
    tl.store(p_ptr + r16[:, None] * 16 + r16[None, :], tl.dot(a, a.reshape(8, 16).trans()))


def test_dot_shape_errors():
    with pytest.raises(tiles.CompilationError, match="inner dimensions differ"):
        mismatched_dot[(1,)](np.ones(256, np.float32))


@tiles.jit
def dot_acc_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr, OUT: tl.constexpr, WITH_ACC: tl.constexpr):
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    a, b = tl.load(a_ptr + offs), tl.load(b_ptr + offs)
    if WITH_ACC:
        c = tl.dot(a, b, tl.load(c_ptr + offs), out_dtype=OUT)
    else:
        c = tl.dot(a, b, out_dtype=OUT)
    tl.store(c_ptr + offs, c)


def test_result_dtype_follows_the_operands_like_triton():
    """float64 operands give float64 (not out_dtype's float32); float32 and bfloat16 give float32
    whatever out_dtype says; float16 gives out_dtype."""
    tiny = 2.0 ** -40                                # lost in float32: 1 + tiny == 1
    a = np.full((16, 16), 1 + tiny)
    c = np.zeros((16, 16))
    dot_acc_kernel[(1,)](a, np.eye(16), c, N=16, OUT=tl.float32, WITH_ACC=False)
    np.testing.assert_array_equal(c, 1 + tiny)
    a32 = np.zeros((16, 16), np.float32)
    a32[:, 0], a32[:, 1] = 1, 2.0 ** -11                # tf32-exact; 1 + 2^-11 rounds to 1 in float16
    c32 = np.zeros((16, 16), np.float32)
    dot_acc_kernel[(1,)](a32, np.ones((16, 16), np.float32), c32, N=16, OUT=tl.float16, WITH_ACC=False)
    np.testing.assert_array_equal(c32, np.float32(1 + 2.0 ** -11))
    a16 = np.full((16, 16), 1 + 2.0 ** -10, np.float16)
    c16 = np.zeros((16, 16), np.float32)
    dot_acc_kernel[(1,)](a16, a16, c16, N=16, OUT=tl.float16, WITH_ACC=False)  # 16.03 -> float16
    np.testing.assert_array_equal(c16, np.float32(np.float16(16 * (1 + 2.0 ** -10) ** 2)))


def test_accumulator_and_out_dtype_errors():
    a = np.ones((16, 16))
    with pytest.raises(tiles.CompilationError, match="float64 operands accumulates in float64"):
        dot_acc_kernel[(1,)](a, a, np.zeros((16, 16), np.float32), N=16, OUT=tl.float32, WITH_ACC=True)
    a16 = np.ones((16, 16), np.float16)
    with pytest.raises(tiles.CompilationError, match="out_dtype=bfloat16 is unsupported"):
        dot_acc_kernel[(1,)](a16, a16, np.zeros((16, 16), np.float32), N=16, OUT=tl.bfloat16,
                             WITH_ACC=False)
