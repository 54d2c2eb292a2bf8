"""SGLang ``extend_attention`` (prefill of new tokens on top of a cached prefix): per (sequence, head,
query block), stage 1 attends to the prefix gathered from a paged KV buffer through ``kv_indices``
(K loaded transposed with the slot index on the column axis), stage 2 to the new tokens
themselves; one online softmax spans both.  Exercises varlen bounds from ``qo_indptr``/``kv_indptr``,
GQA (``cur_head // kv_group_num``), the loop variable reassigned in the body
(``start_n = tl.multiple_of(start_n, BLOCK_N)``), a conditional expression on a constexpr for the
causal loop end (``x if not IS_CAUSAL else tl.minimum(...)``), ``USE_CUSTOM_MASK and not
SKIP_PREFIX_CUSTOM_MASK``, a boolean custom mask loaded from a flat per-sequence buffer and
narrowed with ``&=``, ``logit_cap * tanh(qk / logit_cap)`` behind ``if logit_cap > 0``,
``tl.dot(q, k, out_dtype=tl.float32)``, ``-inf`` masking with ``tl.where`` and an epilogue that may
store through transposed pointer/mask/value tiles (``STORE_TRANSPOSE``: ``offs_o.T``)."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra.libdevice import tanh


@tiles.jit
def _extend_fwd(Q_Extend, K_Extend, V_Extend, O_Extend, K_Buffer, V_Buffer, qo_indptr, kv_indptr, kv_indices,
                mask_ptr, mask_indptr, sm_scale, kv_group_num, stride_qbs, stride_qh, stride_kbs, stride_kh,
                stride_vbs, stride_vh, stride_obs, stride_oh, stride_buf_kbs, stride_buf_kh, stride_buf_vbs,
                stride_buf_vh, logit_cap: tl.constexpr, Lq: tl.constexpr, Lv: tl.constexpr,
                BLOCK_DMODEL: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                USE_CUSTOM_MASK: tl.constexpr, IS_CAUSAL: tl.constexpr, SKIP_PREFIX_CUSTOM_MASK: tl.constexpr,
                STORE_TRANSPOSE: tl.constexpr):
    cur_seq = tl.program_id(0)
    cur_head = tl.program_id(1)
    cur_block_m = tl.program_id(2)
    cur_kv_head = cur_head // kv_group_num
    cur_seq_extend_start_idx = tl.load(qo_indptr + cur_seq)
    cur_seq_len_extend = tl.load(qo_indptr + cur_seq + 1) - cur_seq_extend_start_idx
    cur_seq_kv_start_idx = tl.load(kv_indptr + cur_seq)
    cur_seq_len_prefix = tl.load(kv_indptr + cur_seq + 1) - cur_seq_kv_start_idx
    cur_seq_len = cur_seq_len_prefix + cur_seq_len_extend
    if USE_CUSTOM_MASK:
        cur_seq_mask_start_idx = tl.load(mask_indptr + cur_seq)
    offs_d = tl.arange(0, BLOCK_DMODEL)
    offs_dv = tl.arange(0, BLOCK_DV)
    offs_m = tl.arange(0, BLOCK_M)
    mask_m = (cur_block_m * BLOCK_M + offs_m) < cur_seq_len_extend
    mask_d = offs_d < Lq
    mask_dv = offs_dv < Lv
    offs_q = ((cur_seq_extend_start_idx + cur_block_m * BLOCK_M + offs_m[:, None]) * stride_qbs
              + cur_head * stride_qh + offs_d[None, :])
    q = tl.load(Q_Extend + offs_q, mask=(mask_m[:, None]) & (mask_d[None, :]), other=0.0)
    offs_n = tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], dtype=tl.float32)
    deno = tl.zeros([BLOCK_M], dtype=tl.float32)
    e_max = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    for start_n in range(0, cur_seq_len_prefix, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        mask_n = (start_n + offs_n) < cur_seq_len_prefix
        offs_kv_loc = tl.load(kv_indices + cur_seq_kv_start_idx + start_n + offs_n, mask=mask_n, other=0)
        offs_buf_k = offs_kv_loc[None, :] * stride_buf_kbs + cur_kv_head * stride_buf_kh + offs_d[:, None]
        k = tl.load(K_Buffer + offs_buf_k, mask=(mask_n[None, :]) & (mask_d[:, None]), other=0.0)
        qk = tl.dot(q.to(k.dtype), k)
        qk *= sm_scale
        if logit_cap > 0:
            qk = logit_cap * tanh(qk / logit_cap)
        if USE_CUSTOM_MASK and not SKIP_PREFIX_CUSTOM_MASK:
            custom_mask = tl.load(mask_ptr + cur_seq_mask_start_idx + (cur_block_m * BLOCK_M + offs_m[:, None])
                                  * cur_seq_len + start_n + offs_n[None, :],
                                  mask=(mask_m[:, None] & mask_n[None, :]), other=0)
            custom_mask &= mask_m[:, None] & mask_n[None, :]
            qk = tl.where(custom_mask, qk, float("-inf"))
        else:
            qk = tl.where(mask_m[:, None] & mask_n[None, :], qk, float("-inf"))
        n_e_max = tl.maximum(tl.max(qk, 1), e_max)
        re_scale = tl.exp(e_max - n_e_max)
        p = tl.exp(qk - n_e_max[:, None])
        deno = deno * re_scale + tl.sum(p, 1)
        offs_buf_v = offs_kv_loc[:, None] * stride_buf_vbs + cur_kv_head * stride_buf_vh + offs_dv[None, :]
        v = tl.load(V_Buffer + offs_buf_v, mask=mask_n[:, None] & mask_dv[None, :], other=0.0)
        p = p.to(v.dtype)
        acc = acc * re_scale[:, None] + tl.dot(p, v)
        e_max = n_e_max
    cur_block_m_end = (cur_seq_len_extend if not IS_CAUSAL
                       else tl.minimum(cur_seq_len_extend, (cur_block_m + 1) * BLOCK_M))
    for start_n in range(0, cur_block_m_end, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        mask_n = (start_n + offs_n) < cur_block_m_end
        offs_k = ((cur_seq_extend_start_idx + start_n + offs_n[None, :]) * stride_kbs + cur_kv_head * stride_kh
                  + offs_d[:, None])
        k = tl.load(K_Extend + offs_k, mask=(mask_n[None, :]) & (mask_d[:, None]), other=0.0)
        qk = tl.dot(q, k, out_dtype=tl.float32)
        qk *= sm_scale
        if logit_cap > 0:
            qk = logit_cap * tanh(qk / logit_cap)
        if USE_CUSTOM_MASK:
            custom_mask = tl.load(mask_ptr + cur_seq_mask_start_idx + (cur_block_m * BLOCK_M + offs_m[:, None])
                                  * cur_seq_len + cur_seq_len_prefix + start_n + offs_n[None, :],
                                  mask=(mask_m[:, None] & mask_n[None, :]), other=0)
            custom_mask &= mask_m[:, None] & mask_n[None, :]
            qk = tl.where(custom_mask, qk, float("-inf"))
        elif IS_CAUSAL:
            mask_causual = (cur_block_m * BLOCK_M + offs_m[:, None]) >= (start_n + offs_n[None, :])
            mask_causual &= mask_m[:, None] & mask_n[None, :]
            qk = tl.where(mask_causual, qk, float("-inf"))
        else:
            qk = tl.where(mask_m[:, None] & mask_n[None, :], qk, float("-inf"))
        n_e_max = tl.maximum(tl.max(qk, 1), e_max)
        re_scale = tl.exp(e_max - n_e_max)
        p = tl.exp(qk - n_e_max[:, None])
        deno = deno * re_scale + tl.sum(p, 1)
        offs_v = ((cur_seq_extend_start_idx + start_n + offs_n[:, None]) * stride_vbs + cur_kv_head * stride_vh
                  + offs_dv[None, :])
        v = tl.load(V_Extend + offs_v, mask=mask_n[:, None] & mask_dv[None, :], other=0.0)
        p = p.to(v.dtype)
        acc = acc * re_scale[:, None] + tl.dot(p, v)
        e_max = n_e_max
    offs_o = ((cur_seq_extend_start_idx + cur_block_m * BLOCK_M + offs_m[:, None]) * stride_obs
              + cur_head * stride_oh + offs_dv[None, :])
    if STORE_TRANSPOSE:
        tl.store(O_Extend + offs_o.T, (acc / deno[:, None]).T, mask=(mask_m[:, None] & mask_dv[None, :]).T)
    else:
        tl.store(O_Extend + offs_o, acc / deno[:, None], mask=mask_m[:, None] & mask_dv[None, :])


def _reference(q, k, v, kb, vb, qo, kvp, kv_idx, group, scale, cap, causal, masks):
    out = np.zeros(q.shape[:2] + (v.shape[2],))
    for s in range(len(qo) - 1):
        qs, qe, ps, pe = qo[s], qo[s + 1], kvp[s], kvp[s + 1]
        n_ext, n_pre = qe - qs, pe - ps
        for h in range(q.shape[1]):
            kh = h // group
            keys = np.concatenate([kb[kv_idx[ps:pe], kh], k[qs:qe, kh]]).astype(np.float64)
            vals = np.concatenate([vb[kv_idx[ps:pe], kh], v[qs:qe, kh]]).astype(np.float64)
            sc = q[qs:qe, h].astype(np.float64) @ keys.T * scale
            if cap > 0:
                sc = cap * np.tanh(sc / cap)
            if masks is not None:
                allowed = masks[s]
            elif causal:
                allowed = np.concatenate([np.ones((n_ext, n_pre), bool), np.tril(np.ones((n_ext, n_ext), bool))], 1)
            else:
                allowed = np.ones((n_ext, n_pre + n_ext), bool)
            sc = np.where(allowed, sc, -np.inf)
            p = np.exp(sc - sc.max(1, keepdims=True))
            out[qs:qe, h] = (p / p.sum(1, keepdims=True)) @ vals
    return out


def check(rng):
    H, HKV, D, DV, slots = 4, 2, 24, 20, 64
    ext = np.array([19, 5, 33])
    pre = np.array([7, 0, 21])
    qo = np.concatenate([[0], np.cumsum(ext)]).astype(np.int32)
    kvp = np.concatenate([[0], np.cumsum(pre)]).astype(np.int32)
    kv_idx = rng.permutation(slots)[: kvp[-1]].astype(np.int64)
    T = int(qo[-1])
    q = rng.standard_normal((T, H, D)).astype(np.float16)
    k = rng.standard_normal((T, HKV, D)).astype(np.float16)
    v = rng.standard_normal((T, HKV, DV)).astype(np.float16)
    kb = rng.standard_normal((slots, HKV, D)).astype(np.float16)
    vb = rng.standard_normal((slots, HKV, DV)).astype(np.float16)
    scale = D ** -0.5
    BLOCK_M, BLOCK_N = 16, 16
    grid = (len(ext), H, tiles.cdiv(int(ext.max()), BLOCK_M))
    # a tree-style custom mask per sequence over [prefix | extend], all prefix visible
    masks, flat = [], []
    for n_e, n_p in zip(ext, pre, strict=True):
        m = np.concatenate([np.ones((n_e, n_p), bool), np.tril(rng.random((n_e, n_e)) < 0.6)], 1)
        m[np.arange(n_e), n_p + np.arange(n_e)] = True
        m[:, n_p] = True
        masks.append(m)
        flat.append(m.reshape(-1))
    mask_flat = np.concatenate(flat)
    mask_indptr = np.concatenate([[0], np.cumsum([m.size for m in masks])[:-1]]).astype(np.int64)
    for causal, cap, use_mask, transpose in ((True, 0.0, False, False), (False, 3.0, True, True)):
        o = np.full((T, H, DV), np.nan, np.float16)
        _extend_fwd[grid](q, k, v, o, kb, vb, qo, kvp, kv_idx, mask_flat, mask_indptr, scale, H // HKV,
                          H * D, D, HKV * D, D, HKV * DV, DV, H * DV, DV, HKV * D, D, HKV * DV, DV,
                          logit_cap=cap, Lq=D, Lv=DV, BLOCK_DMODEL=32, BLOCK_DV=32, BLOCK_M=BLOCK_M,
                          BLOCK_N=BLOCK_N, USE_CUSTOM_MASK=use_mask, IS_CAUSAL=causal, SKIP_PREFIX_CUSTOM_MASK=False,
                          STORE_TRANSPOSE=transpose)
        expected = _reference(q, k, v, kb, vb, qo, kvp, kv_idx, H // HKV, scale, cap, causal,
                              masks if use_mask else None)
        close(o, expected, rtol=5e-3, atol=5e-3)
