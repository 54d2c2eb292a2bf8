"""The OpenCL backend against the interpreter: one kernel, both backends, compared."""

from __future__ import annotations

import dataclasses
import zlib

import ml_dtypes
import numpy as np
import opencl_kernels as K
import pytest

import tiles.language as tl
from tiles.backends import registry
from tiles.core.errors import UnsupportedError

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")

BF16 = np.dtype(ml_dtypes.bfloat16)
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def run_both(kernel, grid, make_args, **meta):
    """Launch on the interpreter and on OpenCL with fresh copies of the same inputs."""
    results = []
    for backend in ("interpreter", "opencl"):
        args = make_args()
        kernel[grid](*args, backend=backend, **meta)
        results.append(args)
    return results


def same(a, b, rtol=0.0, atol=0.0):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype in (BF16, np.float16):
        a, b = a.astype(np.float32), b.astype(np.float32)
    if rtol or atol:
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(b, a)


def ints(dtype, n, rng):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    edges = np.array([info.min, info.max, 0, 1, info.max // 2], dtype=dtype)
    x[:len(edges)] = edges
    return x


def floats(dtype, n, rng):
    x = (rng.standard_normal(n) * 4).astype(np.float64)
    x[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-3]
    return x.astype(np.dtype(dtype) if dtype != "bfloat16" else BF16)


def np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


N = 1000  # not a multiple of the block: masks matter
BLOCK = 256


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "floordiv", "mod", "xor", "shl", "shr", "maximum", "lt"])
def test_integer_binary(dtype, op):
    rng = np.random.default_rng(zlib.crc32(f"{dtype}-{op}".encode()))
    x, y = ints(dtype, N, rng), ints(dtype, N, rng)
    if op in ("shl", "shr"):
        y = rng.integers(0, np.iinfo(dtype).bits + 2, N).astype(dtype)
    if op in ("floordiv", "mod"):
        y[:8] = [0, 1, 0, 1, 2, 3, 0, 7]
        if np.iinfo(dtype).min < 0:
            y[0] = -1  # INT_MIN / -1
    out_dt = np.bool_ if op == "lt" else dtype
    a, b = run_both(K.binary_kernel, (4,), lambda: (x.copy(), y.copy(), np.zeros(N, out_dt), N),
                    OP=op, BLOCK=BLOCK)
    same(a[2], b[2])


@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64"])
def test_umulhi(dtype):
    rng = np.random.default_rng(7)
    x, y = ints(dtype, N, rng), ints(dtype, N, rng)
    a, b = run_both(K.binary_kernel, (4,), lambda: (x, y, np.zeros(N, dtype), N), OP="umulhi", BLOCK=BLOCK)
    same(a[2], b[2])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "mod", "maximum", "minimum", "maximum_nan", "ne",
                                "fma"])
def test_float_binary(dtype, op):
    rng = np.random.default_rng(zlib.crc32(f"{dtype}-{op}".encode()))
    x, y = floats(dtype, N, rng), floats(dtype, N, rng)[::-1].copy()
    out_dt = np.bool_ if op == "ne" else np_dtype(dtype)
    if op == "fma":  # x * y + x, rounded once
        a, b = run_both(K.fma_where_kernel, (4,), lambda: (x, y, x, np.zeros(N, out_dt), N), OP=op, BLOCK=BLOCK)
        same(a[3], b[3])
        return
    a, b = run_both(K.binary_kernel, (4,), lambda: (x, y, np.zeros(N, out_dt), N), OP=op, BLOCK=BLOCK)
    same(a[2], b[2])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("op", ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf",
                                "floor", "ceil", "abs", "neg", "isnan"])
