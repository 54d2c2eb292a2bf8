"""Liger-Kernel style mHC (manifold-constrained hyper-connections) split + Sinkhorn kernels: per
token, sigmoid gates for the pre/post streams and an ``HC x HC`` residual mixing matrix pushed
towards doubly-stochastic by a fixed number of row/column normalisations; backward either
recomputes every iterate inside a nested static loop or reads a stored history.

Language features exercised: every stride a ``tl.constexpr`` argument; an early ``return`` on
``pid >= N`` with ``N`` constexpr; unmasked 2-D loads at ``(2 * HC + rows * HC + cols) *
stride``; ``tl.static_range(0, TMAX - 1)``, a *descending* ``tl.static_range(TMAX - 1, 0, -1)``
and a nested ``tl.static_range(1, TMAX)`` whose body rebinds three names under ``if s == t:``
(a compile-time test between two static loop variables); a store inside a static loop at
``(t + 1) * stride``; row/column ``tl.sum`` / ``tl.max`` on a ``[HC, HC]`` tile with ``[:, None]``
and ``[None, :]`` broadcasts; scalars loaded from one-element tensors; constexpr float epsilons."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _sinkhorn_fwd(mix_ptr, b_ptr, hpre_ptr, hpost_ptr, hres_ptr, hist_ptr, N: tl.constexpr, HC: tl.constexpr,
                  stride_mn: tl.constexpr, stride_mm: tl.constexpr, stride_hp_n: tl.constexpr,
                  stride_hp_h: tl.constexpr, stride_hq_n: tl.constexpr, stride_hq_h: tl.constexpr,
                  stride_hr_n: tl.constexpr, stride_hr_i: tl.constexpr, stride_hr_j: tl.constexpr,
                  stride_hn: tl.constexpr, stride_ht: tl.constexpr, stride_hi: tl.constexpr,
                  stride_hj: tl.constexpr, alpha_pre_ptr, alpha_post_ptr, alpha_res_ptr, pre_eps: tl.constexpr,
                  sk_eps: tl.constexpr, post_mult: tl.constexpr, TMAX: tl.constexpr, STORE_HIST: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= N:
        return
    a_pre = tl.load(alpha_pre_ptr).to(tl.float32)
    a_post = tl.load(alpha_post_ptr).to(tl.float32)
    a_res = tl.load(alpha_res_ptr).to(tl.float32)
    j = tl.arange(0, HC)
    m_pre = tl.load(mix_ptr + pid * stride_mn + j * stride_mm).to(tl.float32)
    m_post = tl.load(mix_ptr + pid * stride_mn + (HC + j) * stride_mm).to(tl.float32)
    pre = tl.sigmoid(m_pre * a_pre + tl.load(b_ptr + j).to(tl.float32)) + pre_eps
    post = tl.sigmoid(m_post * a_post + tl.load(b_ptr + (HC + j)).to(tl.float32)) * post_mult
    tl.store(hpre_ptr + pid * stride_hp_n + j * stride_hp_h, pre)
    tl.store(hpost_ptr + pid * stride_hq_n + j * stride_hq_h, post)

    rows = tl.arange(0, HC)[:, None]
    cols = tl.arange(0, HC)[None, :]
    flat = rows * HC + cols
    logits = tl.load(mix_ptr + pid * stride_mn + (2 * HC + flat) * stride_mm).to(tl.float32) * a_res \
        + tl.load(b_ptr + (2 * HC + flat)).to(tl.float32)
    e = tl.exp(logits - tl.max(logits, axis=1)[:, None])
    mat = e / tl.sum(e, axis=1)[:, None] + sk_eps
    mat = mat / (tl.sum(mat, axis=0)[None, :] + sk_eps)
    if STORE_HIST:
        tl.store(hist_ptr + pid * stride_hn + 0 * stride_ht + rows * stride_hi + cols * stride_hj, mat)
    for t in tl.static_range(0, TMAX - 1):
        mat = mat / (tl.sum(mat, axis=1)[:, None] + sk_eps)
        mat = mat / (tl.sum(mat, axis=0)[None, :] + sk_eps)
        if STORE_HIST:
            tl.store(hist_ptr + pid * stride_hn + (t + 1) * stride_ht + rows * stride_hi + cols * stride_hj, mat)
    tl.store(hres_ptr + pid * stride_hr_n + rows * stride_hr_i + cols * stride_hr_j, mat)


@tiles.jit
def _softmax_start(mix_ptr, b_ptr, alpha_res_ptr, pid, HC: tl.constexpr, stride_mn: tl.constexpr,
                   stride_mm: tl.constexpr, sk_eps: tl.constexpr):
    rows = tl.arange(0, HC)[:, None]
    cols = tl.arange(0, HC)[None, :]
    flat = rows * HC + cols
    a_res = tl.load(alpha_res_ptr).to(tl.float32)
    logits = tl.load(mix_ptr + pid * stride_mn + (2 * HC + flat) * stride_mm).to(tl.float32) * a_res \
        + tl.load(b_ptr + (2 * HC + flat)).to(tl.float32)
    e = tl.exp(logits - tl.max(logits, axis=1)[:, None])
    row_sum0 = tl.sum(e, axis=1)
    p = e / row_sum0[:, None]
    col_sum0 = tl.sum(p + sk_eps, axis=0)
    mat0 = (p + sk_eps) / (col_sum0[None, :] + sk_eps)
    return p, row_sum0, col_sum0, mat0


@tiles.jit
def _sinkhorn_bwd_recompute(mix_ptr, b_ptr, grad_out_ptr, grad_logits_ptr, N: tl.constexpr, HC: tl.constexpr,
                            stride_mn: tl.constexpr, stride_mm: tl.constexpr, stride_go_n: tl.constexpr,
                            stride_go_i: tl.constexpr, stride_go_j: tl.constexpr, stride_gl_n: tl.constexpr,
                            stride_gl_i: tl.constexpr, stride_gl_j: tl.constexpr, alpha_res_ptr,
                            sk_eps: tl.constexpr, TMAX: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= N:
        return
    rows = tl.arange(0, HC)[:, None]
    cols = tl.arange(0, HC)[None, :]
    p, row_sum0, col_sum0, mat0 = _softmax_start(mix_ptr, b_ptr, alpha_res_ptr, pid, HC, stride_mn, stride_mm,
                                                 sk_eps)
    g = tl.load(grad_out_ptr + pid * stride_go_n + rows * stride_go_i + cols * stride_go_j).to(tl.float32)
    for t in tl.static_range(TMAX - 1, 0, -1):
        mat = mat0
        rs_t = row_sum0
        cs_t = col_sum0
        mat_t = mat0
        for s in tl.static_range(1, TMAX):
            rs = tl.sum(mat, axis=1)
            mat = mat / (rs[:, None] + sk_eps)
            cs = tl.sum(mat, axis=0)
            mat = mat / (cs[None, :] + sk_eps)
            if s == t:
                mat_t = mat
                rs_t = rs
                cs_t = cs
        denom_col = cs_t + sk_eps
        g_row = (g - tl.sum(g * mat_t, axis=0)[None, :]) / denom_col[None, :]
        m_row = mat_t * denom_col[None, :]
        g = (g_row - tl.sum(g_row * m_row, axis=1)[:, None]) / (rs_t + sk_eps)[:, None]
    g_p = (g - tl.sum(g * mat0, axis=0)[None, :]) / (col_sum0 + sk_eps)[None, :]
    grad = p * (g_p - tl.sum(g_p * p, axis=1)[:, None])
    tl.store(grad_logits_ptr + pid * stride_gl_n + rows * stride_gl_i + cols * stride_gl_j, grad)


@tiles.jit
def _sinkhorn_bwd_hist(mix_ptr, b_ptr, hist_ptr, grad_out_ptr, grad_logits_ptr, N: tl.constexpr, HC: tl.constexpr,
                       stride_mn: tl.constexpr, stride_mm: tl.constexpr, stride_hn: tl.constexpr,
                       stride_ht: tl.constexpr, stride_hi: tl.constexpr, stride_hj: tl.constexpr,
                       stride_go_n: tl.constexpr, stride_go_i: tl.constexpr, stride_go_j: tl.constexpr,
                       stride_gl_n: tl.constexpr, stride_gl_i: tl.constexpr, stride_gl_j: tl.constexpr,
                       alpha_res_ptr, sk_eps: tl.constexpr, TMAX: tl.constexpr):
    pid = tl.program_id(0)
    if pid >= N:
        return
    rows = tl.arange(0, HC)[:, None]
    cols = tl.arange(0, HC)[None, :]
    p, row_sum0, col_sum0, mat0 = _softmax_start(mix_ptr, b_ptr, alpha_res_ptr, pid, HC, stride_mn, stride_mm,
                                                 sk_eps)
    g = tl.load(grad_out_ptr + pid * stride_go_n + rows * stride_go_i + cols * stride_go_j).to(tl.float32)
    for t in tl.static_range(TMAX - 1, 0, -1):
        base = hist_ptr + pid * stride_hn + rows * stride_hi + cols * stride_hj
        mat_t = tl.load(base + t * stride_ht).to(tl.float32)
        mat_prev = tl.load(base + (t - 1) * stride_ht).to(tl.float32)
        row_sum = tl.sum(mat_prev, axis=1)
        denom_col = tl.sum(mat_prev / (row_sum[:, None] + sk_eps), axis=0) + sk_eps
        g_row = (g - tl.sum(g * mat_t, axis=0)[None, :]) / denom_col[None, :]
        m_row = mat_t * denom_col[None, :]
        g = (g_row - tl.sum(g_row * m_row, axis=1)[:, None]) / (row_sum + sk_eps)[:, None]
    g_p = (g - tl.sum(g * mat0, axis=0)[None, :]) / (col_sum0 + sk_eps)[None, :]
    grad = p * (g_p - tl.sum(g_p * p, axis=1)[:, None])
    tl.store(grad_logits_ptr + pid * stride_gl_n + rows * stride_gl_i + cols * stride_gl_j, grad)


def _sinkhorn_ref(logits, eps, tmax):
    e = np.exp(logits - logits.max(-1, keepdims=True))
    mat = e / e.sum(-1, keepdims=True) + eps
    mat = mat / (mat.sum(-2, keepdims=True) + eps)
    hist = [mat]
    for _ in range(tmax - 1):
        mat = mat / (mat.sum(-1, keepdims=True) + eps)
        mat = mat / (mat.sum(-2, keepdims=True) + eps)
        hist.append(mat)
    return mat, np.stack(hist, 1)


def _s(a):
    return [s // a.itemsize for s in a.strides]


def check(rng):
    N, HC, TMAX = 5, 4, 4
    pre_eps, sk_eps, post_mult = 1e-2, 1e-3, 2.0
    width = 2 * HC + HC * HC
    mix = np.ascontiguousarray(rng.standard_normal((width, N)).astype(np.float32)).T  # strides (1, N)
    b = rng.standard_normal(width).astype(np.float32) * 0.5
    a_pre, a_post, a_res = (np.array([v], np.float32) for v in (0.8, 1.2, 1.5))
    hpre = np.zeros((N, HC), np.float32)
    hpost = np.zeros((N, HC), np.float32)
    hres = np.zeros((N, HC, HC), np.float32)
    hist = np.zeros((N, TMAX, HC, HC), np.float32)
    _sinkhorn_fwd[(N + 1,)](mix, b, hpre, hpost, hres, hist, N, HC, *_s(mix), *_s(hpre), *_s(hpost), *_s(hres),
                            *_s(hist), a_pre, a_post, a_res, pre_eps, sk_eps, post_mult, TMAX, True)
    m64 = mix.astype(np.float64)
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    close(hpre, sig(m64[:, :HC] * 0.8 + b[:HC]) + pre_eps, rtol=1e-5, atol=1e-6)
    close(hpost, sig(m64[:, HC:2 * HC] * 1.2 + b[HC:2 * HC]) * post_mult, rtol=1e-5, atol=1e-6)
    logits = (m64[:, 2 * HC:] * 1.5 + b[2 * HC:]).reshape(N, HC, HC)
    mat, hist_ref = _sinkhorn_ref(logits, sk_eps, TMAX)
    close(hres, mat, rtol=1e-5, atol=1e-6)
    close(hist, hist_ref, rtol=1e-5, atol=1e-6)

    go = rng.standard_normal((N, HC, HC)).astype(np.float32)
    # numerical gradient of sum(go * sinkhorn(logits)) in float64
    num = np.zeros_like(logits)
    h = 1e-6
    for idx in np.ndindex(HC, HC):
        d = np.zeros((HC, HC))
        d[idx] = h
        up = (go * _sinkhorn_ref(logits + d, sk_eps, TMAX)[0]).sum((1, 2))
        dn = (go * _sinkhorn_ref(logits - d, sk_eps, TMAX)[0]).sum((1, 2))
        num[:, idx[0], idx[1]] = (up - dn) / (2 * h)
    gl = np.zeros((N, HC, HC), np.float32)
    go_t = np.ascontiguousarray(go.transpose(0, 2, 1)).transpose(0, 2, 1)  # column-major per token
    _sinkhorn_bwd_recompute[(N,)](mix, b, go_t, gl, N, HC, *_s(mix), *_s(go_t), *_s(gl), a_res, sk_eps, TMAX)
    close(gl, num, rtol=1e-3, atol=1e-4)
    gl2 = np.zeros((N, HC, HC), np.float32)
    _sinkhorn_bwd_hist[(N + 2,)](mix, b, hist, go, gl2, N, HC, *_s(mix), *_s(hist), *_s(go), *_s(gl2), a_res,
                                 sk_eps, TMAX)
    close(gl2, gl, rtol=1e-4, atol=1e-5)
