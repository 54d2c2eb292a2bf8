"""Unsloth style MoE grouped GEMM forward (``Y = X @ W[e].T`` per expert), persistent: ``NUM_SMS``
programs walk every expert's tiles with a ``while a <= tidx and tidx < b`` loop nested in
``for expert in tl.range(NUM_EXPERTS, flatten=...)`` and a runtime ``if m_size > 0``, each
advancing its own ``tidx`` by ``NUM_SMS``.  Options as defaulted constexprs: ``PERMUTE_X`` gathers
token rows (``index // TOPK``) on load, ``PERMUTE_Y`` scatters rows back to token order on store,
``FUSE_MUL_POST`` scales by the routing weight; ``USE_TMA_LOAD_W`` / ``USE_TMA_LOAD_X`` /
``USE_TMA_STORE`` switch to ``tl.make_tensor_descriptor`` (a 3-D ``[1, BN, BK]`` weight block
reshaped to 2-D, an output descriptor built inside the loop whose row extent is the running
``m_end``).  Also: annotated locals (``out_dtype: tl.dtype = ...``, ``FLAG: tl.constexpr = A or
B``), names bound only under constexpr branches, ``tl.static_assert``, ``tl.max_contiguous`` /
``tl.multiple_of`` hints on wrapped (``% n``) offsets, ``x *= w.to(x.dtype)`` and ``tl.dot(x, w.T)``."""

import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl


