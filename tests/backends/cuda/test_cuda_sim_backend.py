"""The ``cuda-sim`` backend: CUDA's lowering run on the SIMT simulator, checked against the interpreter.

Each kernel launches twice, on the interpreter and on ``cuda-sim``, with fresh random inputs; the
simulator's elementwise ops are the interpreter's, so what differs is the lowering (layouts,
reductions, tensor-core fragments, vectorized and masked accesses, atomics).
"""

from __future__ import annotations

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry


def both(kernel, grid, make_args, **consts):
    """The outputs of ``kernel`` on the interpreter and on cuda-sim (fresh copies of the same inputs)."""
    outs = []
    for backend in ("interpreter", "cuda-sim"):
        args = make_args()
        kernel[grid](*args, **consts, backend=backend)
        outs.append([a for a in args if isinstance(a, np.ndarray)])
    return outs


@tiles.jit
def dot_kernel(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    x = tl.load(a + rm[:, None] * K + rk[None, :])
    y = tl.load(b + rk[:, None] * N + rn[None, :])
    tl.store(c + rm[:, None] * N + rn[None, :], tl.dot(x, y, input_precision=PRECISION))


def test_backend_is_available_without_a_gpu():
    backend = registry.get("cuda-sim")
    assert backend.available() == (True, "")
    assert backend.target().warp_size == 32


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_int8_dot_takes_mma_m16n8k32(dtype):
    rng = np.random.default_rng(7)
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max, (32, 64), endpoint=True).astype(dtype)
    b = rng.integers(info.min, info.max, (64, 16), endpoint=True).astype(dtype)
    ref = a.astype(np.int64) @ b.astype(np.int64)
    interp, sim = both(dot_kernel, (1,), lambda: [a.copy(), b.copy(), np.full((32, 16), 7, np.int32)],
                       M=32, N=16, K=64, PRECISION="ieee")
    np.testing.assert_array_equal(interp[2], ref.astype(np.int32))
    np.testing.assert_array_equal(sim[2], ref.astype(np.int32))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_float_dots_match_the_interpreter(dtype):
    import ml_dtypes
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((32, 32)).astype(np_dtype)
    b = rng.standard_normal((32, 16)).astype(np_dtype)
    precision = "tf32" if dtype == "float32" else "ieee"
    interp, sim = both(dot_kernel, (1,), lambda: [a.copy(), b.copy(), np.full((32, 16), 7, np.float32)],
                       M=32, N=16, K=32, PRECISION=precision)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    tol = 2e-2 if dtype == "float32" else 1e-4  # tf32 keeps 10 mantissa bits
    np.testing.assert_allclose(sim[2], exact, rtol=tol, atol=tol)
    np.testing.assert_allclose(sim[2], interp[2], rtol=tol, atol=tol)


@tiles.jit
def histogram_kernel(x, bins, seen, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=0)
    tl.atomic_add(bins + v % 8, 1, mask=m)
    old = tl.atomic_max(bins + 8, v, mask=m)
    tl.store(seen + offs, old, mask=m)
    tl.atomic_cas(bins + 9, 0, tl.program_id(0) + 1)


def test_atomics_match_the_interpreter():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 1000, 300).astype(np.int32)
    interp, sim = both(histogram_kernel, (3,), lambda: [x.copy(), np.zeros(10, np.int32),
                                                        np.full(300, -1, np.int32), 300], BLOCK=128)
    np.testing.assert_array_equal(sim[1][:8], np.bincount(x % 8, minlength=8))
    assert sim[1][8] == x.max()
    assert sim[1][9] == 1  # the first program swapped it in
    np.testing.assert_array_equal(sim[1], interp[1])
    for old in (sim[2], interp[2]):  # what each atomic max saw: a value already there
        assert ((old >= 0) & (old <= x.max())).all()


@tiles.jit
def row_stats_kernel(x, out, n_cols, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    v = tl.load(x + row * stride + cols, mask=cols < n_cols, other=float("-inf"))
    first = tl.sum(tl.where(cols == 0, v, 0.0), 0)
    e = tl.exp(v - tl.max(v, 0))
    tl.store(out + row * stride + cols, e / tl.sum(e, 0) + first, mask=cols < n_cols)


def test_masked_row_softmax_with_edge_values():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5, 37)).astype(np.float32)
    x[1, 3], x[2, 0], x[3, 36] = -0.0, np.float32(3e38), -np.inf
    interp, sim = both(row_stats_kernel, (5,), lambda: [x.copy(), np.full_like(x, 9.0), 37, 37], BLOCK=64)
    np.testing.assert_allclose(sim[1], interp[1], rtol=1e-6, atol=1e-6)


@tiles.jit
def small_dot_kernel(x_ptr, y_ptr, out_ptr, sums_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    acc = tl.dot(x, x, tl.load(y_ptr + rows * N + cols))  # the accumulator comes from a blocked load
    tl.store(out_ptr + rows * N + cols, acc + cols)
    tl.store(sums_ptr + tl.arange(0, M), tl.sum(tl.where(cols == 0, acc, 0.0), axis=1))


@pytest.mark.parametrize("warps", [4, 8])
def test_a_tile_with_one_element_per_thread_enters_the_mma_layout(rng, warps):
    # 16 x 16 over 8 warps: each thread holds one element of a blocked tile, so its handles are
    # trivially "all equal"; taking that for a uniform tile put the thread's one value in every
    # fragment slot (the accumulator, `+ cols` and `cols == 0` came out wrong)
    x = rng.integers(-4, 5, (16, 16)).astype(np.float16)
    y = rng.standard_normal((16, 16)).astype(np.float32)
    want = x.astype(np.float64) @ x.astype(np.float64) + y
    interp, sim = both(small_dot_kernel, (1,), lambda: [x.copy(), y.copy(), np.zeros((16, 16), np.float32),
                                                         np.zeros(16, np.float32)], M=16, N=16, num_warps=warps)
    for out in (interp, sim):
        np.testing.assert_allclose(out[2], want + np.arange(16), rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(out[3], want[:, 0], rtol=1e-5, atol=1e-4)
