"""``desc.gather(rows, col)`` / ``desc.scatter(value, rows, col)`` on a ``[1, N]`` tensor descriptor
(Triton's TMA row gather and scatter): rows picked by an int tile, out-of-bounds rows and columns
read 0 and are not written; checked against NumPy with random data, odd shapes and bad rows."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def gather_scatter_kernel(a_ptr, dst_ptr, out_ptr, rows_ptr, M, N, col, R: tl.constexpr, BN: tl.constexpr):
    src = tl.make_tensor_descriptor(a_ptr, [M, N], [N, 1], [1, BN])
    dst = tl.make_tensor_descriptor(dst_ptr, [M, N], [N, 1], [1, BN])
    rows = tl.load(rows_ptr + tl.arange(0, R))
    x = src.gather(rows, col)
    tl.store(out_ptr + tl.arange(0, R)[:, None] * BN + tl.arange(0, BN)[None, :], x)
    dst.scatter(x * 2 + 1, rows, col)


def _reference(a, dst, rows, col, bn):
    m, n = a.shape
    out = np.zeros((rows.size, bn), a.dtype)
    dst = dst.copy()
    for i, r in enumerate(rows):
        cols = np.arange(col, col + bn)
        ok = (cols >= 0) & (cols < n)
        if 0 <= r < m:
            out[i, ok] = a[r, cols[ok]]
            dst[r, cols[ok]] = out[i, ok] * 2 + 1
    return out, dst


@pytest.mark.parametrize("dtype,bn", [(np.float32, 16), (np.float16, 32), (np.int8, 64)])
@pytest.mark.parametrize("col", [0, 7, -5, 30])
def test_gather_and_scatter_rows(rng, dtype, bn, col):
    m, n, r = 29, 48, 16
    a = (rng.standard_normal((m, n)) * 20).astype(dtype)
    dst = (rng.standard_normal((m, n)) * 20).astype(dtype)
    rows = rng.permutation(m + 6)[:r].astype(np.int32) - 3  # distinct, some outside [0, m)
    rows[:2] = [-1, m]
    out = np.zeros((r, bn), dtype)
    before = dst.copy()
    gather_scatter_kernel[(1,)](a, dst, out, rows, m, n, col, R=r, BN=bn)
    want_out, want_dst = _reference(a, before, rows, col, bn)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(dst, want_dst)


@tiles.jit
def small_gather_kernel(a_ptr, out_ptr, rows_ptr, R: tl.constexpr, BN: tl.constexpr, ROWS: tl.constexpr):
    desc = tl.make_tensor_descriptor(a_ptr, [64, 64], [64, 1], [ROWS, BN])
    rows = tl.load(rows_ptr + tl.arange(0, R))
    tl.store(out_ptr + tl.arange(0, R)[:, None] * BN + tl.arange(0, BN)[None, :], desc.gather(rows, 0))


@pytest.mark.backends("interpreter")
@pytest.mark.parametrize("r,bn,rows,match", [(4, 16, 1, "at least 8 rows"), (8, 4, 1, "at least 8 columns"),
                                             (8, 16, 2, "block must have 1 row")])
def test_triton_size_rules(r, bn, rows, match):
    a = np.zeros((64, 64), np.float32)
    with pytest.raises(tiles.CompilationError, match=match):
        small_gather_kernel[(1,)](a, np.zeros((r, bn), np.float32), np.zeros(r, np.int32), R=r, BN=bn, ROWS=rows)
