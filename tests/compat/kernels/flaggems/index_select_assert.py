"""FlagGems style ``index_select`` along dim 0 guarded by ``tl.device_assert``: the bounds check
(a chained comparison ``0 <= idx < n`` split into two) is dropped in normal launches, as in
Triton, and kept by ``@jit(debug=True)``, where a bad index fails the launch with the assert's
message and valid indices still run.  The helper takes a ``mask=`` for the lanes past the end."""

import numpy as np
import pytest
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _select_rows(inp_ptr, index_ptr, out_ptr, n_index, n_rows, n_cols, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr):
    _select_rows_body(inp_ptr, index_ptr, out_ptr, n_index, n_rows, n_cols, BLOCK_M, BLOCK_N)


@tiles.jit(debug=True)
def _select_rows_checked(inp_ptr, index_ptr, out_ptr, n_index, n_rows, n_cols, BLOCK_M: tl.constexpr,
                         BLOCK_N: tl.constexpr):
    _select_rows_body(inp_ptr, index_ptr, out_ptr, n_index, n_rows, n_cols, BLOCK_M, BLOCK_N)


@tiles.jit
def _select_rows_body(inp_ptr, index_ptr, out_ptr, n_index, n_rows, n_cols, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < n_index
    idx = tl.load(index_ptr + rows, mask=row_ok, other=-1)
    tl.device_assert((0 <= idx) & (idx < n_rows), "index_select(): index out of range", mask=row_ok)
    mask = row_ok[:, None] & (cols[None, :] < n_cols)
    vals = tl.load(inp_ptr + idx[:, None] * n_cols + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + rows[:, None] * n_cols + cols[None, :], vals, mask=mask)


def check(rng):
    n_rows, n_cols, n_index = 13, 30, 21
    inp = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    index = rng.integers(0, n_rows, n_index).astype(np.int64)
    index[:2] = [0, n_rows - 1]
    grid = (tiles.cdiv(n_index, 8), tiles.cdiv(n_cols, 16))
    for kernel in (_select_rows, _select_rows_checked):
        out = np.empty((n_index, n_cols), np.float32)
        kernel[grid](inp, index, out, n_index, n_rows, n_cols, BLOCK_M=8, BLOCK_N=16)
        close(out, inp[index], rtol=0, atol=0)
    bad = index.copy()
    bad[n_index - 3] = n_rows
    out = np.empty((n_index, n_cols), np.float32)
    with pytest.raises(tiles.KernelRuntimeError, match="index out of range"):
        _select_rows_checked[grid](inp, bad, out, n_index, n_rows, n_cols, BLOCK_M=8, BLOCK_N=16)
