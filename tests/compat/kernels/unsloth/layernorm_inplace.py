"""Unsloth style fp32-compute LayerNorm (``Fast_Layernorm``) on bf16 activations: the forward saves
per-row ``1/std`` and mean, the backward recomputes the normalised row and writes dX *over dY*.
Unsloth's SwiGLU forward rides along (``LONG_INDEXING`` constexpr, HF-exact bf16 rounding).

Language features exercised: ``n_cols: tl.constexpr`` and a float ``eps: tl.constexpr`` turned into
a 0-d fp32 tensor with ``tl.full((), eps, tl.float32)``; pointer arguments advanced per row
(``Y += row_idx * Y_row_stride``, ``r += row_idx``) and scalar stores through them;
``tl.where(mask, X_row - mean_X, 0)`` with an int ``0``; ``tl.math.rsqrt``; bf16 loads widened with
``.to(tl.float32)`` and fp32 results stored into bf16 (round to nearest even) -- including the
in-place ``tl.store(dY + col_offsets, dX_row)`` over the gradient just read; in the SwiGLU, an
argument rebound under a constexpr flag (``n_elements = tl.cast(n_elements, tl.int64)``), int64
offsets from ``block_idx.to(tl.int64) * BLOCK + tl.arange(..).to(tl.int64)``, ``f.to(g.dtype)``
then a bf16 x bf16 product stored as bf16."""

import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl


@tiles.jit
def layernorm_forward(Y, Y_row_stride, X, X_row_stride, W, b, r, mu, n_cols: tl.constexpr, eps: tl.constexpr,
                      BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    Y += row_idx * Y_row_stride
    X += row_idx * X_row_stride
    r += row_idx
    mu += row_idx
    X_row = tl.load(X + col_offsets, mask=mask, other=0).to(tl.float32)
    W_row = tl.load(W + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b + col_offsets, mask=mask, other=0).to(tl.float32)
    mean_X = tl.sum(X_row, axis=0) / n_cols
    XX = tl.where(mask, X_row - mean_X, 0)
    row_var = tl.sum(XX * XX, axis=0) / n_cols
    eps_f32 = tl.full((), eps, tl.float32)
    inv_var = tl.math.rsqrt(row_var + eps_f32)
    tl.store(r, inv_var)
    tl.store(mu, mean_X)
    tl.store(Y + col_offsets, (XX * inv_var) * W_row + b_row, mask=mask)


@tiles.jit
def layernorm_backward(dY, dY_row_stride, X, X_row_stride, W, b, r, mu, n_cols: tl.constexpr, eps: tl.constexpr,
                       BLOCK_SIZE: tl.constexpr):
    row_idx = tl.program_id(0)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    dY += row_idx * dY_row_stride
    X += row_idx * X_row_stride
    r += row_idx
    mu += row_idx
    dY_row = tl.load(dY + col_offsets, mask=mask, other=0).to(tl.float32)
    X_row = tl.load(X + col_offsets, mask=mask, other=0).to(tl.float32)
    W_row = tl.load(W + col_offsets, mask=mask, other=0).to(tl.float32)
    inv_var = tl.load(r).to(tl.float32)
    mean = tl.load(mu).to(tl.float32)
    normed = (X_row - mean) * inv_var
    dY_W = dY_row * W_row
    dX_row = dY_W - tl.sum(dY_W, axis=0) / n_cols - normed * tl.sum(dY_W * normed, axis=0) / n_cols
    tl.store(dY + col_offsets, dX_row * inv_var, mask=mask)


@tiles.jit
def _fg_kernel(e, g, h, n_elements, BLOCK_SIZE: tl.constexpr, LONG_INDEXING: tl.constexpr):
    block_idx = tl.program_id(0)
    if LONG_INDEXING:
        offsets = block_idx.to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE).to(tl.int64)
        n_elements = tl.cast(n_elements, tl.int64)
    else:
        offsets = block_idx * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    e_row = tl.load(e + offsets, mask=mask, other=0).to(tl.float32)
    g_row = tl.load(g + offsets, mask=mask, other=0)
    f_row = (e_row * tl.sigmoid(e_row)).to(g_row.dtype)
    tl.store(h + offsets, f_row * g_row, mask=mask)


def check(rng):
    rows, cols, eps = 9, 50, 1e-5
    x = (rng.standard_normal((rows, cols)) * 2 + 0.5).astype(BF16)
    x[3] = BF16.type(4.0)  # constant row: zero variance
    w = rng.standard_normal(cols).astype(BF16)
    b = rng.standard_normal(cols).astype(BF16)
    y = np.zeros((rows, cols), BF16)
    r = np.zeros(rows, np.float32)
    mu = np.zeros(rows, np.float32)
    layernorm_forward[(rows,)](y, cols, x, cols, w, b, r, mu, n_cols=cols, eps=eps, BLOCK_SIZE=64)
    x64, w64, b64 = (a.astype(np.float64) for a in (x, w, b))
    mean = x64.mean(1)
    var = ((x64 - mean[:, None]) ** 2).mean(1)
    inv = 1 / np.sqrt(var + eps)
    normed = (x64 - mean[:, None]) * inv[:, None]
    close(mu, mean, rtol=1e-5, atol=1e-5)
    close(r, inv, rtol=1e-4, atol=1e-4)
    close(y.astype(np.float32), normed * w64 + b64, rtol=1e-2, atol=2e-2)

    dy = rng.standard_normal((rows, cols)).astype(BF16)
    dyw = dy.astype(np.float64) * w64
    dx = (dyw - dyw.mean(1, keepdims=True) - normed * (dyw * normed).mean(1, keepdims=True)) * inv[:, None]
    layernorm_backward[(rows,)](dy, cols, x, cols, w, b, r, mu, n_cols=cols, eps=eps, BLOCK_SIZE=64)
    close(dy.astype(np.float32), dx, rtol=2e-2, atol=2e-2)

    n = 1000
    e = (rng.standard_normal(n) * 3).astype(BF16)
    g = rng.standard_normal(n).astype(BF16)
    e32 = e.astype(np.float32)
    f = (e32 / (1 + np.exp(-e32))).astype(BF16)
    expect = (f.astype(np.float32) * g.astype(np.float32)).astype(BF16)
    for long_indexing in (0, 1):
        h = np.zeros(n, BF16)
        _fg_kernel[(-(-n // 256),)](e, g, h, n, BLOCK_SIZE=256, LONG_INDEXING=long_indexing)
        mismatch = h.view(np.uint16) != expect.view(np.uint16)
        # sigmoid may differ by an ulp in fp32, which can move f across a bf16 rounding boundary
        assert mismatch.mean() < 0.02, mismatch.sum()
        close(h, expect, rtol=1e-2, atol=1e-2)
