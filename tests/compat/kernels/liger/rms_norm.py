"""Liger-Kernel style RMSNorm forward and backward: casting modes as module-level constexprs,
rstd cached per row, program_id cast to int64 before pointer arithmetic, dW partials per program."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl
from tiles.language.extra.libdevice import rsqrt

_CASTING_MODE_NONE: tl.constexpr = tl.constexpr(-1)
_CASTING_MODE_LLAMA: tl.constexpr = tl.constexpr(0)
_CASTING_MODE_GEMMA: tl.constexpr = tl.constexpr(1)


@tiles.jit
def _rms_norm_forward_kernel(Y_ptr, Y_row_stride, X_ptr, X_row_stride, W_ptr, W_row_stride, RSTD_ptr,
                             RSTD_row_stride, n_cols, eps, offset, casting_mode: tl.constexpr,
                             BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0).to(tl.int64)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    Y_ptr += row_idx * Y_row_stride
    X_ptr += row_idx * X_row_stride
    RSTD_ptr += row_idx * RSTD_row_stride
    X_row = tl.load(X_ptr + col_offsets, mask=mask, other=0)
    X_row_dtype = X_row.dtype
    W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0)
    if casting_mode == _CASTING_MODE_LLAMA:
        X_row = X_row.to(tl.float32)
    if casting_mode == _CASTING_MODE_GEMMA:
        W_row = W_row.to(tl.float32)
        X_row = X_row.to(tl.float32)
    mean_square = tl.sum(X_row * X_row, axis=0) / n_cols
    rstd = rsqrt(mean_square + eps)
    tl.store(RSTD_ptr, rstd)
    X_row = X_row * rstd
    if casting_mode == _CASTING_MODE_LLAMA:
        X_row = X_row.to(X_row_dtype)
    Y_row = X_row * (offset + W_row)
    if casting_mode == _CASTING_MODE_GEMMA:
        Y_row = Y_row.to(X_row_dtype)
    tl.store(Y_ptr + col_offsets, Y_row, mask=mask)


@tiles.jit
def _rms_norm_backward_kernel(dY_ptr, dY_row_stride, dX_ptr, dX_row_stride, X_ptr, X_row_stride,
                              W_ptr, RSTD_ptr, RSTD_row_stride, dW_ptr, dW_row_stride, n_rows, n_cols, offset,
                              rows_per_program, BLOCK_SIZE: tl.constexpr):
    row_block_id = tl.program_id(0).to(tl.int64)
    row_start = row_block_id * rows_per_program
    row_end = min((row_block_id + 1) * rows_per_program, n_rows)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    dW_row = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    W_row = tl.load(W_ptr + col_offsets, mask=mask, other=0.0).to(tl.float32) + offset
    for row_idx in range(row_start, row_end):
        dY_row = tl.load(dY_ptr + row_idx * dY_row_stride + col_offsets, mask=mask, other=0.0).to(tl.float32)
        X_row = tl.load(X_ptr + row_idx * X_row_stride + col_offsets, mask=mask, other=0.0).to(tl.float32)
        rstd_row = tl.load(RSTD_ptr + row_idx * RSTD_row_stride)
        m = dY_row * W_row
        dX_row = rstd_row * m
        dX_row += rstd_row * (-(1 / n_cols) * rstd_row * rstd_row * tl.sum(m * X_row, axis=0) * X_row)
        dW_row += dY_row * (X_row * rstd_row)
        tl.store(dX_ptr + row_idx * dX_row_stride + col_offsets, dX_row.to(X_ptr.dtype.element_ty), mask=mask)
    tl.store(dW_ptr + row_block_id * dW_row_stride + col_offsets, dW_row, mask=mask)


def check(rng):
    n_rows, n_cols, eps, offset = 10, 93, 1e-6, 1.0
    X = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    W = rng.standard_normal(n_cols).astype(np.float32)
    dY = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    BLOCK_SIZE = tiles.next_power_of_2(n_cols)
    Y = np.empty_like(X)
    RSTD = np.empty(n_rows, np.float32)
    _rms_norm_forward_kernel[(n_rows,)](Y, stride(Y, 0), X, stride(X, 0), W, 0, RSTD, 1, n_cols, eps, offset,
                                        casting_mode=_CASTING_MODE_GEMMA, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
    rstd = 1 / np.sqrt((X * X).mean(1) + eps)
    close(RSTD, rstd, rtol=1e-5)
    close(Y, X * rstd[:, None] * (offset + W), rtol=1e-5, atol=1e-5)
    sm, rows_per_program = 3, 4
    dX = np.empty_like(X)
    _dW = np.empty((sm, n_cols), np.float32)
    _rms_norm_backward_kernel[(sm,)](dY, stride(dY, 0), dX, stride(dX, 0), X, stride(X, 0), W, RSTD, 1,
                                     _dW, stride(_dW, 0), n_rows, n_cols, offset, rows_per_program,
                                     BLOCK_SIZE=BLOCK_SIZE)
    Wo = W + offset
    m = dY * Wo
    ref_dx = rstd[:, None] * m - rstd[:, None] ** 3 / n_cols * (m * X).sum(1, keepdims=True) * X
    close(dX, ref_dx, rtol=1e-4, atol=1e-5)
    close(_dW.sum(0), (dY * X * rstd[:, None]).sum(0), rtol=1e-4, atol=1e-4)
