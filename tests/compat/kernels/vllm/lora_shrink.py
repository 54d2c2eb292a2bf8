"""vLLM (Punica) style LoRA shrink: ``out[slice, tok] = scaling * x[tok] @ lora_a[slice][lora(tok)]^T``
for tokens grouped by LoRA.  Exercises: nested ``@jit`` helpers (kernel -> ``_shrink_block`` ->
``_mm_k``) whose parameters are annotated ``tl.constexpr`` but receive a *run-time* value (``K``)
and a dtype taken from a pointer (``ptr.dtype.element_ty``), a pointer parameter advanced with
``+=`` inside the helper's loop, a local ``SPLIT_K = 1``-style constant, a conditional expression
on a constexpr choosing between two pointers, the per-slice weight picked from a pointer table
(``tl.load(table + slice).to(tl.pointer_type(x_ptr.dtype.element_ty))``), early ``return`` on a
value loaded from memory (``lora_id == -1``) and on a CTA beyond its LoRA's rows, a grouped
(swizzled) pid order with the builtin ``min``, row indices wrapped with ``tl.arange(0, BM) % len``,
``tl.max_contiguous(tl.multiple_of(...))``, and split-K partial sums written with ``tl.atomic_add``."""

import numpy as np
import pytest
from compat_harness import close, refuses_pointers_from_integers

import tiles
import tiles.language as tl
from tiles.core.errors import UnsupportedError


@tiles.jit
def _mm_k(a_ptr, b_ptr, ak_stride, bk_stride, offset_k, K: tl.constexpr, BLOCK_M: tl.constexpr,
          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr, SPLIT_K: tl.constexpr,
          CAST_TYPE: tl.constexpr, b_dtype: tl.constexpr):
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(tl.cdiv(K, BLOCK_K * SPLIT_K)):
        if EVEN_K:
            a = tl.load(a_ptr)
            b = tl.load(b_ptr)
        else:
            a = tl.load(a_ptr, mask=offset_k[None, :] < K - k * (BLOCK_K * SPLIT_K), other=0)
            b = tl.load(b_ptr, mask=offset_k[:, None] < K - k * (BLOCK_K * SPLIT_K), other=0)
        if CAST_TYPE:
            a = a.to(b_dtype)
        acc += tl.dot(a, b)
        a_ptr += BLOCK_K * SPLIT_K * ak_stride
        b_ptr += BLOCK_K * SPLIT_K * bk_stride
    return acc


@tiles.jit
def _shrink_block(pid_n, pid_sk, slice_id, lora_index, x_ptr, w_ptr, out_ptr, N, K, M_LEN, ram,
                  xs0, xs1, ws0, ws1, ws2, os0, os1, os2, scaling, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr,
                  SPLIT_K: tl.constexpr, SLICE_NUM: tl.constexpr):
    if SLICE_NUM == 1:
        cur_w = w_ptr
    else:
        cur_w = tl.load(w_ptr + slice_id).to(tl.pointer_type(x_ptr.dtype.element_ty))
    offset_n = tl.arange(0, BLOCK_N) + pid_n * BLOCK_N
    rbn = tl.max_contiguous(tl.multiple_of(offset_n % N, BLOCK_N), BLOCK_N)
    offset_k = pid_sk * BLOCK_K + tl.arange(0, BLOCK_K)
    a_ptr = x_ptr + ram[:, None] * xs0 + offset_k[None, :] * xs1
    b_ptr = cur_w + ws0 * lora_index + rbn[None, :] * ws1 + offset_k[:, None] * ws2
    acc = _mm_k(a_ptr, b_ptr, xs1, ws2, offset_k, K, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K, SPLIT_K, False,
                cur_w.dtype.element_ty)
    offset_cn = tl.arange(0, BLOCK_N) + pid_n * BLOCK_N
    offset_cm = tl.arange(0, BLOCK_M)
    cur_out = out_ptr if SLICE_NUM == 1 else out_ptr + slice_id * os0
    c_ptr = cur_out + ram[:, None] * os1 + offset_cn[None, :] * os2
    c_mask = (offset_cm[:, None] < M_LEN) & (offset_cn[None, :] < N)
    acc *= scaling
    if SPLIT_K == 1:
        tl.store(c_ptr, acc, mask=c_mask)
    else:
        tl.atomic_add(c_ptr, acc, mask=c_mask)


