"""flash-linear-attention style fused recurrent RWKV-6: a [BK, BV] state per (value block, sequence,
head) updated ``h = h * exp(w)[:, None] + k v^T`` with the bonus ``u`` applied to the current token
(``o = sum((h + u * k v^T) * q)``), run forwards or backwards in time (``REVERSE``): the start
pointer is ``bos + ((T - 1) if REVERSE else 0)`` -- a conditional expression on a constexpr whose
arms are run-time values -- and every pointer steps by ``(-1 if REVERSE else 1) * H * K``.
Variable-length sequences come from ``cu_seqlens`` (bounds loaded and ``T`` reassigned), initial
and final states are optional (heuristics on ``None``), the value block index is taken as int64
(``tl.program_id(0).to(tl.int64)``), and the output is stored in the pointer's element type (fp16)."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.heuristics({
    "USE_INITIAL_STATE": lambda args: args["h0"] is not None,
    "STORE_FINAL_STATE": lambda args: args["ht"] is not None,
    "IS_VARLEN": lambda args: args["cu_seqlens"] is not None,
})
@tiles.jit(do_not_specialize=["T"])
def _rwkv6_recurrent(q, k, v, w, u, o, h0, ht, cu_seqlens, scale, T, B: tl.constexpr, H: tl.constexpr,
                     K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr,
                     REVERSE: tl.constexpr, USE_INITIAL_STATE: tl.constexpr, STORE_FINAL_STATE: tl.constexpr,
                     IS_VARLEN: tl.constexpr):
    i_v, i_k, i_nh = tl.program_id(0).to(tl.int64), tl.program_id(1).to(tl.int64), tl.program_id(2).to(tl.int64)
    i_n, i_h = i_nh // H, i_nh % H
    if IS_VARLEN:
        bos, eos = tl.load(cu_seqlens + i_n).to(tl.int64), tl.load(cu_seqlens + i_n + 1).to(tl.int64)
        T = eos - bos
    else:
        bos, eos = i_n * T, i_n * T + T
    o_k = i_k * BK + tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    p_q = q + (bos + ((T - 1) if REVERSE else 0)) * H * K + i_h * K + o_k
    p_k = k + (bos + ((T - 1) if REVERSE else 0)) * H * K + i_h * K + o_k
    p_v = v + (bos + ((T - 1) if REVERSE else 0)) * H * V + i_h * V + o_v
    p_w = w + (bos + ((T - 1) if REVERSE else 0)) * H * K + i_h * K + o_k
    p_o = o + (bos + ((T - 1) if REVERSE else 0)) * H * V + i_h * V + o_v
    p_u = u + i_h * K + o_k
    mask_k = o_k < K
    mask_v = o_v < V
    mask_h = mask_k[:, None] & mask_v[None, :]
    b_h = tl.zeros([BK, BV], dtype=tl.float32)
    if USE_INITIAL_STATE:
        p_h0 = h0 + i_nh * K * V + o_k[:, None] * V + o_v[None, :]
        b_h += tl.load(p_h0, mask=mask_h, other=0).to(tl.float32)
    b_u = tl.load(p_u, mask=mask_k, other=0).to(tl.float32)
    for _ in range(0, T):
        b_q = tl.load(p_q, mask=mask_k, other=0).to(tl.float32) * scale
        b_k = tl.load(p_k, mask=mask_k, other=0).to(tl.float32)
        b_v = tl.load(p_v, mask=mask_v, other=0).to(tl.float32)
        b_w = tl.load(p_w, mask=mask_k, other=0).to(tl.float32)
        b_kv = b_k[:, None] * b_v[None, :]
        b_o = tl.sum((b_h + b_kv * b_u[:, None]) * b_q[:, None], 0)
        b_h = b_h * tl.exp(b_w)[:, None] + b_kv
        tl.store(p_o, b_o.to(p_o.dtype.element_ty), mask=mask_v)
        p_q += (-1 if REVERSE else 1) * H * K
        p_k += (-1 if REVERSE else 1) * H * K
        p_v += (-1 if REVERSE else 1) * H * V
        p_w += (-1 if REVERSE else 1) * H * K
        p_o += (-1 if REVERSE else 1) * H * V
    if STORE_FINAL_STATE:
        p_ht = ht + i_nh * K * V + o_k[:, None] * V + o_v[None, :]
        tl.store(p_ht, b_h.to(p_ht.dtype.element_ty), mask=mask_h)


def _reference(q, k, v, w, u, h0, bounds, scale, reverse):
    H, K, V = q.shape[1], q.shape[2], v.shape[2]
    out = np.zeros(v.shape)
    final = np.zeros((len(bounds), H, K, V))
    for n, (bos, eos) in enumerate(bounds):
        for h in range(H):
            state = h0[n, h].astype(np.float64).copy() if h0 is not None else np.zeros((K, V))
            steps = range(eos - 1, bos - 1, -1) if reverse else range(bos, eos)
            for t in steps:
                kv = np.outer(k[t, h], v[t, h]).astype(np.float64)
                out[t, h] = ((state + kv * u[h][:, None]) * (q[t, h] * scale)[:, None]).sum(0)
                state = state * np.exp(w[t, h].astype(np.float64))[:, None] + kv
            final[n, h] = state
    return out, final


def check(rng):
    H, K, V, BK, BV = 2, 20, 24, 32, 16
    cu = np.array([0, 9, 10, 27], np.int32)
    T = int(cu[-1])
    N = len(cu) - 1
    q, k = (rng.standard_normal((T, H, K)).astype(np.float32) * 0.5 for _ in range(2))
    v = rng.standard_normal((T, H, V)).astype(np.float32)
    w = -np.exp(rng.standard_normal((T, H, K))).astype(np.float32) * 0.3
    u = rng.standard_normal((H, K)).astype(np.float32)
    h0 = rng.standard_normal((N, H, K, V)).astype(np.float32)
    scale = K ** -0.5
    bounds = list(zip(cu[:-1], cu[1:], strict=True))
    grid = (tiles.cdiv(V, BV), tiles.cdiv(K, BK), N * H)
    for reverse in (False, True):
        o = np.full((T, H, V), np.nan, np.float16)
        ht = np.empty((N, H, K, V), np.float32)
        _rwkv6_recurrent[grid](q, k, v, w, u, o, h0, ht, cu, scale, T, B=1, H=H, K=K, V=V, BK=BK, BV=BV,
                               REVERSE=reverse)
        eo, eh = _reference(q, k, v, w, u, h0, bounds, scale, reverse)
        close(o, eo, rtol=2e-3, atol=2e-3)
        close(ht, eh, rtol=1e-4, atol=1e-4)
    # fixed length batch, no states
    B, Tf = 2, 7
    qf, kf = (rng.standard_normal((B * Tf, H, K)).astype(np.float32) for _ in range(2))
    vf = rng.standard_normal((B * Tf, H, V)).astype(np.float32)
    wf = -rng.uniform(0, 1, (B * Tf, H, K)).astype(np.float32)
    of = np.full((B * Tf, H, V), np.nan, np.float16)
    _rwkv6_recurrent[(tiles.cdiv(V, BV), 1, B * H)](qf, kf, vf, wf, u, of, None, None, None, scale, Tf, B=B, H=H,
                                                    K=K, V=V, BK=BK, BV=BV, REVERSE=True)
    eo, _ = _reference(qf, kf, vf, wf, u, None, [(b * Tf, b * Tf + Tf) for b in range(B)], scale, True)
    close(of, eo, rtol=2e-3, atol=2e-3)
