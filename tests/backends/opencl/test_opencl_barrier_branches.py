"""A uniform if/else whose branches both hold barriers and end in the same masked store, in the
shape of vLLM's fused MoE (a block of expert -1 writes zeros, the others their rows): pocl let
work-item 0's mask decide the shared store for the whole work-group."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")


@tiles.jit
def _rows_or_zeros(c_ptr, x_ptr, rows_ptr, kinds_ptr, n_rows, N, stride_c, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = tl.load(rows_ptr + pid_m * BM + tl.arange(0, BM))
    cols = pid_n * BN + tl.arange(0, BN)
    if tl.load(kinds_ptr + pid_m) == -1:
        ptrs = c_ptr + rows[:, None] * stride_c + cols[None, :]
        tl.store(ptrs, tl.zeros((BM, BN), dtype=tl.float16), mask=(rows < n_rows)[:, None] & (cols[None, :] < N))
    else:
        mask = (rows < n_rows)[:, None] & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
        tl.store(c_ptr + rows[:, None] * stride_c + cols[None, :], x * 2, mask=mask)


@pytest.mark.parametrize("bm,bn,n", [(16, 16, 24), (16, 16, 40), (8, 32, 50)])
def test_masked_stores_after_barriers_in_both_branches(rng, bm, bn, n):
    blocks, n_rows = 5, 60
    rows = rng.permutation(blocks * bm).astype(np.int32)
    rows[rows >= n_rows] = n_rows  # padding: out of range, masked off
    kinds = rng.integers(0, 3, blocks).astype(np.int32)
    kinds[rng.integers(0, blocks)] = -1
    x = rng.standard_normal((n_rows, n)).astype(np.float16)
    # columns past n in every row, and a row for the padding's pointers: a masked-off store that
    # lands shows as a changed 7 whatever order the programs ran in
    c = np.full((n_rows + 1, n + bn), 7, np.float16)
    grid = (blocks, tiles.cdiv(n, bn))
    _rows_or_zeros[grid](c, x, rows, kinds, n_rows, n, c.shape[1], BM=bm, BN=bn, backend="opencl")
    want = np.full_like(c, 7)
    for b in range(blocks):
        live = rows[b * bm:(b + 1) * bm]
        live = live[live < n_rows]
        want[live, :n] = 0 if kinds[b] == -1 else x[live] * 2
    np.testing.assert_array_equal(c, want)
