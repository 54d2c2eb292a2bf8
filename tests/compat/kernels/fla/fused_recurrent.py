"""flash-linear-attention style fused recurrent gated linear attention: a [BK, BV] state carried
through a loop over time, per-step pointer bumps, an optional initial state picked by heuristics,
the final state stored when asked."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.heuristics({
    "USE_INITIAL_STATE": lambda args: args["h0"] is not None,
    "STORE_FINAL_STATE": lambda args: args["ht"] is not None,
})
@tiles.jit(do_not_specialize=["T"])
def fused_recurrent_gla_fwd_kernel(q, k, v, g, o, h0, ht, scale, T, H: tl.constexpr, K: tl.constexpr,
                                   V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                                   USE_INITIAL_STATE: tl.constexpr, STORE_FINAL_STATE: tl.constexpr):
    i_v, i_k, i_bh = tl.program_id(0).to(tl.int64), tl.program_id(1).to(tl.int64), tl.program_id(2).to(tl.int64)
    i_b, i_h = i_bh // H, i_bh % H
    bos = i_b * T
    o_k = i_k * BK + tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    p_q = q + (bos * H + i_h) * K + o_k
    p_k = k + (bos * H + i_h) * K + o_k
    p_g = g + (bos * H + i_h) * K + o_k
    p_v = v + (bos * H + i_h) * V + o_v
    p_o = o + ((i_k * (T * H) + bos * H) + i_h) * V + o_v
    mask_k = o_k < K
    mask_v = o_v < V
    mask_h = mask_k[:, None] & mask_v[None, :]
    b_h = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_INITIAL_STATE:
        p_h0 = h0 + i_bh * K * V + o_k[:, None] * V + o_v[None, :]
        b_h += tl.load(p_h0, mask=mask_h, other=0).to(tl.float32)
    for _ in range(0, T):
        b_q = tl.load(p_q, mask=mask_k, other=0).to(tl.float32) * scale
        b_k = tl.load(p_k, mask=mask_k, other=0).to(tl.float32)
        b_v = tl.load(p_v, mask=mask_v, other=0).to(tl.float32)
        b_gk = tl.load(p_g, mask=mask_k, other=0).to(tl.float32)
        b_h = b_h * tl.exp(b_gk[:, None])
        b_h += b_k[:, None] * b_v[None, :]
        b_o = tl.sum(b_h * b_q[:, None], 0)
        tl.store(p_o, b_o.to(p_o.dtype.element_ty), mask=mask_v)
        p_q += H * K
        p_k += H * K
        p_g += H * K
        p_v += H * V
        p_o += H * V
    if STORE_FINAL_STATE:
        p_ht = ht + i_bh * K * V + o_k[:, None] * V + o_v[None, :]
        tl.store(p_ht, b_h.to(p_ht.dtype.element_ty), mask=mask_h)


def check(rng):
    B, T, H, K, V = 2, 11, 2, 12, 10
    q, k = (rng.standard_normal((B, T, H, K)).astype(np.float32) for _ in range(2))
    v = rng.standard_normal((B, T, H, V)).astype(np.float32)
    g = -rng.uniform(0.01, 1.0, (B, T, H, K)).astype(np.float32)
    h0 = rng.standard_normal((B, H, K, V)).astype(np.float32)
    BK, BV = 16, 8
    NK, NV = tiles.cdiv(K, BK), tiles.cdiv(V, BV)
    o = np.empty((NK, B, T, H, V), np.float32)
    ht = np.empty((B, H, K, V), np.float32)
    scale = K ** -0.5
    fused_recurrent_gla_fwd_kernel[(NV, NK, B * H)](q, k, v, g, o, h0, ht, scale, T, H=H, K=K, V=V, BK=BK, BV=BV)
    h = h0.astype(np.float64).copy()
    ref = np.empty((B, T, H, V))
    for t in range(T):
        h = h * np.exp(g[:, t])[..., None] + k[:, t][..., None] * v[:, t][..., None, :]
        ref[:, t] = (h * (q[:, t] * scale)[..., None]).sum(-2)
    close(o.sum(0), ref, rtol=1e-4, atol=1e-4)
    close(ht, h, rtol=1e-4, atol=1e-4)
