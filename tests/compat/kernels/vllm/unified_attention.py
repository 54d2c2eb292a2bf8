"""vLLM style unified (prefill + chunked prefill + decode) paged attention, 2-D grid of
(global Q block, KV head).  Each program finds its sequence by a binary search over
``query_start_loc`` in a ``@jit`` helper (``while`` loop on a loaded value, an annotated
``left: tl.int32 = 0``, a constexpr-selected conditional expression), returns early past the
sequence's queries, packs the KV head's query heads into the M rows (``offs_m // per_kv``),
pads the head size (40 -> 64) with an ``int1`` mask made by ``tl.where(..., 1, 0).to(tl.int1)``,
reads pages through a block table inside tiles that span two pages, loads K transposed,
dequantizes an fp8 KV cache when ``K_load.dtype.is_fp8()``, and runs an online softmax with a
causal mask shifted by the context length.  Options as constexprs: softcap (``exp`` form in a
helper), attention sinks (the running max starts at the sink logit), ALiBi slopes, a query-query
bias whose mask uses Python ``and`` on tensors, and a sliding window that prunes the tile range
(``for j in range(tile_start, tile_end)`` with tensor bounds).  Scalar arguments carry
``tl.int64`` / ``tl.int32`` annotations and two constexprs have default values."""

import ml_dtypes
import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def cdiv_fn(x, y):
    return (x + y - 1) // y


@tiles.jit
def apply_softcap(S, x):
    s = S / x
    e1 = tl.exp(s)
    e2 = tl.exp(-s)
    return x * (e1 - e2) / (e1 + e2)


@tiles.jit
def find_seq_idx(query_start_len_ptr, target_idx, num_seqs, BLOCK_Q: tl.constexpr, use_q_block_mode: tl.constexpr):
    left: tl.int32 = 0
    right = num_seqs
    while left < right:
        mid = (left + right) // 2
        val = tl.load(query_start_len_ptr + mid)
        mid_val = val // BLOCK_Q + mid if use_q_block_mode else val
        if mid_val <= target_idx:
            left = mid + 1
        else:
            right = mid
    return left - 1


