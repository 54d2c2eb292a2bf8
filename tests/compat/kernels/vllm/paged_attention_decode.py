"""vLLM / SGLang style paged-attention decode: one program per (sequence, KV head) serving its
group of query heads (GQA), a block table read with ``tl.load`` giving each page's physical id,
keys and values gathered through it, an online softmax in fp32 with ``tl.exp2`` and a
``log2(e)``-folded scale, sequence lengths as a tensor and ``tl.int64`` page offsets."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.jit
def _paged_decode(q_ptr, k_cache, v_cache, block_tables, seq_lens, out_ptr, sm_scale,
                  stride_qs, stride_qh, stride_kb, stride_kp, stride_kh, stride_bt, stride_os, stride_oh,
                  QUERIES_PER_KV: tl.constexpr, HEAD_DIM: tl.constexpr, PAGE: tl.constexpr,
                  BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr):
    seq = tl.program_id(0)
    kv_head = tl.program_id(1)
    seq_len = tl.load(seq_lens + seq)
    heads = kv_head * QUERIES_PER_KV + tl.arange(0, BLOCK_H)
    head_ok = tl.arange(0, BLOCK_H) < QUERIES_PER_KV
    dims = tl.arange(0, BLOCK_D)
    dim_ok = dims < HEAD_DIM
    q = tl.load(q_ptr + seq * stride_qs + heads[:, None] * stride_qh + dims[None, :],
                mask=head_ok[:, None] & dim_ok[None, :], other=0.0).to(tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], tl.float32)
    acc = tl.zeros([BLOCK_H, BLOCK_D], tl.float32)
    slots = tl.arange(0, PAGE)
    for page in range(0, tl.cdiv(seq_len, PAGE)):
        physical = tl.load(block_tables + seq * stride_bt + page).to(tl.int64)
        pos = page * PAGE + slots
        live = pos < seq_len
        base = physical * stride_kb + slots[:, None] * stride_kp + kv_head * stride_kh + dims[None, :]
        k = tl.load(k_cache + base, mask=live[:, None] & dim_ok[None, :], other=0.0).to(tl.float32)
        v = tl.load(v_cache + base, mask=live[:, None] & dim_ok[None, :], other=0.0).to(tl.float32)
        s = tl.sum(q[:, None, :] * k[None, :, :], axis=2) * qk_scale
        s = tl.where(live[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.sum(p[:, :, None] * v[None, :, :], axis=1)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(out_ptr + seq * stride_os + heads[:, None] * stride_oh + dims[None, :], out.to(out_ptr.dtype.element_ty),
             mask=head_ok[:, None] & dim_ok[None, :])


def check(rng):
    seqs, q_heads, kv_heads, head_dim, page, pages_total = 3, 6, 2, 20, 8, 12
    lens = np.array([13, 1, 24], np.int32)
    per_seq = tiles.cdiv(int(lens.max()), page)
    table = rng.permutation(pages_total)[: seqs * per_seq].reshape(seqs, per_seq).astype(np.int32)
    k_cache = rng.standard_normal((pages_total, page, kv_heads, head_dim)).astype(np.float16)
    v_cache = rng.standard_normal((pages_total, page, kv_heads, head_dim)).astype(np.float16)
    q = rng.standard_normal((seqs, q_heads, head_dim)).astype(np.float16)
    out = np.empty_like(q)
    scale = head_dim ** -0.5
    group = q_heads // kv_heads
    _paged_decode[(seqs, kv_heads)](q, k_cache, v_cache, table, lens, out, scale,
                                    stride(q, 0), stride(q, 1), stride(k_cache, 0), stride(k_cache, 1),
                                    stride(k_cache, 2), stride(table, 0), stride(out, 0), stride(out, 1),
                                    QUERIES_PER_KV=group, HEAD_DIM=head_dim, PAGE=page, BLOCK_H=4, BLOCK_D=32)
    for s in range(seqs):
        n = int(lens[s])
        pos = np.arange(n)
        keys = k_cache[table[s, pos // page], pos % page].astype(np.float32)
        vals = v_cache[table[s, pos // page], pos % page].astype(np.float32)
        for h in range(q_heads):
            scores = keys[:, h // group] @ q[s, h].astype(np.float32) * scale
            p = np.exp(scores - scores.max())
            close(out[s, h], (p / p.sum()) @ vals[:, h // group], rtol=1e-2, atol=2e-3)
