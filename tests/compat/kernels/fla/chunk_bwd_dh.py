"""flash-linear-attention style ``chunk_bwd_dh`` for simple GLA: the state gradient runs backwards
over chunks, ``for i_t in range(NT - 1, -1, -1)`` (a negative-step ``range`` with run-time
bounds), storing ``dh`` of chunk ``i_t`` before ``dh = dh * exp(g_last) + (q * exp(g) * scale)^T do``.
The transposed q tile and the do tile come from block pointers made once at the *last* chunk and
moved backwards with ``tl.advance(p, (0, -BT))`` / ``tl.advance(p, (-BT, 0))`` under
``boundary_check``; the gate of the chunk's last valid step is loaded at
``min(i_t * BT + BT, T) - 1`` (builtin ``min``); the per-chunk products use ``tl.dot`` with
``input_precision="ieee"`` and the optional final-state gradient ``dht`` is added at the start."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.heuristics({"USE_FINAL_STATE_GRADIENT": lambda args: args["dht"] is not None})
@tiles.jit(do_not_specialize=["T"])
def _chunk_bwd_dh(q, g, do, dh, dht, scale, T, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
                  BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, USE_FINAL_STATE_GRADIENT: tl.constexpr):
    i_k, i_v, i_bh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    i_b, i_h = i_bh // H, i_bh % H
    NT = tl.cdiv(T, BT)
    bos = i_b * T
    b_dh = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_FINAL_STATE_GRADIENT:
        p_dht = tl.make_block_ptr(dht + i_bh * K * V, (K, V), (V, 1), (i_k * BK, i_v * BV), (BK, BV), (1, 0))
        b_dh += tl.load(p_dht, boundary_check=(0, 1)).to(tl.float32)
    p_q = tl.make_block_ptr(q + (bos * H + i_h) * K, (K, T), (1, H * K), (i_k * BK, (NT - 1) * BT), (BK, BT), (0, 1))
    p_do = tl.make_block_ptr(do + (bos * H + i_h) * V, (T, V), (H * V, 1), ((NT - 1) * BT, i_v * BV), (BT, BV),
                             (1, 0))
    o_t = tl.arange(0, BT)
    for i_t in range(NT - 1, -1, -1):
        p_dh = tl.make_block_ptr(dh + ((i_b * (NT + 1) + i_t) * H + i_h) * K * V, (K, V), (V, 1), (i_k * BK, i_v * BV),
                                 (BK, BV), (1, 0))
        tl.store(p_dh, b_dh.to(p_dh.dtype.element_ty), boundary_check=(0, 1))
        last = min(i_t * BT + BT, T) - 1
        b_g_last = tl.load(g + (bos + last) * H + i_h)
        m_t = i_t * BT + o_t < T
        b_g = tl.load(g + (bos + i_t * BT + o_t) * H + i_h, mask=m_t, other=0.0)
        b_q = tl.load(p_q, boundary_check=(0, 1))
        b_q = (b_q * tl.exp(b_g)[None, :] * scale).to(b_q.dtype)
        b_do = tl.load(p_do, boundary_check=(0, 1))
        b_dh *= tl.exp(b_g_last)
        b_dh += tl.dot(b_q, b_do.to(b_q.dtype), input_precision="ieee")
        p_q = tl.advance(p_q, (0, -BT))
        p_do = tl.advance(p_do, (-BT, 0))
    p_dh0 = tl.make_block_ptr(dh + ((i_b * (NT + 1) + NT) * H + i_h) * K * V, (K, V), (V, 1), (i_k * BK, i_v * BV),
                              (BK, BV), (1, 0))
    tl.store(p_dh0, b_dh.to(p_dh0.dtype.element_ty), boundary_check=(0, 1))


def check(rng):
    B, T, H, K, V, BT = 2, 45, 2, 20, 24, 16
    NT = tiles.cdiv(T, BT)
    q = rng.standard_normal((B, T, H, K)).astype(np.float32)
    do = rng.standard_normal((B, T, H, V)).astype(np.float32)
    g = np.cumsum(-rng.uniform(0.01, 0.2, (B, T, H)), 1)
    # chunk-local cumulative gates, as chunk_local_cumsum gives them
    for c in range(NT):
        s = c * BT
        if s:
            g[:, s:s + BT] -= g[:, s - 1:s]
    g = g.astype(np.float32)
    dht = rng.standard_normal((B, H, K, V)).astype(np.float32)
    scale = K ** -0.5
    for final in (dht, None):
        # one slot past the last chunk holds the gradient of the initial state
        dh = np.full((B, NT + 1, H, K, V), np.nan, np.float32)
        _chunk_bwd_dh[(tiles.cdiv(K, 16), tiles.cdiv(V, 16), B * H)](q, g, do, dh, final, scale, T, H=H, K=K, V=V,
                                                                    BT=BT, BK=16, BV=16)
        expected = np.zeros((B, NT + 1, H, K, V))
        for b in range(B):
            for h in range(H):
                state = final[b, h].astype(np.float64) if final is not None else np.zeros((K, V))
                for c in range(NT - 1, -1, -1):
                    expected[b, c, h] = state
                    s, e = c * BT, min(c * BT + BT, T)
                    qg = q[b, s:e, h] * np.exp(g[b, s:e, h, None].astype(np.float64)) * scale
                    state = state * np.exp(g[b, e - 1, h]) + qg.T @ do[b, s:e, h]
                expected[b, NT, h] = state
        close(dh, expected, rtol=1e-4, atol=1e-4)