@tiles.jit
def _unified_attention_2d(
        out_ptr, q_ptr, k_cache_ptr, v_cache_ptr, sink_ptr, block_tables_ptr, seq_lens_ptr, alibi_ptr, qq_bias_ptr,
        scale, k_scale, v_scale, softcap,
        num_query_heads: tl.constexpr, num_queries_per_kv: tl.constexpr,
        block_table_stride: tl.int64, q_stride_0: tl.int64, q_stride_1: tl.int64,
        o_stride_0: tl.int64, o_stride_1: tl.int64, qq_bias_stride_0: tl.int64,
        BLOCK_SIZE: tl.constexpr, TILE_SIZE: tl.constexpr, HEAD_SIZE: tl.constexpr, HEAD_SIZE_PADDED: tl.constexpr,
        USE_ALIBI: tl.constexpr, USE_QQ_BIAS: tl.constexpr, USE_SOFTCAP: tl.constexpr, USE_SINKS: tl.constexpr,
        SLIDING_WINDOW: tl.constexpr,
        sk0: tl.int64, sk1: tl.int64, sk2: tl.int64, sk3: tl.constexpr,
        sv0: tl.int64, sv1: tl.int64, sv2: tl.int64, sv3: tl.constexpr,
        query_start_len_ptr, BLOCK_Q: tl.constexpr, num_seqs: tl.int32, BLOCK_M: tl.constexpr,
        NEG_INF: tl.constexpr = float("-inf"), ONE: tl.constexpr = 1.0):
    q_block_global = tl.program_id(0)
    kv_head = tl.program_id(1)
    seq_idx = find_seq_idx(query_start_len_ptr, q_block_global, num_seqs, BLOCK_Q, True)
    q_block_start = tl.load(query_start_len_ptr + seq_idx) // BLOCK_Q + seq_idx
    q_block_local = q_block_global - q_block_start
    q_start = tl.load(query_start_len_ptr + seq_idx)
    q_len = tl.load(query_start_len_ptr + seq_idx + 1) - q_start
    if q_block_local * BLOCK_Q >= q_len:
        return

    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_SIZE_PADDED)
    offs_t = tl.arange(0, TILE_SIZE)
    query_pos = q_block_local * BLOCK_Q + offs_m // num_queries_per_kv
    tok = q_start + query_pos
    head = kv_head * num_queries_per_kv + offs_m % num_queries_per_kv
    dim_mask = tl.where(offs_d < HEAD_SIZE, 1, 0).to(tl.int1)
    row_ok = tl.where(query_pos < q_len, 1, 0).to(tl.int1)
    head_ok = tl.where(head < num_query_heads, 1, 0).to(tl.int1)
    io_mask = dim_mask[None, :] & row_ok[:, None] & head_ok[:, None]
    Q = tl.load(q_ptr + tok[:, None] * q_stride_0 + head[:, None] * q_stride_1 + offs_d[None, :],
                mask=io_mask, other=0.0)

    if not USE_SINKS:
        M = tl.full([BLOCK_M], NEG_INF, dtype=tl.float32)
    else:
        M = tl.load(sink_ptr + head, mask=head_ok, other=NEG_INF).to(dtype=tl.float32)
    L = tl.full([BLOCK_M], ONE, dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_SIZE_PADDED], dtype=tl.float32)
    seq_len = tl.load(seq_lens_ptr + seq_idx)
    context_len = seq_len - q_len
    if USE_ALIBI:
        slope = tl.load(alibi_ptr + head, mask=head_ok, other=0.0)
    if USE_QQ_BIAS:
        qq_rows = qq_bias_ptr + query_pos[:, None] * qq_bias_stride_0

    max_prefix = tl.minimum(context_len + q_block_local * BLOCK_Q + (BLOCK_M - 1) // num_queries_per_kv + 1,
                            seq_len)
    num_tiles = cdiv_fn(max_prefix, TILE_SIZE)
    tile_start = 0
    tile_end = num_tiles
    if SLIDING_WINDOW > 0:
        lo = q_block_local * BLOCK_Q
        hi = tl.minimum(lo + (BLOCK_M - 1) // num_queries_per_kv, q_len - 1)
        tile_start = tl.maximum(0, (context_len + lo - SLIDING_WINDOW + 1) // TILE_SIZE)
        tile_end = tl.minimum((context_len + hi) // TILE_SIZE + 1, num_tiles)

    for j in range(tile_start, tile_end):
        key_pos = j * TILE_SIZE + offs_t
        tile_mask = key_pos < max_prefix
        page = tl.load(block_tables_ptr + seq_idx * block_table_stride + key_pos // BLOCK_SIZE).to(tl.int64)
        in_page = key_pos % BLOCK_SIZE
        K_load = tl.load(k_cache_ptr + page[None, :] * sk0 + in_page[None, :] * sk1 + kv_head * sk2
                         + offs_d[:, None] * sk3, mask=dim_mask[:, None] & tile_mask[None, :], other=0.0)
        if K_load.dtype.is_fp8():
            K = (K_load.to(tl.float32) * tl.load(k_scale)).to(Q.dtype)
        else:
            K = K_load
        V_load = tl.load(v_cache_ptr + page[:, None] * sv0 + in_page[:, None] * sv1 + kv_head * sv2
                         + offs_d[None, :] * sv3, mask=dim_mask[None, :] & tile_mask[:, None], other=0.0)
        if V_load.dtype.is_fp8():
            V = (V_load.to(tl.float32) * tl.load(v_scale)).to(Q.dtype)
        else:
            V = V_load
        causal = key_pos[None, :] < context_len + query_pos[:, None] + 1

        S = tl.zeros(shape=(BLOCK_M, TILE_SIZE), dtype=tl.float32)
        S += scale * tl.dot(Q, K)
        if USE_SOFTCAP:
            S = apply_softcap(S, softcap)
        S = tl.where(head_ok[:, None] & row_ok[:, None] & causal, S, float("-inf"))
        if SLIDING_WINDOW > 0:
            S = tl.where((context_len + query_pos[:, None] - key_pos) < SLIDING_WINDOW, S, float("-inf"))
        if USE_ALIBI:
            S += slope[:, None] * (key_pos - context_len)
        if USE_QQ_BIAS:
            rel = key_pos - context_len
            is_query_key = rel >= 0 and rel < qq_bias_stride_0
            S += tl.load(qq_rows + rel[None, :], mask=row_ok[:, None] & is_query_key[None, :],
                         other=0.0)

        m_j = tl.maximum(M, tl.max(S, axis=1))
        m_j = tl.where(m_j > float("-inf"), m_j, 0.0)
        P = tl.exp(S - m_j[:, None])
        l_j = tl.sum(P, axis=1)
        alpha = tl.exp(M - m_j)
        acc = acc * alpha[:, None]
        L = L * alpha + l_j
        M = m_j
        acc += tl.dot(P.to(V.dtype), V)

    acc = acc / L[:, None]
    tl.store(out_ptr + tok[:, None] * o_stride_0 + head[:, None] * o_stride_1 + offs_d[None, :], acc, mask=io_mask)


def unified_attention(q, k_cache, v_cache, query_start_loc, seq_lens, block_tables, scale, *, softcap=0.0,
                      window=0, sinks=None, alibi=None, qq_bias=None, k_scale=None, v_scale=None):
    num_tokens, num_heads, head_size = q.shape
    num_kv_heads = k_cache.shape[2]
    per_kv = num_heads // num_kv_heads
    BLOCK_M = 16
    BLOCK_Q = BLOCK_M // per_kv
    num_seqs = len(seq_lens)
    out = np.zeros_like(q)
    grid = (num_tokens // BLOCK_Q + num_seqs, num_kv_heads)
    es = [s // k_cache.itemsize for s in k_cache.strides]
    vs = [s // v_cache.itemsize for s in v_cache.strides]
    _unified_attention_2d[grid](
        out, q, k_cache, v_cache, sinks, block_tables, seq_lens, alibi, qq_bias, scale, k_scale, v_scale, softcap,
        num_heads, per_kv, block_tables.shape[1], num_heads * head_size, head_size, num_heads * head_size, head_size,
        0 if qq_bias is None else qq_bias.shape[1], BLOCK_SIZE=k_cache.shape[1], TILE_SIZE=32, HEAD_SIZE=head_size,
        HEAD_SIZE_PADDED=tiles.next_power_of_2(head_size), USE_ALIBI=alibi is not None,
        USE_QQ_BIAS=qq_bias is not None, USE_SOFTCAP=softcap > 0, USE_SINKS=sinks is not None,
        SLIDING_WINDOW=window, sk0=es[0], sk1=es[1], sk2=es[2], sk3=es[3], sv0=vs[0], sv1=vs[1], sv2=vs[2],
        sv3=vs[3], query_start_len_ptr=query_start_loc, BLOCK_Q=BLOCK_Q, num_seqs=num_seqs, BLOCK_M=BLOCK_M)
    return out


def reference(q, k, v, qsl, seq_lens, tables, scale, softcap, window, sinks, alibi, qq_bias):
    out = np.zeros(q.shape, np.float64)
    page = k.shape[1]
    per_kv = q.shape[1] // k.shape[2]
    for s, seq_len in enumerate(seq_lens):
        pos = np.arange(seq_len)
        keys = k[tables[s, pos // page], pos % page].astype(np.float64)
        vals = v[tables[s, pos // page], pos % page].astype(np.float64)
        ctx = seq_len - (qsl[s + 1] - qsl[s])
        for t in range(qsl[s], qsl[s + 1]):
            qp = t - qsl[s]
            for h in range(q.shape[1]):
                sc = scale * (keys[:, h // per_kv] @ q[t, h].astype(np.float64))
                if softcap:
                    sc = softcap * np.tanh(sc / softcap)
                ok = pos <= ctx + qp
                if window:
                    ok &= ctx + qp - pos < window
                if alibi is not None:
                    sc = sc + alibi[h] * (pos - ctx)
                if qq_bias is not None:
                    rel = pos - ctx
                    sel = (rel >= 0) & (rel < qq_bias.shape[1])
                    sc[sel] += qq_bias[qp, rel[sel]]
                sc = np.where(ok, sc, -np.inf)
                m = sc.max() if sinks is None else max(sc.max(), sinks[h])
                p = np.exp(sc - m)
                denom = p.sum() + (0.0 if sinks is None else np.exp(sinks[h] - m))
                out[t, h] = p @ vals[:, h // per_kv] / denom
    return out


def check(rng):
    heads, kv_heads, head_size, page = 6, 2, 40, 16
    seq_lens = np.array([37, 5, 70, 21], np.int32)
    q_lens = np.array([37, 1, 13, 1], np.int32)  # prefill, decode, chunked prefill, decode
    qsl = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    width = 6
    phys = rng.permutation(16)
    tables = np.zeros((len(seq_lens), width), np.int32)
    used = 0
    for s, n in enumerate(-(-seq_lens // page)):
        tables[s, :n] = phys[used:used + n]
        used += n
    q = rng.standard_normal((qsl[-1], heads, head_size)).astype(np.float16)
    k = rng.standard_normal((16, page, kv_heads, head_size)).astype(np.float16)
    v = rng.standard_normal((16, page, kv_heads, head_size)).astype(np.float16)
    scale = head_size ** -0.5
    sinks = rng.standard_normal(heads).astype(np.float32)
    qq = (rng.standard_normal((37, 37)) * 0.5).astype(np.float32)
    # fp16 P and V in the second dot, fp16 output: about 1e-3 absolute on unit-variance values
    out = unified_attention(q, k, v, qsl, seq_lens, tables, scale, softcap=3.0, sinks=sinks, qq_bias=qq)
    ref = reference(q, k, v, qsl, seq_lens, tables, scale, 3.0, 0, sinks, None, qq)
    close(out, ref, rtol=5e-3, atol=5e-3)
    out = unified_attention(q, k, v, qsl, seq_lens, tables, scale, window=24)
    close(out, reference(q, k, v, qsl, seq_lens, tables, scale, 0, 24, None, None, None), rtol=5e-3, atol=5e-3)
    fp8 = ml_dtypes.float8_e4m3fn
    k8, v8 = (k * 8).astype(fp8), (v * 8).astype(fp8)
    ks, vs = np.float32([0.125]), np.float32([0.125])
    alibi = -np.linspace(0.05, 0.5, heads).astype(np.float32)
    out = unified_attention(q, k8, v8, qsl, seq_lens, tables, scale, alibi=alibi, k_scale=ks, v_scale=vs)
    kd = (k8.astype(np.float32) * ks[0]).astype(np.float16)
    vd = (v8.astype(np.float32) * vs[0]).astype(np.float16)
    close(out, reference(q, kd, vd, qsl, seq_lens, tables, scale, 0, 0, None, alibi, None), rtol=5e-3, atol=5e-3)