@tiles.jit
def _grouped_gemm_fwd(x_ptr, w_ptr, y_ptr, m_sizes_ptr, gather_ptr, topk_weights_ptr, NUM_EXPERTS: tl.constexpr,
                      NUM_TOKENS, TOPK: tl.constexpr, N: tl.constexpr, K: tl.constexpr, NUM_SMS,
                      BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                      PERMUTE_X: tl.constexpr = False, PERMUTE_Y: tl.constexpr = False,
                      FUSE_MUL_POST: tl.constexpr = False, USE_TMA_LOAD_W: tl.constexpr = False,
                      USE_TMA_LOAD_X: tl.constexpr = False, USE_TMA_STORE: tl.constexpr = False,
                      acc_dtype: tl.constexpr = tl.float32, FLATTEN: tl.constexpr = True):
    tl.static_assert(K % BLOCK_SIZE_K == 0)
    TOTAL = NUM_TOKENS * TOPK
    NEEDS_INDEX: tl.constexpr = PERMUTE_X or PERMUTE_Y or FUSE_MUL_POST
    tidx = tl.program_id(0)
    out_dtype: tl.dtype = y_ptr.dtype.element_ty
    if USE_TMA_LOAD_X:
        x_desc = tl.make_tensor_descriptor(x_ptr, shape=[TOTAL, K], strides=[K, 1],
                                           block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K])
    if USE_TMA_LOAD_W:
        w_desc = tl.make_tensor_descriptor(w_ptr, shape=[NUM_EXPERTS, N, K], strides=[N * K, K, 1],
                                           block_shape=[1, BLOCK_SIZE_N, BLOCK_SIZE_K])
    m_end = 0
    done_tiles = 0
    m_range = tl.arange(0, BLOCK_SIZE_M)
    for expert in tl.range(NUM_EXPERTS, flatten=FLATTEN):
        m_start = m_end
        m_size = tl.load(m_sizes_ptr + expert).to(tl.int32)
        m_end = m_start + m_size
        if m_size > 0:
            m_tiles = tl.cdiv(m_size, BLOCK_SIZE_M)
            expert_tiles = m_tiles * tl.cdiv(N, BLOCK_SIZE_N)
            if USE_TMA_STORE:
                y_desc = tl.make_tensor_descriptor(y_ptr, shape=[m_end, N], strides=[N, 1],
                                                   block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N])
            while done_tiles <= tidx and tidx < done_tiles + expert_tiles:
                tile = tidx - done_tiles
                tm = tile % m_tiles
                tn = tile // m_tiles
                if NEEDS_INDEX:
                    local = tm * BLOCK_SIZE_M + m_range
                    sorted_rows = m_start + tl.max_contiguous(tl.multiple_of(local % m_size, BLOCK_SIZE_M),
                                                              BLOCK_SIZE_M)
                    token_slot = tl.load(gather_ptr + sorted_rows, mask=sorted_rows < TOTAL)[:, None]
                    row_mask = (local < m_size)[:, None]
                if PERMUTE_X:
                    load_idx = (token_slot // TOPK) * K
                    store_idx = sorted_rows[:, None] * N
                else:
                    off_m = tm * BLOCK_SIZE_M
                    if not PERMUTE_Y:
                        rows = off_m + m_range
                        row_mask = rows[:, None] < m_size
                        store_idx = (m_start + rows[:, None]) * N
                        load_idx = (m_start + rows[:, None]) * K
                if PERMUTE_Y:
                    load_idx = sorted_rows[:, None] * K
                    store_idx = token_slot * N

                acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)
                offs_k = tl.arange(0, BLOCK_SIZE_K)
                x_ptrs = x_ptr + load_idx + offs_k[None, :]
                offs_n = tl.max_contiguous(tl.multiple_of((tn * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N,
                                                          BLOCK_SIZE_N), BLOCK_SIZE_N)
                w_ptrs = w_ptr + (expert * N + offs_n[:, None]) * K + offs_k[None, :]
                for k_off in range(0, K, BLOCK_SIZE_K):
                    if USE_TMA_LOAD_X:
                        x = x_desc.load([m_start + off_m, k_off])
                    else:
                        x = tl.load(x_ptrs, mask=row_mask)
                    if USE_TMA_LOAD_W:
                        w = w_desc.load([expert, tn * BLOCK_SIZE_N, k_off])
                        w = tl.reshape(w, (BLOCK_SIZE_N, BLOCK_SIZE_K))
                    else:
                        w = tl.load(w_ptrs, mask=offs_n[:, None] < N)
                    x = x.to(w.dtype)
                    acc += tl.dot(x, w.T)
                    x_ptrs += BLOCK_SIZE_K
                    w_ptrs += BLOCK_SIZE_K
                y = acc.to(out_dtype)
                if FUSE_MUL_POST:
                    y *= tl.load(topk_weights_ptr + token_slot, mask=row_mask).to(out_dtype)
                cols = tn * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
                if USE_TMA_STORE:
                    y_desc.store([m_start + tm * BLOCK_SIZE_M, tn * BLOCK_SIZE_N], y)
                else:
                    tl.store(y_ptr + store_idx + cols[None, :], y, mask=row_mask & (cols[None, :] < N))
                tidx += NUM_SMS
            done_tiles += expert_tiles


def grouped_gemm(x, w, m_sizes, gather, topk_weights, num_tokens, topk, num_sms=7, **flags):
    E, N, K = w.shape
    y = np.zeros((num_tokens * topk, N), x.dtype)
    _grouped_gemm_fwd[(num_sms,)](x, w, y, m_sizes, gather, topk_weights, E, num_tokens, topk, N, K, num_sms,
                                  BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, **flags)
    return y


def check(rng):
    tiles.set_allocator(lambda size, alignment, stream: np.empty(size, np.int8))
    T, topk, E, N, K = 23, 2, 5, 48, 64
    topk_ids = np.stack([rng.choice([0, 1, 3, 4], topk, replace=False) for _ in range(T)])  # expert 2 idle
    topk_ids[:17, 0] = 1  # one expert with more than two M tiles
    flat = topk_ids.reshape(-1)
    gather = np.argsort(flat, kind="stable").astype(np.int32)  # sorted position -> token * topk + k
    m_sizes = np.bincount(flat, minlength=E).astype(np.int32)
    experts_sorted = flat[gather]
    weights = rng.uniform(0.1, 1.0, T * topk).astype(np.float32)
    for dtype, tol in ((np.float16, 2e-3), (BF16, 1e-2)):
        x = rng.standard_normal((T, K)).astype(dtype)
        w = (rng.standard_normal((E, N, K)) * 0.2).astype(dtype)
        w64 = w.astype(np.float64)
        x_sorted = x[gather // topk]
        ref_sorted = np.einsum("mk,mnk->mn", x_sorted.astype(np.float64), w64[experts_sorted])
        # permute X on load: output in expert-sorted order
        y = grouped_gemm(x, w, m_sizes, gather, weights, T, topk, PERMUTE_X=True)
        close(y, ref_sorted, rtol=tol, atol=tol)
        # permute Y on store with the routing weight fused; X and W through tensor descriptors
        ref_tok = np.empty_like(ref_sorted)
        ref_tok[gather] = ref_sorted * weights[gather, None]
        y = grouped_gemm(x_sorted, w, m_sizes, gather, weights, T, topk, PERMUTE_Y=True, FUSE_MUL_POST=True,
                         USE_TMA_LOAD_W=True, USE_TMA_LOAD_X=True)
        close(y, ref_tok, rtol=tol, atol=tol)
        # plain grouped GEMM with a descriptor store, loop not flattened
        y = grouped_gemm(x_sorted, w, m_sizes, gather, weights, T, topk, USE_TMA_STORE=True, FLATTEN=False)
        close(y, ref_sorted, rtol=tol, atol=tol)