def test_float_unary(dtype, op):
    rng = np.random.default_rng(3)
    x = floats(dtype, N, rng)
    if op in ("log", "log2", "sqrt", "rsqrt"):
        x = np.abs(x)
    out_dt = np.bool_ if op == "isnan" else np_dtype(dtype)
    a, b = run_both(K.unary_kernel, (4,), lambda: (x, np.zeros(N, out_dt), N), OP=op, BLOCK=BLOCK)
    exact = op in ("floor", "ceil", "abs", "neg", "isnan", "sqrt")
    tol = {"float16": 1e-3, "bfloat16": 8e-3, "float32": 2e-6, "float64": 1e-13}[dtype]
    same(a[1], b[1], *(() if exact else (tol, tol)))


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint16"])
@pytest.mark.parametrize("op", ["neg", "not", "abs"])
def test_integer_unary(dtype, op):
    x = ints(dtype, N, np.random.default_rng(5))
    a, b = run_both(K.unary_kernel, (4,), lambda: (x, np.zeros(N, dtype), N), OP=op, BLOCK=BLOCK)
    same(a[1], b[1])


CASTS = [("float32", "int8"), ("float32", "int32"), ("float32", "uint8"), ("float32", "int64"),
         ("float32", "float16"), ("float32", "bfloat16"), ("float64", "float16"),
         ("float64", "bfloat16"), ("float64", "float32"), ("int32", "float32"), ("int32", "float16"),
         ("int64", "bfloat16"), ("float16", "float32"), ("bfloat16", "float64"), ("int32", "int8"),
         ("uint8", "int64"), ("float16", "int16"), ("bfloat16", "bool"), ("int32", "bool"),
         ("bool", "float32"), ("float16", "bfloat16")]


@pytest.mark.parametrize("src,dst", CASTS)
def test_cast(src, dst):
    rng = np.random.default_rng(11)
    if src == "bool":
        x = rng.integers(0, 2, N).astype(np.bool_)
    elif np_dtype(src).kind in "iu":
        x = ints(src, N, rng)
    else:
        x = floats(src, N, rng)
        with np.errstate(over="ignore"):  # 1e10 is inf in 16-bit floats, as intended
            x[6:12] = np.array([1e10, -1e10, 300.5, -129.5, 65519.0, 2.5], np.float64).astype(x.dtype)
        x[12:] = (x[12:].astype(np.float64) * 1e3).astype(x.dtype)
    a, b = run_both(K.cast_kernel, (4,), lambda: (x, np.zeros(N, np_dtype(dst)), N),
                    BLOCK=BLOCK, BITCAST=False, RTZ=False)
    same(a[1], b[1])


@pytest.mark.parametrize("src,dst", [("float32", "int32"), ("int32", "float32"), ("float16", "int16"),
                                     ("int16", "float16"), ("bfloat16", "uint16"), ("uint16", "bfloat16"),
                                     ("float64", "uint64")])
def test_bitcast(src, dst):
    rng = np.random.default_rng(13)
    x = ints(src, N, rng) if np_dtype(src).kind in "iu" else floats(src, N, rng)
    if x.itemsize == 2:  # NaN payloads (signalling, quiet, negative) and infinities must keep their bits
        x[:6] = np.array([0x7C01, 0x7E00, 0xFE01, 0x7DFF, 0x7C00, 0xFC00], np.uint16).view(x.dtype)
    a, b = run_both(K.cast_kernel, (4,), lambda: (x, np.zeros(N, np_dtype(dst)), N),
                    BLOCK=BLOCK, BITCAST=True, RTZ=False)
    same(a[1].view(np.uint8), b[1].view(np.uint8))


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float32", "bfloat16"), ("float64", "float32")])
def test_cast_round_toward_zero(src, dst):
    x = floats(src, N, np.random.default_rng(17)) * np.array(1.37, dtype=src)
    a, b = run_both(K.cast_kernel, (4,), lambda: (x, np.zeros(N, np_dtype(dst)), N),
                    BLOCK=BLOCK, BITCAST=False, RTZ=True)
    same(a[1], b[1])


