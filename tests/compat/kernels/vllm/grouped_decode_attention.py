"""vLLM ``triton_decode_attention`` grouped (GQA / MLA) split-KV decode.  Stage 1, grid (batch,
head groups, splits): ``VALID_BLOCK_H: tl.constexpr = BLOCK_H if kv_group_num > BLOCK_H else
kv_group_num`` (a constexpr local from a conditional expression), BLOCK_H query heads of one KV head
as the M side of ``tl.dot`` with a head mask, a separate rope part (``BLOCK_DPE > 0``: a second
``tl.dot`` added into ``qk``), paged KV (``offs_n // PAGE_SIZE`` through ``req_to_tokens``, then
``page * PAGE_SIZE + offs_n % PAGE_SIZE``), ``tl.cdiv``/``tl.minimum`` split bounds under a
run-time ``if split_kv_end > split_kv_start``, ``logit_cap`` via tanh, and the split's LSE stored
*after* the values in the same row (``+ Lv``).  Stage 2 merges the splits with ``e_sum = 0.0`` and
``e_max = -float("inf")`` -- plain Python floats -- carried through a ``range`` loop and a run-time
``if`` inside it, then stores ``acc / e_sum`` and ``e_max + tl.log(e_sum)``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra.libdevice import tanh


@tiles.jit
def _fwd_grouped_kernel_stage1(Q, K_Buffer, V_Buffer, sm_scale, Req_to_tokens, B_Seqlen, Att_Out,
                               stride_req_to_tokens_b, stride_qbs, stride_qh, stride_buf_kbs, stride_buf_kh,
                               stride_buf_vbs, stride_buf_vh, stride_mid_ob, stride_mid_oh, stride_mid_os,
                               kv_group_num: tl.constexpr, q_head_num: tl.constexpr, BLOCK_DMODEL: tl.constexpr,
                               BLOCK_DPE: tl.constexpr, BLOCK_DV: tl.constexpr, BLOCK_N: tl.constexpr,
                               BLOCK_H: tl.constexpr, NUM_KV_SPLITS: tl.constexpr, PAGE_SIZE: tl.constexpr,
                               logit_cap: tl.constexpr, Lk: tl.constexpr, Lv: tl.constexpr):
    cur_batch = tl.program_id(0)
    cur_head_id = tl.program_id(1)
    cur_kv_head = cur_head_id // tl.cdiv(kv_group_num, BLOCK_H)
    split_kv_id = tl.program_id(2)
    VALID_BLOCK_H: tl.constexpr = BLOCK_H if kv_group_num > BLOCK_H else kv_group_num
    cur_head = cur_head_id * VALID_BLOCK_H + tl.arange(0, BLOCK_H)
    mask_h = cur_head < (cur_head_id + 1) * VALID_BLOCK_H
    mask_h = mask_h & (cur_head < q_head_num)
    offs_d = tl.arange(0, BLOCK_DMODEL)
    offs_dv = tl.arange(0, BLOCK_DV)
    mask_d = offs_d < Lk
    mask_dv = offs_dv < Lv
    cur_batch_seq_len = tl.load(B_Seqlen + cur_batch)
    cur_batch_req_idx = cur_batch
    offs_q = cur_batch * stride_qbs + cur_head[:, None] * stride_qh + offs_d[None, :]
    q = tl.load(Q + offs_q, mask=(mask_h[:, None]) & (mask_d[None, :]), other=0.0)
    if BLOCK_DPE > 0:
        offs_dpe = BLOCK_DMODEL + tl.arange(0, BLOCK_DPE)
        mask_dpe = offs_dpe < Lk
        off_qpe = cur_batch * stride_qbs + cur_head[:, None] * stride_qh + offs_dpe[None, :]
        qpe = tl.load(Q + off_qpe, mask=(mask_h[:, None]) & (mask_dpe[None, :]), other=0.0)
    kv_len_per_split = tl.cdiv(cur_batch_seq_len, NUM_KV_SPLITS)
    split_kv_start = kv_len_per_split * split_kv_id
    split_kv_end = tl.minimum(split_kv_start + kv_len_per_split, cur_batch_seq_len)
    e_max = tl.zeros([BLOCK_H], dtype=tl.float32) - float("inf")
    e_sum = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, BLOCK_DV], dtype=tl.float32)
    if split_kv_end > split_kv_start:
        for start_n in range(split_kv_start, split_kv_end, BLOCK_N):
            offs_n = start_n + tl.arange(0, BLOCK_N)
            kv_page_number = tl.load(Req_to_tokens + stride_req_to_tokens_b * cur_batch_req_idx + offs_n // PAGE_SIZE,
                                     mask=offs_n < split_kv_end, other=0)
            kv_loc = kv_page_number * PAGE_SIZE + offs_n % PAGE_SIZE
            offs_buf_k = kv_loc[None, :] * stride_buf_kbs + cur_kv_head * stride_buf_kh + offs_d[:, None]
            k = tl.load(K_Buffer + offs_buf_k, mask=(offs_n[None, :] < split_kv_end) & (mask_d[:, None]), other=0.0)
            qk = tl.dot(q, k.to(q.dtype))
            if BLOCK_DPE > 0:
                offs_buf_kpe = kv_loc[None, :] * stride_buf_kbs + cur_kv_head * stride_buf_kh + offs_dpe[:, None]
                kpe = tl.load(K_Buffer + offs_buf_kpe, mask=(offs_n[None, :] < split_kv_end) & (mask_dpe[:, None]),
                              other=0.0)
                qk += tl.dot(qpe, kpe.to(qpe.dtype))
            qk *= sm_scale
            if logit_cap > 0:
                qk = logit_cap * tanh(qk / logit_cap)
            qk = tl.where(mask_h[:, None] & (offs_n[None, :] < split_kv_end), qk, float("-inf"))
            offs_buf_v = kv_loc[:, None] * stride_buf_vbs + cur_kv_head * stride_buf_vh + offs_dv[None, :]
            v = tl.load(V_Buffer + offs_buf_v, mask=(offs_n[:, None] < split_kv_end) & (mask_dv[None, :]), other=0.0)
            n_e_max = tl.maximum(tl.max(qk, 1), e_max)
            re_scale = tl.exp(e_max - n_e_max)
            p = tl.exp(qk - n_e_max[:, None])
            acc *= re_scale[:, None]
            acc += tl.dot(p.to(v.dtype), v)
            e_sum = e_sum * re_scale + tl.sum(p, 1)
            e_max = n_e_max
        offs_mid_o = (cur_batch * stride_mid_ob + cur_head[:, None] * stride_mid_oh + split_kv_id * stride_mid_os
                      + offs_dv[None, :])
        tl.store(Att_Out + offs_mid_o, acc / e_sum[:, None], mask=(mask_h[:, None]) & (mask_dv[None, :]))
        offs_mid_o_1 = cur_batch * stride_mid_ob + cur_head * stride_mid_oh + split_kv_id * stride_mid_os + Lv
        tl.store(Att_Out + offs_mid_o_1, e_max + tl.log(e_sum), mask=mask_h)


@tiles.jit
def _fwd_kernel_stage2(Mid_O, o, lse, B_Seqlen, stride_mid_ob, stride_mid_oh, stride_mid_os, stride_obs, stride_oh,
                       stride_lse_bs, NUM_KV_SPLITS: tl.constexpr, BLOCK_DV: tl.constexpr, Lv: tl.constexpr):
    cur_batch = tl.program_id(0)
    cur_head = tl.program_id(1)
    cur_batch_seq_len = tl.load(B_Seqlen + cur_batch)
    offs_d = tl.arange(0, BLOCK_DV)
    mask_d = offs_d < Lv
    e_sum = 0.0
    e_max = -float("inf")
    acc = tl.zeros([BLOCK_DV], dtype=tl.float32)
    offs_v = cur_batch * stride_mid_ob + cur_head * stride_mid_oh + offs_d
    offs_logic = cur_batch * stride_mid_ob + cur_head * stride_mid_oh + Lv
    for split_kv_id in range(0, NUM_KV_SPLITS):
        kv_len_per_split = tl.cdiv(cur_batch_seq_len, NUM_KV_SPLITS)
        split_kv_start = kv_len_per_split * split_kv_id
        split_kv_end = tl.minimum(split_kv_start + kv_len_per_split, cur_batch_seq_len)
        if split_kv_end > split_kv_start:
            tv = tl.load(Mid_O + offs_v + split_kv_id * stride_mid_os, mask=mask_d, other=0.0)
            tlogic = tl.load(Mid_O + offs_logic + split_kv_id * stride_mid_os)
            n_e_max = tl.maximum(tlogic, e_max)
            old_scale = tl.exp(e_max - n_e_max)
            acc *= old_scale
            exp_logic = tl.exp(tlogic - n_e_max)
            acc += exp_logic * tv
            e_sum = e_sum * old_scale + exp_logic
            e_max = n_e_max
    tl.store(o + cur_batch * stride_obs + cur_head * stride_oh + offs_d, acc / e_sum, mask=mask_d)
    tl.store(lse + cur_batch * stride_lse_bs + cur_head, e_max + tl.log(e_sum))


def check(rng):
    batch, H, HKV, Lk, Lv, PAGE, SPLITS = 3, 8, 2, 48, 28, 4, 4
    seqlens = np.array([13, 2, 30], np.int32)
    pages_per_req = 8
    n_pages = 32
    req_to_tokens = np.stack([rng.permutation(n_pages)[:pages_per_req] for _ in range(batch)]).astype(np.int32)
    q = rng.standard_normal((batch, H, Lk)).astype(np.float16)
    kb = rng.standard_normal((n_pages * PAGE, HKV, Lk)).astype(np.float16)
    vb = rng.standard_normal((n_pages * PAGE, HKV, Lv)).astype(np.float16)
    scale, cap = Lk ** -0.5, 4.0
    group, BLOCK_H = H // HKV, 16
    mid = np.full((batch, H, SPLITS, Lv + 1), np.nan, np.float32)
    grid1 = (batch, tiles.cdiv(H, min(BLOCK_H, group)), SPLITS)
    _fwd_grouped_kernel_stage1[grid1](q, kb, vb, scale, req_to_tokens, seqlens, mid, pages_per_req, H * Lk, Lk,
                                      HKV * Lk, Lk, HKV * Lv, Lv, H * SPLITS * (Lv + 1), SPLITS * (Lv + 1), Lv + 1,
                                      kv_group_num=group, q_head_num=H, BLOCK_DMODEL=32, BLOCK_DPE=16, BLOCK_DV=32,
                                      BLOCK_N=16, BLOCK_H=BLOCK_H, NUM_KV_SPLITS=SPLITS, PAGE_SIZE=PAGE,
                                      logit_cap=cap, Lk=Lk, Lv=Lv)
    o = np.full((batch, H, Lv), np.nan, np.float32)
    lse = np.full((batch, H), np.nan, np.float32)
    _fwd_kernel_stage2[(batch, H)](mid, o, lse, seqlens, H * SPLITS * (Lv + 1), SPLITS * (Lv + 1), Lv + 1, H * Lv, Lv,
                                   H, NUM_KV_SPLITS=SPLITS, BLOCK_DV=32, Lv=Lv)
    eo, el = np.zeros((batch, H, Lv)), np.zeros((batch, H))
    for b in range(batch):
        toks = np.arange(seqlens[b])
        slots = req_to_tokens[b, toks // PAGE] * PAGE + toks % PAGE
        for h in range(H):
            kh = h // group
            s = kb[slots, kh].astype(np.float64) @ q[b, h].astype(np.float64) * scale
            s = cap * np.tanh(s / cap)
            m = s.max()
            p = np.exp(s - m)
            eo[b, h] = p @ vb[slots, kh].astype(np.float64) / p.sum()
            el[b, h] = m + np.log(p.sum())
    close(o, eo, rtol=2e-3, atol=2e-3)
    close(lse, el, rtol=1e-3, atol=1e-3)
    # the split of a short sequence that got no tokens was left untouched
    assert np.isnan(mid[1, :, 2:]).all() and not np.isnan(mid[1, :, :2]).any()
