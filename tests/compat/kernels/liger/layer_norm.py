"""Liger-Kernel style LayerNorm forward: whole row in one block, mean/rstd stored, fp32 math on bf16-free fp16 input."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.jit
def _layer_norm_forward_kernel(Y_ptr, Y_row_stride, X_ptr, X_row_stride, W_ptr, W_row_stride, B_ptr, B_row_stride,
                               Mean_ptr, Mean_row_stride, RSTD_ptr, RSTD_row_stride, n_cols, eps,
                               BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    Y_ptr += row_idx * Y_row_stride
    X_ptr += row_idx * X_row_stride
    Mean_ptr += row_idx * Mean_row_stride
    RSTD_ptr += row_idx * RSTD_row_stride
    X_row = tl.load(X_ptr + col_offsets, mask=mask, other=0)
    W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0)
    B_row = tl.load(B_ptr + col_offsets, mask=mask, other=0)
    mean = tl.sum(X_row, axis=0) / n_cols
    Xmm = tl.where(mask, X_row - mean, 0)
    var = tl.sum(Xmm * Xmm, axis=0) / n_cols
    rstd = tl.rsqrt(var + eps)
    tl.store(Mean_ptr, mean)
    tl.store(RSTD_ptr, rstd)
    Y_row = Xmm * rstd * W_row + B_row
    tl.store(Y_ptr + col_offsets, Y_row, mask=mask)


def check(rng):
    n_rows, n_cols = 9, 200
    X = (rng.standard_normal((n_rows, n_cols)) * 3 - 1).astype(np.float32)
    W = rng.standard_normal(n_cols).astype(np.float32)
    B = rng.standard_normal(n_cols).astype(np.float32)
    Y = np.empty_like(X)
    Mean = np.empty(n_rows, np.float32)
    RSTD = np.empty(n_rows, np.float32)
    _layer_norm_forward_kernel[(n_rows,)](Y, stride(Y, 0), X, stride(X, 0), W, 0, B, 0, Mean, 1, RSTD, 1,
                                          n_cols, 1e-6, BLOCK_SIZE=tiles.next_power_of_2(n_cols))
    mu = X.mean(1)
    rs = 1 / np.sqrt(X.var(1) + 1e-6)
    close(Mean, mu, rtol=1e-5, atol=1e-6)
    close(RSTD, rs, rtol=1e-5)
    close(Y, (X - mu[:, None]) * rs[:, None] * W + B, rtol=1e-4, atol=1e-5)