@tiles.jit
def _lora_shrink(x_ptr, w_ptr, out_ptr, M, N, K, sorted_tokens, tokens_per_lora, lora_start, lora_ids,
                 scaling, xs0, xs1, ws0, ws1, ws2, os0, os1, os2, BLOCK_M: tl.constexpr,
                 BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, EVEN_K: tl.constexpr,
                 SPLIT_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, SLICE_NUM: tl.constexpr):
    cta_n_num = tl.cdiv(N, BLOCK_N)
    cta_m_num = tl.cdiv(M, BLOCK_M)
    pid_sk_m_n = tl.program_id(axis=0)
    pid_sk = pid_sk_m_n % SPLIT_K
    pid_m_n = pid_sk_m_n // SPLIT_K
    num_pid_in_group = GROUP_SIZE_M * cta_n_num
    group_id = pid_m_n // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(cta_m_num - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid_m_n % num_pid_in_group) % group_size_m)
    pid_n = (pid_m_n % num_pid_in_group) // group_size_m
    slice_id = tl.program_id(axis=1)
    lora_idx = tl.program_id(axis=2)
    lora_id = tl.load(lora_ids + lora_idx)
    if lora_id == -1:
        return
    lora_m_size = tl.load(tokens_per_lora + lora_idx)
    cta_m_offset = pid_m * BLOCK_M
    if cta_m_offset >= lora_m_size:
        return
    cta_m_len = min(BLOCK_M, lora_m_size - cta_m_offset)
    start = tl.load(lora_start + lora_idx)
    offset_m = tl.arange(0, BLOCK_M) % cta_m_len
    ram = tl.load(sorted_tokens + start + cta_m_offset + offset_m)
    _shrink_block(pid_n, pid_sk, slice_id, lora_id, x_ptr, w_ptr, out_ptr, N, K, cta_m_len, ram,
                  xs0, xs1, ws0, ws1, ws2, os0, os1, os2, scaling, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K,
                  SPLIT_K, SLICE_NUM)


def _metadata(mapping, max_loras):
    order = np.argsort(mapping, kind="stable").astype(np.int32)
    ids, counts = np.unique(mapping, return_counts=True)
    lora_ids = np.full(max_loras + 1, -1, np.int32)
    per = np.zeros(max_loras + 1, np.int32)
    lora_ids[: len(ids)] = ids
    per[: len(ids)] = counts
    start = np.zeros(max_loras + 2, np.int32)
    start[1:] = np.cumsum(per)
    return order, per, start, lora_ids


def _launch(x, w, out, meta, n_slices, scaling, split_k, BM, BN, BK):
    M, K = x.shape
    first = w[0] if isinstance(w, list) else w
    N = first.shape[-2]
    order, per, start, lora_ids = meta
    grid = (split_k * tiles.cdiv(M, BM) * tiles.cdiv(N, BN), n_slices, len(lora_ids))
    table = np.array([a.ctypes.data for a in w], np.int64) if isinstance(w, list) else w
    _lora_shrink[grid](x, table, out, M, N, K, order, per, start, lora_ids, scaling, x.shape[1], 1,
                       first.strides[0] // first.itemsize, first.strides[1] // first.itemsize, 1,
                       out.strides[0] // out.itemsize, out.strides[1] // out.itemsize, 1,
                       BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, EVEN_K=K % (BK * split_k) == 0, SPLIT_K=split_k,
                       GROUP_SIZE_M=2, SLICE_NUM=n_slices)


def _reference(x, ws, mapping, scaling):
    out = np.zeros((len(ws), x.shape[0], ws[0].shape[1]))
    for s, w in enumerate(ws):
        for t, lid in enumerate(mapping):
            if lid >= 0:
                out[s, t] = scaling * (x[t].astype(np.float64) @ w[lid].astype(np.float64).T)
    return out


def check(rng):
    M, K, N, loras = 37, 70, 12, 3
    x = rng.standard_normal((M, K)).astype(np.float32)
    mapping = rng.integers(-1, loras, M).astype(np.int32)
    mapping[:3] = [2, 2, -1]
    meta = _metadata(mapping, loras)
    # single slice, weights passed directly; split-K accumulated with atomics
    w = [(rng.standard_normal((loras, N, K)) * 0.2).astype(np.float32)]
    out = np.zeros((1, M, N), np.float32)
    _launch(x, w[0], out, meta, 1, 0.5, 2, 16, 16, 16)
    expected = _reference(x, w, mapping, 0.5)
    close(out, expected, rtol=3e-3, atol=5e-3)  # tf32 products (the default precision)
    # two slices through a pointer table, EVEN_K path (K multiple of BLOCK_K)
    K2 = 64
    x2 = rng.standard_normal((M, K2)).astype(np.float32)
    ws = [(rng.standard_normal((loras, N, K2)) * 0.2).astype(np.float32) for _ in range(2)]
    out2 = np.zeros((2, M, N), np.float32)
    if tiles.backends.registry.default().name == "cuda":
        return  # host addresses in the table: the CUDA form is triton_runtime/pointer_table's
    if refuses_pointers_from_integers():
        with pytest.raises(UnsupportedError, match="int_to_ptr is not supported on opencl"):
            _launch(x2, ws, out2, meta, 2, 2.0, 1, 16, 16, 32)
        return
    _launch(x2, ws, out2, meta, 2, 2.0, 1, 16, 16, 32)
    close(out2, _reference(x2, ws, mapping, 2.0), rtol=3e-3, atol=5e-3)  # tf32 products (the default precision)
    assert np.all(out2[:, mapping == -1] == 0)
