"""Unsloth style RMS layernorm forward, Llama and Gemma (1 + w) variants, ``tl.math.rsqrt``, inverse
variance saved per row."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.jit
def _rms_layernorm_forward(Y, Y_row_stride, X, X_row_stride, W, W_row_stride, r, r_row_stride, n_cols, eps,
                           GEMMA: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    Y += row_idx * Y_row_stride
    X += row_idx * X_row_stride
    r += row_idx * r_row_stride
    X_row = tl.load(X + col_offsets, mask=mask, other=0).to(tl.float32)
    W_row = tl.load(W + col_offsets, mask=mask, other=0)
    row_var = tl.sum(X_row * X_row, axis=0) / n_cols
    inv_var = tl.math.rsqrt(row_var + eps)
    tl.store(r, inv_var)
    normed = X_row * inv_var
    if GEMMA:
        output = normed * (W_row.to(tl.float32) + 1.0)
        tl.store(Y + col_offsets, output.to(Y.dtype.element_ty), mask=mask)
    else:
        normed = normed.to(W_row.dtype)
        output = normed * W_row
        tl.store(Y + col_offsets, output, mask=mask)


def check(rng):
    n_rows, n_cols, eps = 8, 129, 1e-5
    X = rng.standard_normal((n_rows, n_cols)).astype(np.float16)
    W = rng.standard_normal(n_cols).astype(np.float16)
    Xf = X.astype(np.float32)
    inv = 1 / np.sqrt((Xf * Xf).mean(1) + eps)
    for gemma in (True,):
        Y = np.empty_like(X)
        r = np.empty(n_rows, np.float32)
        _rms_layernorm_forward[(n_rows,)](Y, stride(Y, 0), X, stride(X, 0), W, 1, r, 1, n_cols, eps,
                                          GEMMA=gemma, BLOCK_SIZE=256, num_warps=4)
        w = W.astype(np.float32) + (1.0 if gemma else 0.0)
        close(r, inv, rtol=1e-5)
        close(Y, Xf * inv[:, None] * w, rtol=1e-2, atol=1e-2)
