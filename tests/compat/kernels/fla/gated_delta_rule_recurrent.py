"""flash-linear-attention style fused recurrent gated delta rule with variable-length sequences:
``cu_seqlens`` (or ``None``, picked by heuristics) gives each sequence's bounds loaded as int64,
the per-head scalar gate is applied as ``tl.exp2(g * RCP_LN2)`` with a module-level
``tl.constexpr`` float, q/k are L2-normalised in the kernel behind a flag, and the delta-rule
update ``h += k (beta (v - h^T k))^T`` runs on a [BK, BV] state carried through the time loop."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl

RCP_LN2 = tl.constexpr(1.4426950408889634)


@tiles.heuristics({
    "USE_INITIAL_STATE": lambda args: args["h0"] is not None,
    "IS_VARLEN": lambda args: args["cu_seqlens"] is not None,
})
@tiles.jit(do_not_specialize=["T"])
def _recurrent_gdr(q, k, v, g, beta, o, h0, cu_seqlens, scale, T, H: tl.constexpr, K: tl.constexpr,
                   V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, USE_INITIAL_STATE: tl.constexpr,
                   IS_VARLEN: tl.constexpr, USE_QK_L2NORM: tl.constexpr):
    i_v, i_nh = tl.program_id(0).to(tl.int64), tl.program_id(1).to(tl.int64)
    i_n, i_h = i_nh // H, i_nh % H
    if IS_VARLEN:
        bos = tl.load(cu_seqlens + i_n).to(tl.int64)
        eos = tl.load(cu_seqlens + i_n + 1).to(tl.int64)
        T = eos - bos
    else:
        bos = i_n * T
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    mask_k = o_k < K
    mask_v = o_v < V
    mask_h = mask_k[:, None] & mask_v[None, :]
    p_q = q + (bos * H + i_h) * K + o_k
    p_k = k + (bos * H + i_h) * K + o_k
    p_v = v + (bos * H + i_h) * V + o_v
    p_g = g + bos * H + i_h
    p_beta = beta + bos * H + i_h
    p_o = o + (bos * H + i_h) * V + o_v
    b_h = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_INITIAL_STATE:
        b_h += tl.load(h0 + i_nh * K * V + o_k[:, None] * V + o_v[None, :], mask=mask_h, other=0).to(tl.float32)
    for _ in range(0, T):
        b_q = tl.load(p_q, mask=mask_k, other=0).to(tl.float32)
        b_k = tl.load(p_k, mask=mask_k, other=0).to(tl.float32)
        b_v = tl.load(p_v, mask=mask_v, other=0).to(tl.float32)
        if USE_QK_L2NORM:
            b_q = b_q / tl.sqrt(tl.sum(b_q * b_q) + 1e-6)
            b_k = b_k / tl.sqrt(tl.sum(b_k * b_k) + 1e-6)
        b_q = b_q * scale
        b_h *= tl.exp2(tl.load(p_g).to(tl.float32) * RCP_LN2)
        b_v -= tl.sum(b_h * b_k[:, None], 0)
        b_v *= tl.load(p_beta).to(tl.float32)
        b_h += b_k[:, None] * b_v[None, :]
        b_o = tl.sum(b_h * b_q[:, None], 0)
        tl.store(p_o, b_o.to(p_o.dtype.element_ty), mask=mask_v)
        p_q += H * K
        p_k += H * K
        p_v += H * V
        p_g += H
        p_beta += H
        p_o += H * V


def _reference(q, k, v, g, beta, h0, bounds, scale, l2norm):
    out = np.zeros_like(v, dtype=np.float64)
    H = q.shape[1]
    for n, (bos, eos) in enumerate(bounds):
        for h in range(H):
            state = h0[n, h].astype(np.float64).copy() if h0 is not None else np.zeros((q.shape[2], v.shape[2]))
            for t in range(bos, eos):
                qt, kt = q[t, h].astype(np.float64), k[t, h].astype(np.float64)
                if l2norm:
                    qt = qt / np.sqrt((qt * qt).sum() + 1e-6)
                    kt = kt / np.sqrt((kt * kt).sum() + 1e-6)
                state *= np.exp(g[t, h])
                delta = (v[t, h] - kt @ state) * beta[t, h]
                state += np.outer(kt, delta)
                out[t, h] = (qt * scale) @ state
    return out


def check(rng):
    H, K, V = 2, 12, 20
    scale = K ** -0.5
    for lengths, with_h0, l2norm in (([5, 1, 9], True, True), ([6, 6], False, False)):
        total = sum(lengths)
        q = rng.standard_normal((total, H, K)).astype(np.float32)
        k = rng.standard_normal((total, H, K)).astype(np.float32)
        if not l2norm:
            k /= np.sqrt((k * k).sum(-1, keepdims=True))
        v = rng.standard_normal((total, H, V)).astype(np.float32)
        g = -rng.uniform(0.01, 0.5, (total, H)).astype(np.float32)
        beta = rng.uniform(0.1, 0.9, (total, H)).astype(np.float32)
        n = len(lengths)
        h0 = rng.standard_normal((n, H, K, V)).astype(np.float32) if with_h0 else None
        cu = np.r_[0, np.cumsum(lengths)].astype(np.int32)
        varlen = len(set(lengths)) > 1
        o = np.empty_like(v)
        BV = 8
        _recurrent_gdr[(tiles.cdiv(V, BV), n * H)](q, k, v, g, beta, o, h0, cu if varlen else None, scale,
                                                   lengths[0], H=H, K=K, V=V, BK=16, BV=BV,
                                                   USE_QK_L2NORM=l2norm)
        close(o, _reference(q, k, v, g, beta, h0, zip(cu[:-1], cu[1:]), scale, l2norm), rtol=1e-4, atol=1e-4)