# ---------------------------------------------------------------- reductions and scans


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("kind", ["sum", "max", "min", "custom"])
@pytest.mark.parametrize("axis", [0, 1])
def test_reduce_axis(dtype, kind, axis):
    rng = np.random.default_rng(19)
    m, n = 16, 64
    if dtype == "float32":
        x = rng.standard_normal((m, n)).astype(np.float32)
        x[3, 5], x[7, :] = np.nan, np.inf  # NaN loses to numbers in max/min; inf rows
        x[:, 9] = -np.inf
        if kind in ("sum", "custom"):
            x[3, 5] = 0.5
    else:
        x = rng.integers(-1000, 1000, (m, n)).astype(np.int32)
        x[2, 3] = x[2, 4]  # ties: argmax/argmin take the lowest index
    size = n if axis == 0 else m
    a, b = run_both(K.reduce_kernel, (1,), lambda: (x, np.zeros(size, x.dtype), np.zeros(size, np.int32)),
                    M=m, N=n, AXIS=axis, KIND=kind)
    same(a[1], b[1], *((1e-5, 1e-5) if kind == "sum" and dtype == "float32" else ()))
    same(a[2], b[2])


@pytest.mark.parametrize("num_warps", [1, 4])
def test_reduce_axis_per_thread_rows(num_warps):
    """The last axis holds whole rounds of the layout: no staging, one tree per row."""
    x = np.random.default_rng(23).integers(-9, 9, (4, 512)).astype(np.int32)
    a, b = run_both(K.reduce_kernel, (1,), lambda: (x, np.zeros(4, np.int32), np.zeros(4, np.int32)),
                    M=4, N=512, AXIS=1, KIND="xor", num_warps=num_warps)
    same(a[1], b[1])
    same(a[2], b[2])


