"""A program's global loads and stores of one buffer by different threads keep tile order on OpenCL
(lowering/hazards.py): pocl runs a work-group's items one after another between barriers, so
without a program barrier one item's store overwrote what a later item still had to read (Triton's
test_dot ``add-rows``/``add-cols`` epilogues: 3840 of 4096 elements wrong).  Random inputs, odd
sizes, NumPy references; an in-place elementwise update takes no barrier."""

from __future__ import annotations

import numpy as np
import pytest
from test_opencl_barriers import barriers

import tiles
import tiles.language as tl
from tiles.backends import registry

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")


@tiles.jit
def dot_add_edge(X, Y, Z, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ROWS: tl.constexpr):
    """Triton's test_dot epilogue: z = x @ y + column 0 (ROWS) or row 0 of Z, stored over Z."""
    m = tl.arange(0, BM)
    n = tl.arange(0, BN)
    k = tl.arange(0, BK)
    x = tl.load(X + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
    y = tl.load(Y + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
    z = tl.dot(x, y, input_precision="ieee")
    if ROWS:
        z += tl.load(Z + m * N, mask=m < M, other=0.0)[:, None]
    else:
        z += tl.load(Z + n, mask=n < N, other=0.0)[None, :]
    tl.store(Z + m[:, None] * N + n[None, :], z, mask=(m[:, None] < M) & (n[None, :] < N))


@tiles.jit
def shift_in_place(Z, N, BLOCK: tl.constexpr):
    """z[i] = z[i] + z[(i + 1) % N]: every element read by another thread than the one writing it."""
    i = tl.arange(0, BLOCK)
    a = tl.load(Z + i, mask=i < N)
    b = tl.load(Z + (i + 1) % N, mask=i < N)
    tl.store(Z + i, a + b, mask=i < N)


@tiles.jit
def store_then_transpose(A, B, N, BLOCK: tl.constexpr):
    """Write a tile to A, read it back transposed (other threads' elements), write that to B."""
    r = tl.arange(0, BLOCK)
    mask = (r[:, None] < N) & (r[None, :] < N)
    v = (r[:, None] * 1000 + r[None, :]).to(tl.float32)
    tl.store(A + r[:, None] * N + r[None, :], v, mask=mask)
    t = tl.load(A + r[None, :] * N + r[:, None], mask=mask, other=0.0)
    tl.store(B + r[:, None] * N + r[None, :], t + 1.0, mask=mask)


@tiles.jit
def scale_in_place(Z, N, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Z + i, tl.load(Z + i, mask=i < N) * 2.0 + 1.0, mask=i < N)


@pytest.mark.parametrize("rows", [True, False], ids=["add-rows", "add-cols"])
@pytest.mark.parametrize("m, n, k, warps", [(64, 64, 64, 4), (61, 37, 50, 4), (32, 64, 16, 2), (16, 16, 16, 1)])
def test_dot_epilogue_reads_z_before_writing_it(rng, rows, m, n, k, warps):
    x = (rng.random((m, k)) * 0.1).astype(np.float32)
    y = (rng.random((k, n)) * 0.1).astype(np.float32)
    z0 = (1 + rng.random((m, n)) * 0.1).astype(np.float32)
    z = z0.copy()
    bm, bn, bk = (max(16, 1 << (v - 1).bit_length()) for v in (m, n, k))
    dot_add_edge[(1,)](x, y, z, m, n, k, BM=bm, BN=bn, BK=bk, ROWS=rows, num_warps=warps, backend="opencl")
    want = x.astype(np.float64) @ y + (z0[:, :1] if rows else z0[:1, :])
    np.testing.assert_allclose(z, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n, block, warps", [(128, 128, 4), (100, 128, 1), (7, 8, 1), (1000, 1024, 8)])
def test_neighbour_read_before_write(rng, n, block, warps):
    z0 = rng.standard_normal(n).astype(np.float32)
    z = z0.copy()
    shift_in_place[(1,)](z, n, BLOCK=block, num_warps=warps, backend="opencl")
    np.testing.assert_array_equal(z, z0 + np.roll(z0, -1))


@pytest.mark.parametrize("n, block", [(32, 32), (13, 16), (64, 64)])
def test_store_then_read_back_transposed(n, block):
    a = np.full((n, n), -1.0, np.float32)
    b = np.full((n, n), -1.0, np.float32)
    store_then_transpose[(1,)](a, b, n, BLOCK=block, backend="opencl")
    v = (np.arange(n)[:, None] * 1000 + np.arange(n)[None, :]).astype(np.float32)
    np.testing.assert_array_equal(a, v)
    np.testing.assert_array_equal(b, v.T + 1)


def test_in_place_elementwise_takes_no_barrier(rng):
    from tiles.backends.opencl import OpenCLBackend
    z0 = rng.standard_normal(1003).astype(np.float32)
    z = z0.copy()
    scale_in_place[(8,)](z, 1003, BLOCK=128, backend="opencl")
    np.testing.assert_array_equal(z, z0 * np.float32(2) + np.float32(1))
    compiled = scale_in_place.warmup(z, 1003, BLOCK=128, grid=(8,), backend="opencl")
    assert barriers(OpenCLBackend()._generate(compiled, compiled.options).asm)[0] == 0
