"""Liger-Kernel style SwiGLU forward and backward (backward writes its gradients in place)."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def silu(x):
    return x * tl.sigmoid(x)


@tiles.jit
def _swiglu_forward_kernel(a_ptr, b_ptr, c_ptr, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    a_ptr += program_id * stride
    b_ptr += program_id * stride
    c_ptr += program_id * stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b_ptr + col_offsets, mask=mask, other=0)
    c_row = silu(a_row).cast(b_row.dtype) * b_row
    tl.store(c_ptr + col_offsets, c_row, mask=mask)


@tiles.jit
def _swiglu_backward_kernel(dc_ptr, a_ptr, b_ptr, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    dc_ptr += program_id * stride
    a_ptr += program_id * stride
    b_ptr += program_id * stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    dc_row = tl.load(dc_ptr + col_offsets, mask=mask, other=0)
    a_row = tl.load(a_ptr + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b_ptr + col_offsets, mask=mask, other=0)
    sig_a = tl.sigmoid(a_row)
    silu_a = a_row * sig_a
    db_row = dc_row * silu_a
    da_row = dc_row * (silu_a * (1 - sig_a) + sig_a) * b_row
    tl.store(a_ptr + col_offsets, da_row, mask=mask)
    tl.store(b_ptr + col_offsets, db_row, mask=mask)


def check(rng):
    rows, n_cols = 6, 150
    a = rng.standard_normal((rows, n_cols)).astype(np.float32) * 3
    b = rng.standard_normal((rows, n_cols)).astype(np.float32)
    dc = rng.standard_normal((rows, n_cols)).astype(np.float32)
    c = np.empty_like(a)
    block = tiles.next_power_of_2(n_cols)
    _swiglu_forward_kernel[(rows,)](a, b, c, n_cols, n_cols=n_cols, BLOCK_SIZE=block, num_warps=4)
    sig = 1 / (1 + np.exp(-a))
    close(c, a * sig * b, rtol=1e-5, atol=1e-6)
    da, db = a.copy(), b.copy()
    _swiglu_backward_kernel[(rows,)](dc, da, db, n_cols, n_cols=n_cols, BLOCK_SIZE=block)
    close(db, dc * a * sig, rtol=1e-5, atol=1e-6)
    close(da, dc * (a * sig * (1 - sig) + sig) * b, rtol=1e-4, atol=1e-6)