@pytest.mark.parametrize("n", [1, 100, 128, 1000])
def test_full_reduce_with_masks(n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    a, b = run_both(K.full_reduce_kernel, (1,), lambda: (x, np.zeros(3, np.float32), n), BLOCK=1024)
    same(a[1], b[1], 1e-5, 1e-6)


def test_argmax_all_nan_and_nan_ignored():
    x = np.random.default_rng(29).standard_normal((16, 64)).astype(np.float32)
    x[:, 0] = np.nan
    x[:, 5] = np.nan
    a, b = run_both(K.reduce_kernel, (1,), lambda: (x, np.zeros(64, np.float32), np.zeros(64, np.int32)),
                    M=16, N=64, AXIS=0, KIND="max")
    same(a[1], b[1])
    same(a[2], b[2])


def test_softmax_rows():
    x = (np.random.default_rng(31).standard_normal((6, 777)) * 10).astype(np.float32)
    a, b = run_both(K.softmax_kernel, (6,), lambda: (x, np.zeros_like(x), 777, 777), BLOCK=1024,
                    num_warps=8)
    same(a[1], b[1], 1e-5, 1e-8)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum(axis, reverse):
    x = np.random.default_rng(37).integers(-2**31, 2**31 - 1, (8, 32)).astype(np.int32)  # wraps
    a, b = run_both(K.scan_kernel, (1,), lambda: (x, np.zeros_like(x)), M=8, N=32, AXIS=axis, REVERSE=reverse)
    same(a[1], b[1])


# ---------------------------------------------------------------- shapes


@pytest.mark.parametrize("op", ["trans", "reshape", "broadcast", "join", "cat", "sort", "sort_desc"])
def test_shape_ops(op):
    x = np.random.default_rng(41).standard_normal((16, 32)).astype(np.float32)
    x[0, 3] = x[0, 4]
    a, b = run_both(K.shape_kernel, (1,), lambda: (x, np.zeros(2 * x.size, np.float32)), M=16, N=32, OP=op)
    same(a[1], b[1])


def test_histogram_and_gather():
    x = np.random.default_rng(43).integers(-2, 12, 64).astype(np.int32)  # out-of-range values count nowhere
    a, b = run_both(K.histogram_gather_kernel, (1,),
                    lambda: (x, np.zeros(8, np.int32), np.zeros(64, np.int32)), N=64, BINS=8)
    same(a[1], b[1])
    same(a[2], b[2])


# ---------------------------------------------------------------- control flow, atomics, dot, random


@pytest.mark.parametrize("n", [3, 7])
def test_loops_and_if(n):
    x = np.random.default_rng(n).standard_normal((n, 128)).astype(np.float32)
    a, b = run_both(K.loops_kernel, (1,), lambda: (x, np.zeros(128, np.float32), n), BLOCK=128)
    same(a[1], b[1], 1e-6, 1e-6)


def test_atomics_with_contention():
    n = 3000
    rng = np.random.default_rng(47)
    idx = rng.integers(0, 8, n).astype(np.int32)
    vals = rng.integers(-5, 5, n).astype(np.float32)  # small integers: float sums are exact in any order
    a, b = run_both(K.atomic_kernel, (12,), lambda: (np.zeros(9, np.int32), np.zeros(8, np.float32),
                                                      np.full(8, -1, np.int32), idx, vals,
                                                      np.zeros(12, np.int32), n), BLOCK=256)
    for i in range(3):
        same(a[i], b[i])
    assert sorted(b[5].tolist()) == list(range(12))  # one scalar atomic per program, not per thread


@pytest.mark.parametrize("prec", ["ieee", "tf32"])
def test_dot(prec):
    rng = np.random.default_rng(53)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    y = rng.standard_normal((16, 64)).astype(np.float32)
    a, b = run_both(K.dot_kernel, (1,), lambda: (x, y, np.zeros((32, 64), np.float32)),
                    M=32, N=64, K=16, PREC=prec)
    same(a[2], b[2], 1e-5, 1e-5)


def test_dot_int8():
    rng = np.random.default_rng(59)
    x = rng.integers(-128, 127, (16, 32)).astype(np.int8)
    y = rng.integers(-128, 127, (32, 16)).astype(np.int8)
    a, b = run_both(K.dot_kernel, (1,), lambda: (x, y, np.zeros((16, 16), np.int32)), M=16, N=16, K=32,
                    PREC="ieee")
    same(a[2], b[2])


def test_random_bit_exact():
    a, b = run_both(K.rand_kernel, (4,), lambda: (np.zeros(2000, np.uint32), 1234, 1000), BLOCK=256)
    same(a[0], b[0])


@pytest.mark.parametrize("flag", [True, False])
def test_scalars_and_bool_argument(flag):
    a, b = run_both(K.scalar_kernel, (1,), lambda: (np.array([3.5], np.float32), np.zeros(1, np.float32),
                                                     flag, 0.25))
    same(a[1], b[1])


def test_pyopencl_arrays_are_used_in_place():
    import pyopencl.array as cla

    from tiles.backends.opencl import runtime
    _, queue, _ = runtime.device()
    x = np.random.default_rng(61).standard_normal(N).astype(np.float32)
    dx, dy = cla.to_device(queue, x), cla.to_device(queue, x[::-1].copy())
    out = cla.zeros(queue, N, np.float32)
    K.binary_kernel[(4,)](dx, dy, out, N, OP="add", BLOCK=BLOCK, backend="opencl")
    same(x + x[::-1], out.get())


def test_declared_unsupported_dtype_names_the_line(monkeypatch):
    """A dtype the device's target leaves out (float8e5 here, taken out by hand: pocl has them all)."""
    from tiles.backends.opencl import OpenCLBackend
    real = OpenCLBackend.target
    monkeypatch.setattr(OpenCLBackend, "target",
                        lambda self: dataclasses.replace(real(self), dtypes=real(self).dtypes - {tl.float8e5}))
    x = np.zeros(1, np.float32)
    with pytest.raises(UnsupportedError) as err:
        K.fp8_kernel[(1,)](x, backend="opencl")
    assert "opencl_kernels.py:" in str(err.value) and "float8e5" in str(err.value)


def test_stages_and_vector_loads():
    x = np.zeros(4096, np.float32)
    compiled = K.binary_kernel.warmup(x, x, x, 4096, OP="add", BLOCK=1024, grid=(4,), backend="opencl")
    assert {"ir", "opencl", "build"} <= set(compiled.asm)
    from tiles.backends.opencl import runtime
    assert ("binary" in compiled.asm) == runtime.keeps_binaries()  # not on pocl: never used there
    assert "float4" in compiled.asm["opencl"]  # contiguous, 16-byte aligned, mask constant per chunk
    odd = K.binary_kernel.warmup(x, x, x, 4095, OP="add", BLOCK=1024, grid=(4,), backend="opencl")
    assert "float4" not in odd.asm["opencl"]  # n % 4 != 0: the mask may change inside a chunk
