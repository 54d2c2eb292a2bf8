"""FlagGems style argmin along a middle dimension (a [M, N, K] tensor reduced over N in tiles):
a running (value, index) pair updated with ``tl.where`` chains, then a final ``tl.reduce`` over a
*tuple* with a ``@jit`` combine function that returns a tuple (smaller value, then smaller index
on ties), checked against ``tl.min(..., return_indices=True)`` and ``tl.argmin``; int32 edges."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _min_with_index(a, ia, b, ib):
    take_b = (b < a) | ((b == a) & (ib < ia))
    return tl.where(take_b, b, a), tl.where(take_b, ib, ia)


@tiles.jit
def _argmin_dim1(x_ptr, idx_ptr, val_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    row_ids = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows = row_ids[:, None]
    row_ok = rows < M
    dtype = x_ptr.dtype.element_ty
    big = dtype.get_int_max_value() if dtype.is_int() else float("inf")
    best = tl.full([BLOCK_M, BLOCK_N], big, dtype)
    best_at = tl.zeros([BLOCK_M, BLOCK_N], tl.int32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)[None, :]
        ok = row_ok & (cols < N)
        x = tl.load(x_ptr + rows * N * K + cols * K + pid_k, mask=ok, other=big)
        better = x < best
        best = tl.where(better, x, best)
        best_at = tl.where(better, cols, best_at)
    value, index = tl.reduce((best, best_at), 1, _min_with_index)
    tl.store(idx_ptr + row_ids * K + pid_k, index, mask=row_ids < M)
    tl.store(val_ptr + row_ids * K + pid_k, value, mask=row_ids < M)


@tiles.jit
def _row_min(x_ptr, val_ptr, idx_ptr, idx2_ptr, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("inf"))
    value, index = tl.min(x, 0, return_indices=True)
    tl.store(val_ptr + row, value)
    tl.store(idx_ptr + row, index)
    tl.store(idx2_ptr + row, tl.argmin(x, 0))


def check(rng):
    M, N, K = 5, 45, 3
    for dtype in (np.float32, np.int32):
        if dtype == np.int32:
            x = rng.integers(-50, 50, (M, N, K)).astype(np.int32)
            x[1, 7, 0] = np.iinfo(np.int32).min
            x[2, :, 1] = np.iinfo(np.int32).max
        else:
            x = rng.integers(-20, 20, (M, N, K)).astype(np.float32) / 4
            x[3, 30, 2] = -np.inf
        idx = np.empty((M, K), np.int32)
        val = np.empty((M, K), dtype)
        _argmin_dim1[(tiles.cdiv(M, 4), K)](x, idx, val, M, N, K, BLOCK_M=4, BLOCK_N=16)
        close(idx, np.argmin(x, 1))
        close(val, np.min(x, 1), rtol=0, atol=0)
    rows, n = 4, 29
    y = rng.integers(-6, 6, (rows, n)).astype(np.float32)
    vals = np.empty(rows, np.float32)
    idx = np.empty(rows, np.int32)
    idx2 = np.empty(rows, np.int32)
    _row_min[(rows,)](y, vals, idx, idx2, n, BLOCK_N=32)
    close(vals, y.min(1), rtol=0, atol=0)
    close(idx, y.argmin(1))
    close(idx2, y.argmin(1))
