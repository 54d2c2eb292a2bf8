"""Liger-Kernel style attention residuals (softmax attention over a small stack of block outputs,
one program per token), forward and backward.  The per-block scores live in a register vector
indexed by ``tl.where(tl.arange(0, MAX_BLOCKS) == i, s, scores)`` inside
``for i in tl.static_range(0, MAX_BLOCKS):`` whose body is guarded by a *runtime*
``if i < n_blocks:`` that updates loop-carried tensors (``scores``, a 0-d running max made by
``tl.full((), -inf)``); elements are read back out of the vector with
``tl.sum(tl.where(idx == i, v, 0.0))``; RMSNorm keys use ``tl.rsqrt`` with ``eps`` a constexpr
float in the forward and a runtime float in the backward, the normalised row is cast to the
weight's dtype before the weight multiply, and the weight gradients are ``tl.atomic_add``-ed from
every token into zeroed fp32 buffers."""

import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl


@tiles.jit
def _attn_res_fwd(V_ptr, W_query_ptr, W_norm_ptr, Out_ptr, Alpha_ptr, RSTD_ptr, n_blocks, n_tokens, D,
                  eps: tl.constexpr, BLOCK_D: tl.constexpr, MAX_BLOCKS: tl.constexpr):
    tok = tl.program_id(0)
    cols = tl.arange(0, BLOCK_D)
    d_mask = cols < D
    idx = tl.arange(0, MAX_BLOCKS)
    w_query = tl.load(W_query_ptr + cols, mask=d_mask, other=0.0).to(tl.float32)
    w_norm = tl.load(W_norm_ptr + cols, mask=d_mask, other=0.0)
    scores = tl.zeros((MAX_BLOCKS,), dtype=tl.float32) + float("-inf")
    score_max = tl.full((), float("-inf"), dtype=tl.float32)
    for i in tl.static_range(0, MAX_BLOCKS):
        if i < n_blocks:
            v = tl.load(V_ptr + i * n_tokens * D + tok * D + cols, mask=d_mask, other=0.0).to(tl.float32)
            rstd = tl.rsqrt(tl.sum(v * v, axis=0) / D + eps)
            tl.store(RSTD_ptr + tok * n_blocks + i, rstd)
            k = (v * rstd).to(w_norm.dtype) * w_norm
            s = tl.sum(w_query * k.to(tl.float32), axis=0)
            scores = tl.where(idx == i, s, scores)
            score_max = tl.maximum(score_max, s)
    e = tl.where(idx < n_blocks, tl.exp(scores - score_max), 0.0)
    alpha = e / tl.sum(e, axis=0)
    h = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in tl.static_range(0, MAX_BLOCKS):
        if i < n_blocks:
            a_i = tl.sum(tl.where(idx == i, alpha, 0.0))
            tl.store(Alpha_ptr + tok * n_blocks + i, a_i)
            v = tl.load(V_ptr + i * n_tokens * D + tok * D + cols, mask=d_mask, other=0.0).to(tl.float32)
            h += a_i * v
    tl.store(Out_ptr + tok * D + cols, h, mask=d_mask)


@tiles.jit
def _attn_res_bwd(dOut_ptr, V_ptr, W_query_ptr, W_norm_ptr, Alpha_ptr, RSTD_ptr, dV_ptr, dW_query_ptr, dW_norm_ptr,
                  n_blocks, n_tokens, D, eps, BLOCK_D: tl.constexpr, MAX_BLOCKS: tl.constexpr):
    tok = tl.program_id(0)
    cols = tl.arange(0, BLOCK_D)
    d_mask = cols < D
    idx = tl.arange(0, MAX_BLOCKS)
    dh = tl.load(dOut_ptr + tok * D + cols, mask=d_mask, other=0.0).to(tl.float32)
    w_query = tl.load(W_query_ptr + cols, mask=d_mask, other=0.0).to(tl.float32)
    w_norm = tl.load(W_norm_ptr + cols, mask=d_mask, other=0.0).to(tl.float32)
    d_alpha = tl.zeros((MAX_BLOCKS,), dtype=tl.float32)
    alpha = tl.zeros((MAX_BLOCKS,), dtype=tl.float32)
    for i in tl.static_range(0, MAX_BLOCKS):
        if i < n_blocks:
            v = tl.load(V_ptr + i * n_tokens * D + tok * D + cols, mask=d_mask, other=0.0).to(tl.float32)
            d_alpha = tl.where(idx == i, tl.sum(dh * v, axis=0), d_alpha)
            alpha = tl.where(idx == i, tl.load(Alpha_ptr + tok * n_blocks + i), alpha)
    d_scores = alpha * (d_alpha - tl.sum(alpha * d_alpha, axis=0))
    dw_query = tl.zeros((BLOCK_D,), dtype=tl.float32)
    dw_norm = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for i in tl.static_range(0, MAX_BLOCKS):
        if i < n_blocks:
            v_off = i * n_tokens * D + tok * D
            v = tl.load(V_ptr + v_off + cols, mask=d_mask, other=0.0).to(tl.float32)
            a_i = tl.sum(tl.where(idx == i, alpha, 0.0))
            ds_i = tl.sum(tl.where(idx == i, d_scores, 0.0))
            rstd = tl.load(RSTD_ptr + tok * n_blocks + i)
            v_norm = v * rstd
            dk = ds_i * w_query * w_norm
            dv = a_i * dh + rstd * dk - rstd * rstd * rstd * (tl.sum(dk * v, axis=0) / D) * v
            tl.store(dV_ptr + v_off + cols, dv, mask=d_mask)
            dw_query += ds_i * v_norm * w_norm
            dw_norm += ds_i * w_query * v_norm
    tl.atomic_add(dW_query_ptr + cols, dw_query, mask=d_mask)
    tl.atomic_add(dW_norm_ptr + cols, dw_norm, mask=d_mask)


