"""SGLang style two-stage decode attention (split-KV / flash-decoding): stage one, grid (batch,
head, split), walks its slice of the request's tokens found through a ``req_to_token`` table,
with a runtime ``if split_end > split_start`` around the loop, and stores a normalised partial
output plus its log-sum-exp; stage two, grid (batch, head), merges the splits with a running
max; ``logit_cap`` as a ``tl.constexpr`` float applies ``cap * tanh(s / cap)``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _tanh(x):
    return 2 * tl.sigmoid(2 * x) - 1


@tiles.jit
def _decode_stage1(Q, K_Buffer, V_Buffer, sm_scale, req_to_token, b_req_idx, b_seqlen, Att_Out, Att_Lse,
                   stride_req, stride_qbs, stride_qh, stride_buf_kbs, stride_buf_kh, stride_mid_ob,
                   stride_mid_oh, stride_mid_os, kv_group_num: tl.constexpr, BLOCK_DMODEL: tl.constexpr,
                   BLOCK_N: tl.constexpr, NUM_KV_SPLITS: tl.constexpr, logit_cap: tl.constexpr, Lk: tl.constexpr):
    cur_batch = tl.program_id(0)
    cur_head = tl.program_id(1)
    split = tl.program_id(2)
    cur_kv_head = cur_head // kv_group_num
    offs_d = tl.arange(0, BLOCK_DMODEL)
    mask_d = offs_d < Lk
    seq_len = tl.load(b_seqlen + cur_batch)
    req = tl.load(b_req_idx + cur_batch)
    q = tl.load(Q + cur_batch * stride_qbs + cur_head * stride_qh + offs_d, mask=mask_d, other=0.0)
    per_split = tl.cdiv(seq_len, NUM_KV_SPLITS)
    split_start = per_split * split
    split_end = tl.minimum(split_start + per_split, seq_len)
    e_max = -float("inf")
    e_sum = 0.0
    acc = tl.zeros([BLOCK_DMODEL], dtype=tl.float32)
    if split_end > split_start:
        for start_n in range(split_start, split_end, BLOCK_N):
            offs_n = start_n + tl.arange(0, BLOCK_N)
            live = offs_n < split_end
            loc = tl.load(req_to_token + req * stride_req + offs_n, mask=live, other=0)
            kv_offs = loc[:, None] * stride_buf_kbs + cur_kv_head * stride_buf_kh + offs_d[None, :]
            k = tl.load(K_Buffer + kv_offs, mask=live[:, None] & mask_d[None, :], other=0.0)
            qk = tl.sum(q[None, :] * k, 1) * sm_scale
            if logit_cap > 0:
                qk = logit_cap * _tanh(qk / logit_cap)
            qk = tl.where(live, qk, float("-inf"))
            v = tl.load(V_Buffer + kv_offs, mask=live[:, None] & mask_d[None, :], other=0.0)
            n_max = tl.maximum(tl.max(qk, 0), e_max)
            rescale = tl.exp(e_max - n_max)
            p = tl.exp(qk - n_max)
            acc *= rescale
            acc += tl.sum(p[:, None] * v, 0)
            e_sum = e_sum * rescale + tl.sum(p, 0)
            e_max = n_max
        mid = cur_batch * stride_mid_ob + cur_head * stride_mid_oh + split * stride_mid_os
        tl.store(Att_Out + mid + offs_d, acc / e_sum, mask=mask_d)
        tl.store(Att_Lse + (cur_batch * stride_mid_ob + cur_head * stride_mid_oh) // Lk + split, e_max + tl.log(e_sum))


@tiles.jit
def _decode_stage2(Mid_O, Mid_Lse, Out, b_seqlen, stride_mid_ob, stride_mid_oh, stride_mid_os, stride_obs, stride_oh,
                   NUM_KV_SPLITS: tl.constexpr, BLOCK_DV: tl.constexpr, Lv: tl.constexpr):
    cur_batch = tl.program_id(0)
    cur_head = tl.program_id(1)
    seq_len = tl.load(b_seqlen + cur_batch)
    offs_d = tl.arange(0, BLOCK_DV)
    mask_d = offs_d < Lv
    e_sum = 0.0
    e_max = -float("inf")
    acc = tl.zeros([BLOCK_DV], dtype=tl.float32)
    base = cur_batch * stride_mid_ob + cur_head * stride_mid_oh
    per_split = tl.cdiv(seq_len, NUM_KV_SPLITS)
    for split in range(0, NUM_KV_SPLITS):
        split_end = tl.minimum(per_split * split + per_split, seq_len)
        if split_end > per_split * split:
            tv = tl.load(Mid_O + base + split * stride_mid_os + offs_d, mask=mask_d, other=0.0)
            tlogic = tl.load(Mid_Lse + base // Lv + split)
            n_max = tl.maximum(tlogic, e_max)
            old_scale = tl.exp(e_max - n_max)
            acc *= old_scale
            exp_logic = tl.exp(tlogic - n_max)
            acc += exp_logic * tv
            e_sum = e_sum * old_scale + exp_logic
            e_max = n_max
    tl.store(Out + cur_batch * stride_obs + cur_head * stride_oh + offs_d, acc / e_sum, mask=mask_d)


def check(rng):
    batch, q_heads, kv_heads, dim, splits, pool = 3, 4, 2, 24, 4, 64
    seqlens = np.array([21, 2, 40], np.int32)
    req_idx = np.array([2, 0, 1], np.int32)
    req_to_token = np.zeros((3, 48), np.int32)
    for r in range(3):
        req_to_token[r] = rng.permutation(pool)[:48]
    k_buf = rng.standard_normal((pool, kv_heads, dim)).astype(np.float32)
    v_buf = rng.standard_normal((pool, kv_heads, dim)).astype(np.float32)
    q = rng.standard_normal((batch, q_heads, dim)).astype(np.float32)
    scale = dim ** -0.5
    for cap in (0.0, 2.5):
        mid_o = np.zeros((batch, q_heads, splits, dim), np.float32)
        mid_lse = np.zeros((batch, q_heads, splits), np.float32)
        o = np.empty((batch, q_heads, dim), np.float32)
        group = q_heads // kv_heads
        _decode_stage1[(batch, q_heads, splits)](q, k_buf, v_buf, scale, req_to_token, req_idx, seqlens, mid_o,
                                                 mid_lse, 48, q_heads * dim, dim, kv_heads * dim, dim,
                                                 q_heads * splits * dim, splits * dim, dim, kv_group_num=group,
                                                 BLOCK_DMODEL=32, BLOCK_N=4, NUM_KV_SPLITS=splits, logit_cap=cap,
                                                 Lk=dim)
        _decode_stage2[(batch, q_heads)](mid_o, mid_lse, o, seqlens, q_heads * splits * dim, splits * dim, dim,
                                         q_heads * dim, dim, NUM_KV_SPLITS=splits, BLOCK_DV=32, Lv=dim)
        for b in range(batch):
            locs = req_to_token[req_idx[b], : seqlens[b]]
            for h in range(q_heads):
                s = k_buf[locs, h // group].astype(np.float64) @ q[b, h] * scale
                if cap > 0:
                    s = cap * np.tanh(s / cap)
                p = np.exp(s - s.max())
                close(o[b, h], (p / p.sum()) @ v_buf[locs, h // group], rtol=1e-4, atol=1e-5)
