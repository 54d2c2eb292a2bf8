"""FlagGems style ``scatter_reduce`` / ``index_add`` along dim 0 through atomics: many source
rows land on the same destination row, so the kernel uses ``tl.atomic_max`` / ``tl.atomic_min``
(floats with negative values, int32 with its extremes) and ``tl.atomic_add`` with explicit
``sem=`` / ``scope=``, selected by a string ``tl.constexpr``; ``alpha`` scales the added rows."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _scatter_rows(src_ptr, index_ptr, out_ptr, n_src, n_cols, alpha, REDUCE: tl.constexpr,
                  BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid_r = tl.program_id(0)
    pid_c = tl.program_id(1)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    row_ok = rows < n_src
    mask = row_ok[:, None] & (cols[None, :] < n_cols)
    dest = tl.load(index_ptr + rows, mask=row_ok, other=0).to(tl.int64)
    src = tl.load(src_ptr + rows[:, None] * n_cols + cols[None, :], mask=mask, other=0)
    out_ptrs = out_ptr + dest[:, None] * n_cols + cols[None, :]
    if REDUCE == "amax":
        tl.atomic_max(out_ptrs, src, mask=mask)
    elif REDUCE == "amin":
        tl.atomic_min(out_ptrs, src, mask=mask, sem="relaxed")
    else:
        tl.atomic_add(out_ptrs, src * alpha, mask=mask, sem="acq_rel", scope="gpu")


def _launch(src, index, out, reduce, alpha=1):
    n_src, n_cols = src.shape
    grid = (tiles.cdiv(n_src, 8), tiles.cdiv(n_cols, 16))
    _scatter_rows[grid](src, index, out, n_src, n_cols, alpha, REDUCE=reduce, BLOCK_R=8, BLOCK_C=16)


def check(rng):
    n_src, n_dst, n_cols = 29, 5, 21
    index = rng.integers(0, n_dst, n_src).astype(np.int32)
    index[:n_dst] = np.arange(n_dst)
    src = (rng.standard_normal((n_src, n_cols)) * 10).astype(np.float32)
    src[3, 4] = -np.inf
    for reduce, ufunc in (("amax", np.maximum), ("amin", np.minimum)):
        start = rng.standard_normal((n_dst, n_cols)).astype(np.float32) - 30 * (reduce == "amax")
        out = start.copy()
        _launch(src, index, out, reduce)
        expected = start.copy()
        ufunc.at(expected, index, src)
        close(out, expected, rtol=0, atol=0)
    isrc = rng.integers(-1000, 1000, (n_src, n_cols)).astype(np.int32)
    isrc[7, :3] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, -1]
    for reduce, ufunc in (("amax", np.maximum), ("amin", np.minimum)):
        start = rng.integers(-5, 5, (n_dst, n_cols)).astype(np.int32)
        out = start.copy()
        _launch(isrc, index, out, reduce)
        expected = start.copy()
        ufunc.at(expected, index, isrc)
        close(out, expected)
    addend = np.where(np.isinf(src), 1.5, src).astype(np.float32)
    start = rng.standard_normal((n_dst, n_cols)).astype(np.float32)
    out = start.copy()
    _launch(addend, index, out, "add", alpha=0.5)
    expected = start.copy()
    np.add.at(expected, index, addend * np.float32(0.5))
    close(out, expected, rtol=1e-5, atol=1e-5)
