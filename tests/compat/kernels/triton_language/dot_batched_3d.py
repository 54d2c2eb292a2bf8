"""``tl.dot`` on 3-D tiles (a batch of matrix products in one program), with an fp32 accumulator
given as ``acc=``, ``input_precision="ieee"``, integer int8 x int8 -> int32 products and the
result permuted back with ``tl.trans(x, 0, 2, 1)``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _batched(a_ptr, b_ptr, c_ptr, d_ptr, B: tl.constexpr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr):
    ib = tl.arange(0, B)[:, None, None]
    im = tl.arange(0, M)[None, :, None]
    ik = tl.arange(0, K)
    inn = tl.arange(0, N)[None, None, :]
    a = tl.load(a_ptr + ib * M * K + im * K + ik[None, None, :])
    b = tl.load(b_ptr + ib * K * N + ik[None, :, None] * N + inn)
    bias = tl.full((B, M, N), 0.5, tl.float32)
    c = tl.dot(a, b, acc=bias, input_precision="ieee")
    tl.store(c_ptr + ib * M * N + im * N + inn, c)
    ct = tl.trans(c, 0, 2, 1)
    tl.store(d_ptr + ib * N * M + tl.arange(0, N)[None, :, None] * M + tl.arange(0, M)[None, None, :], ct)


@tiles.jit
def _batched_int8(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, K: tl.constexpr, N: tl.constexpr):
    ib = tl.arange(0, B)[:, None, None]
    im = tl.arange(0, M)[None, :, None]
    ik = tl.arange(0, K)
    inn = tl.arange(0, N)[None, None, :]
    a = tl.load(a_ptr + ib * M * K + im * K + ik[None, None, :])
    b = tl.load(b_ptr + ib * K * N + ik[None, :, None] * N + inn)
    c = tl.dot(a, b)
    tl.static_assert(c.dtype == tl.int32)
    tl.store(c_ptr + ib * M * N + im * N + inn, c)


def check(rng):
    B, M, K, N = 2, 16, 32, 16
    a = rng.standard_normal((B, M, K)).astype(np.float32)
    b = rng.standard_normal((B, K, N)).astype(np.float32)
    c = np.empty((B, M, N), np.float32)
    d = np.empty((B, N, M), np.float32)
    _batched[(1,)](a, b, c, d, B=B, M=M, K=K, N=N)
    expected = a.astype(np.float64) @ b + 0.5
    close(c, expected, rtol=1e-4, atol=1e-4)
    close(d, expected.transpose(0, 2, 1), rtol=1e-4, atol=1e-4)
    ai = rng.integers(-128, 128, (B, M, K), dtype=np.int8)
    bi = rng.integers(-128, 128, (B, K, N), dtype=np.int8)
    ai[0, 0, :] = -128
    bi[0, :, 0] = -128
    ci = np.empty((B, M, N), np.int32)
    _batched_int8[(1,)](ai, bi, ci, B=B, M=M, K=K, N=N)
    close(ci, ai.astype(np.int32) @ bi.astype(np.int32))