def _reference(V, wq, wn, dout, eps):
    v = V.astype(np.float64)
    D = v.shape[-1]
    rstd = 1.0 / np.sqrt((v * v).mean(-1) + eps)  # [N, T]
    k = v * rstd[..., None] * wn.astype(np.float64)
    s = k @ wq.astype(np.float64)  # [N, T]
    alpha = np.exp(s - s.max(0))
    alpha /= alpha.sum(0)
    h = (alpha[..., None] * v).sum(0)
    d_alpha = (dout[None] * v).sum(-1)
    ds = alpha * (d_alpha - (alpha * d_alpha).sum(0))
    dk = ds[..., None] * wq * wn
    dv = alpha[..., None] * dout[None] + rstd[..., None] * dk - \
        rstd[..., None] ** 3 * (dk * v).sum(-1, keepdims=True) / D * v
    v_norm = v * rstd[..., None]
    dwq = (ds[..., None] * v_norm * wn).sum((0, 1))
    dwn = (ds[..., None] * wq * v_norm).sum((0, 1))
    return rstd.T, alpha.T, h, dv, dwq, dwn


def _get_max_blocks(n_blocks):
    """Liger's host rounding of the block count to a constexpr (4, 8, 16 or 32)."""
    return next((mb for mb in (4, 8, 16, 32) if n_blocks <= mb), 32)


def check(rng):
    run(rng, 5)  # MAX_BLOCKS = 8: three unrolled iterations skipped at run time


def run(rng, N, max_blocks=None):
    """Forward and backward for ``N`` blocks against NumPy (``benchmarks/pocl_compile.py`` also
    times it for several ``max_blocks``)."""
    T, D, eps = 7, 37, 1e-6
    max_blocks = max_blocks or _get_max_blocks(N)
    for dtype, tol in ((np.float32, 1e-5), (BF16, 2e-2)):
        V = (rng.standard_normal((N, T, D)) * rng.uniform(0.5, 3, (N, 1, 1))).astype(dtype)
        V[min(2, N - 1), 3] = 0.0  # an all-zero block row: rstd = 1/sqrt(eps), key 0
        wq = (rng.standard_normal(D) * 0.3).astype(np.float32)
        wn = (rng.standard_normal(D) * 0.5 + 1).astype(dtype)
        dout = rng.standard_normal((T, D)).astype(np.float32)
        out = np.empty((T, D), np.float32)
        alpha = np.empty((T, N), np.float32)
        rstd = np.empty((T, N), np.float32)
        _attn_res_fwd[(T,)](V, wq, wn, out, alpha, rstd, N, T, D, eps=eps, BLOCK_D=64,
                            MAX_BLOCKS=max_blocks)
        r_rstd, r_alpha, r_h, r_dv, r_dwq, r_dwn = _reference(V, wq, wn.astype(np.float32), dout, eps)
        close(rstd, r_rstd, rtol=1e-5, atol=0)
        # bf16: the normalised key is rounded to bf16 before the weight multiply (Liger's cast)
        close(alpha, r_alpha, rtol=tol, atol=tol)
        close(out, r_h, rtol=tol, atol=tol)
        if dtype != np.float32:
            continue
        dv = np.empty((N, T, D), np.float32)
        dwq = np.zeros(D, np.float32)
        dwn = np.zeros(D, np.float32)
        _attn_res_bwd[(T,)](dout, V, wq, wn, alpha, rstd, dv, dwq, dwn, N, T, D, eps, BLOCK_D=64,
                            MAX_BLOCKS=max_blocks)
        close(dv, r_dv, rtol=1e-4, atol=1e-4)
        # 7 tokens' fp32 partials atomically added in any order
        close(dwq, r_dwq, rtol=1e-4, atol=1e-4)
        close(dwn, r_dwn, rtol=1e-4, atol=1e-4)
