"""flash-linear-attention style ``chunk_fwd_o`` (simple GLA / retention output): per chunk,
``o = scale * ((q @ h) * exp(g)[:, None] + tril(q k^T * safe_exp(g_i - g_j)) @ v)``.  The
math functions are *module-level aliases* the way ``fla/ops/utils/op.py`` picks them
(``exp = tl.exp``, ``exp2 = tl.exp2``, ``log2 = tl.log2``, or libdevice's ``fast_expf`` /
``fast_log2f`` behind a switch) and called from kernels and from a ``safe_exp`` helper
(``exp(tl.where(x <= 0, x, float('-inf')))``); retention's per-head decay is made in the kernel
as ``log2(1 - exp2(-5 - i_h))`` when no gate tensor is given.  Tiles come from 2-D block pointers
and a 1-D one for the gate (``(T,), (H,), (i_t * BT,), (BT,), (0,)``), loads use
``padding_option="zero"``, the K loop accumulates ``tl.dot`` products into two tiles, the causal
mask joins ``o_t[:, None] >= o_t[None, :]`` with ``m_t[:, None] & m_t`` (a 2-D & 1-D broadcast)."""

import os

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra.cuda import libdevice as tldevice

if os.environ.get("FLA_USE_FAST_OPS", "0") == "1":
    exp = tldevice.fast_expf
    exp2 = tldevice.exp2
    log2 = tldevice.fast_log2f
else:
    exp = tl.exp
    exp2 = tl.exp2
    log2 = tl.log2


@tiles.jit
def safe_exp(x):
    return exp(tl.where(x <= 0, x, float("-inf")))


@tiles.heuristics({"USE_G": lambda args: args["g"] is not None})
@tiles.jit(do_not_specialize=["T"])
def _chunk_fwd_o(q, k, v, h, g, o, scale, T, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
                 BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, USE_G: tl.constexpr):
    i_v, i_t, i_bh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    i_b, i_h = i_bh // H, i_bh % H
    NT = tl.cdiv(T, BT)
    bos = i_b * T
    q += (bos * H + i_h) * K
    k += (bos * H + i_h) * K
    v += (bos * H + i_h) * V
    o += (bos * H + i_h) * V
    h += ((i_b * NT + i_t) * H + i_h).to(tl.int64) * K * V
    b_o = tl.zeros([BT, BV], dtype=tl.float32)
    b_A = tl.zeros([BT, BT], dtype=tl.float32)
    for i_k in range(tl.cdiv(K, BK)):
        p_q = tl.make_block_ptr(q, (T, K), (H * K, 1), (i_t * BT, i_k * BK), (BT, BK), (1, 0))
        p_k = tl.make_block_ptr(k, (K, T), (1, H * K), (i_k * BK, i_t * BT), (BK, BT), (0, 1))
        p_h = tl.make_block_ptr(h, (K, V), (V, 1), (i_k * BK, i_v * BV), (BK, BV), (1, 0))
        b_q = tl.load(p_q, boundary_check=(0, 1), padding_option="zero")
        b_k = tl.load(p_k, boundary_check=(0, 1), padding_option="zero")
        b_h = tl.load(p_h, boundary_check=(0, 1))
        b_o += tl.dot(b_q, b_h, input_precision="ieee")
        b_A += tl.dot(b_q, b_k, input_precision="ieee")
    if USE_G:
        p_g = tl.make_block_ptr(g + bos * H + i_h, (T,), (H,), (i_t * BT,), (BT,), (0,))
        b_g = tl.load(p_g, boundary_check=(0,))
    else:
        b_gamma = log2(1 - exp2(-5 - i_h * 1.0))
        b_g = b_gamma * (tl.arange(0, BT) + 1) / 1.4426950408889634
    b_o = b_o * exp(b_g)[:, None]
    b_A = b_A * safe_exp(b_g[:, None] - b_g[None, :])
    o_t = i_t * BT + tl.arange(0, BT)
    m_t = o_t < T
    m_A = (o_t[:, None] >= o_t[None, :]) & (m_t[:, None] & m_t)
    b_A = tl.where(m_A, b_A, 0)
    p_v = tl.make_block_ptr(v, (T, V), (H * V, 1), (i_t * BT, i_v * BV), (BT, BV), (1, 0))
    p_o = tl.make_block_ptr(o, (T, V), (H * V, 1), (i_t * BT, i_v * BV), (BT, BV), (1, 0))
    b_v = tl.load(p_v, boundary_check=(0, 1))
    b_o = b_o * scale + tl.dot(b_A.to(b_v.dtype), b_v, input_precision="ieee") * scale
    tl.store(p_o, b_o.to(p_o.dtype.element_ty), boundary_check=(0, 1))


def _reference(q, k, v, g, scale, BT):
    """Recurrent form: h_t = exp(g_t - g_{t-1}) h_{t-1} + k_t v_t^T, o_t = scale * q_t h_t; g per chunk
    is cumulative within the chunk, so the chunk states h (before each chunk) come out too."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    NT = -(-T // BT)
    out = np.zeros((B, T, H, V))
    states = np.zeros((B, NT, H, K, V))
    for b in range(B):
        for hh in range(H):
            S = np.zeros((K, V))
            for t in range(T):
                if t % BT == 0:
                    states[b, t // BT, hh] = S
                    decay = np.exp(g[b, t, hh])
                else:
                    decay = np.exp(g[b, t, hh] - g[b, t - 1, hh])
                S = decay * S + np.outer(k[b, t, hh], v[b, t, hh])
                out[b, t, hh] = scale * q[b, t, hh] @ S
    return out, states


def check(rng):
    B, T, H, K, V, BT = 2, 41, 2, 24, 20, 16
    NT = tiles.cdiv(T, BT)
    q, k = (rng.standard_normal((B, T, H, K)).astype(np.float32) * 0.5 for _ in range(2))
    v = rng.standard_normal((B, T, H, V)).astype(np.float32)
    g = -rng.uniform(0.01, 0.3, (B, T, H))
    for c in range(NT):
        g[:, c * BT:(c + 1) * BT] = np.cumsum(g[:, c * BT:(c + 1) * BT], 1)
    g = g.astype(np.float32)
    scale = K ** -0.5
    expected, states = _reference(q, k, v, g.astype(np.float64), scale, BT)
    o = np.full((B, T, H, V), np.nan, np.float32)
    grid = (tiles.cdiv(V, 16), NT, B * H)
    _chunk_fwd_o[grid](q, k, v, states.astype(np.float32), g, o, scale, T, H=H, K=K, V=V, BT=BT, BK=16, BV=16)
    close(o, expected, rtol=1e-4, atol=1e-4)
    # retention: the decay made in the kernel per head
    gamma = np.log(1 - 2.0 ** (-5.0 - np.arange(H)))
    gr = np.zeros((B, T, H))
    for t in range(T):
        gr[:, t] = gamma * (t % BT + 1)
    expected, states = _reference(q, k, v, gr, scale, BT)
    o = np.full((B, T, H, V), np.nan, np.float32)
    _chunk_fwd_o[grid](q, k, v, states.astype(np.float32), None, o, scale, T, H=H, K=K, V=V, BT=BT, BK=16, BV=16)
    close(o, expected, rtol=1e-4, atol=1e-4)
