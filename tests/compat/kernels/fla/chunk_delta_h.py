"""flash-linear-attention style ``chunk_gated_delta_rule_fwd_h``: the inter-chunk recurrence of
the gated delta rule on a [BK, BV] fp32 state, grid (value blocks, batch*heads), the chunk loop a
``range`` over ``tl.cdiv(T, BT)``; per chunk it stores the state through a block pointer, forms
``v_new = u - w @ h`` with ``tl.dot``, decays by ``exp(g_last)`` and ``exp(g_last - g)``, and
adds ``k^T @ v_new`` with k^T read by a column-major block pointer; ``boundary_check`` on every
access, the gate loaded at ``min(end, T) - 1``, initial and final states optional (heuristics)."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.heuristics({"USE_INITIAL_STATE": lambda args: args["h0"] is not None,
                   "STORE_FINAL_STATE": lambda args: args["ht"] is not None})
@tiles.jit(do_not_specialize=["T"])
def _fwd_h(k, u, w, g, h, v_new, h0, ht, T, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
           BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, USE_INITIAL_STATE: tl.constexpr,
           STORE_FINAL_STATE: tl.constexpr):
    i_v, i_nh = tl.program_id(0), tl.program_id(1)
    i_n, i_h = i_nh // H, i_nh % H
    bos = i_n * T
    NT = tl.cdiv(T, BT)
    b_h = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_INITIAL_STATE:
        p_h0 = tl.make_block_ptr(h0 + i_nh * K * V, (K, V), (V, 1), (0, i_v * BV), (BK, BV), (1, 0))
        b_h += tl.load(p_h0, boundary_check=(0, 1)).to(tl.float32)
    for i_t in range(NT):
        p_h = tl.make_block_ptr(h + ((i_n * NT + i_t) * H + i_h) * K * V, (K, V), (V, 1), (0, i_v * BV),
                                (BK, BV), (1, 0))
        tl.store(p_h, b_h.to(p_h.dtype.element_ty), boundary_check=(0, 1))
        p_w = tl.make_block_ptr(w + (bos * H + i_h) * K, (T, K), (H * K, 1), (i_t * BT, 0), (BT, BK), (1, 0))
        p_u = tl.make_block_ptr(u + (bos * H + i_h) * V, (T, V), (H * V, 1), (i_t * BT, i_v * BV), (BT, BV), (1, 0))
        p_kt = tl.make_block_ptr(k + (bos * H + i_h) * K, (K, T), (1, H * K), (0, i_t * BT), (BK, BT), (0, 1))
        b_w = tl.load(p_w, boundary_check=(0, 1))
        b_v = tl.load(p_u, boundary_check=(0, 1)) - tl.dot(b_w, b_h.to(b_w.dtype), allow_tf32=False)
        p_vn = tl.make_block_ptr(v_new + (bos * H + i_h) * V, (T, V), (H * V, 1), (i_t * BT, i_v * BV),
                                 (BT, BV), (1, 0))
        tl.store(p_vn, b_v.to(p_vn.dtype.element_ty), boundary_check=(0, 1))
        last = min((i_t + 1) * BT, T) - 1
        b_g_last = tl.load(g + (bos + last) * H + i_h)
        o_t = i_t * BT + tl.arange(0, BT)
        b_g = tl.load(g + (bos + o_t) * H + i_h, mask=o_t < T, other=0.0)
        b_v = b_v * tl.where(o_t < T, tl.exp(b_g_last - b_g), 0.0)[:, None]
        b_h *= tl.exp(b_g_last)
        b_kt = tl.load(p_kt, boundary_check=(0, 1))
        b_h += tl.dot(b_kt, b_v.to(b_kt.dtype), allow_tf32=False)
    if STORE_FINAL_STATE:
        p_ht = tl.make_block_ptr(ht + i_nh * K * V, (K, V), (V, 1), (0, i_v * BV), (BK, BV), (1, 0))
        tl.store(p_ht, b_h.to(p_ht.dtype.element_ty), boundary_check=(0, 1))


def _reference(k, u, w, g, h0, BT):
    B, T, H, K = k.shape
    V = u.shape[-1]
    NT = -(-T // BT)
    hs = np.zeros((B, NT, H, K, V))
    vn = np.zeros((B, T, H, V))
    final = np.zeros((B, H, K, V))
    for b in range(B):
        for hh in range(H):
            state = h0[b, hh].astype(np.float64) if h0 is not None else np.zeros((K, V))
            for c in range(NT):
                s, e = c * BT, min((c + 1) * BT, T)
                hs[b, c, hh] = state
                v = u[b, s:e, hh] - w[b, s:e, hh] @ state
                vn[b, s:e, hh] = v
                gl = g[b, e - 1, hh]
                state = state * np.exp(gl) + k[b, s:e, hh].T @ (v * np.exp(gl - g[b, s:e, hh])[:, None])
            final[b, hh] = state
    return hs, vn, final


def check(rng):
    B, T, H, K, V, BT = 2, 37, 2, 24, 40, 16
    NT = tiles.cdiv(T, BT)
    k = (rng.standard_normal((B, T, H, K)) / 5).astype(np.float32)
    w = (rng.standard_normal((B, T, H, K)) / 5).astype(np.float32)
    u = rng.standard_normal((B, T, H, V)).astype(np.float32)
    g = np.zeros((B, T, H), np.float32)
    for c in range(NT):
        s, e = c * BT, min((c + 1) * BT, T)
        g[:, s:e] = np.cumsum(-rng.uniform(0, 0.1, (B, e - s, H)), 1)
    for h0 in (rng.standard_normal((B, H, K, V)).astype(np.float32), None):
        hs = np.full((B, NT, H, K, V), np.nan, np.float32)
        vn = np.full((B, T, H, V), np.nan, np.float32)
        ht = np.full((B, H, K, V), np.nan, np.float32)
        _fwd_h[(tiles.cdiv(V, 32), B * H)](k, u, w, g, hs, vn, h0, ht, T, H=H, K=K, V=V, BT=BT, BK=32, BV=32)
        want_h, want_vn, want_ht = _reference(k, u, w, g, h0, BT)
        close(hs, want_h, rtol=1e-4, atol=1e-4)
        close(vn, want_vn, rtol=1e-4, atol=1e-4)
        close(ht, want_ht, rtol=1e-4, atol=1e-4)
