"""vLLM / SGLang style fused MoE GEMM: tokens pre-sorted by expert (padded to ``BLOCK_SIZE_M``
with an out-of-range id), each M block reading its expert id with ``tl.load``, an early ``return``
past the padded count, a block of expert ``-1`` writing zeros through a ``@jit`` helper, rows
gathered as ``token // top_k``, ``other=`` given as a ``tl.zeros([1, 1])`` of the pointer's element
type, ``compute_type`` passed as a ``tl.constexpr`` dtype and the routed weight multiplied in."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.jit
def _zeros_out(c_ptr, stride_cm, stride_cn, pid_n, N, offs_token, token_mask, BLOCK_SIZE_M, BLOCK_SIZE_N,
               compute_type):
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=compute_type)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_token[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc, mask=token_mask[:, None] & (offs_cn[None, :] < N))


@tiles.jit
def _moe_gemm(a_ptr, b_ptr, c_ptr, weights_ptr, sorted_ids_ptr, expert_ids_ptr, padded_count_ptr,
              N, K, EM, num_valid_tokens,
              stride_am, stride_ak, stride_be, stride_bk, stride_bn, stride_cm, stride_cn,
              BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
              GROUP_SIZE_M: tl.constexpr, MUL_ROUTED_WEIGHT: tl.constexpr, top_k: tl.constexpr,
              compute_type: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(EM, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    in_group = GROUP_SIZE_M * num_pid_n
    first_m = (pid // in_group) * GROUP_SIZE_M
    group_rows = min(num_pid_m - first_m, GROUP_SIZE_M)
    pid_m = first_m + ((pid % in_group) % group_rows)
    pid_n = (pid % in_group) // group_rows
    if pid_m * BLOCK_SIZE_M >= tl.load(padded_count_ptr):
        return
    offs_token_id = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    offs_token = tl.load(sorted_ids_ptr + offs_token_id)
    token_mask = offs_token < num_valid_tokens
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    if expert == -1:
        _zeros_out(c_ptr, stride_cm, stride_cn, pid_n, N, offs_token, token_mask, BLOCK_SIZE_M, BLOCK_SIZE_N,
                   compute_type)
        return
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N).to(tl.int64)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_token[:, None] // top_k * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + expert * stride_be + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    a_zero = tl.zeros([1, 1], dtype=a_ptrs.dtype.element_ty)
    b_zero = tl.zeros([1, 1], dtype=b_ptrs.dtype.element_ty)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=token_mask[:, None] & (offs_k[None, :] < K - k * BLOCK_SIZE_K), other=a_zero)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=b_zero)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if MUL_ROUTED_WEIGHT:
        w = tl.load(weights_ptr + offs_token, mask=token_mask, other=0)
        acc = acc * w[:, None]
    acc = acc.to(compute_type)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_token[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc, mask=token_mask[:, None] & (offs_cn[None, :] < N))


def _align(topk_ids, num_experts, block, dead_expert):
    """moe_align_block_size on the host: flat (token, k) ids grouped by expert, each group padded
    to a multiple of ``block`` with the invalid id ``topk_ids.size``."""
    flat = topk_ids.ravel()
    invalid = flat.size
    sorted_ids, expert_ids = [], []
    for e in range(num_experts):
        ids = list(np.nonzero(flat == e)[0])
        if not ids:
            continue
        ids += [invalid] * (-len(ids) % block)
        sorted_ids += ids
        expert_ids += [-1 if e == dead_expert else e] * (len(ids) // block)
    count = len(sorted_ids)
    sorted_ids += [invalid] * block  # room past the padded count that no program reads
    return np.array(sorted_ids, np.int32), np.array(expert_ids + [0], np.int32), np.array([count], np.int32)


def check(rng):
    tokens, hidden, inter, experts, top_k = 11, 40, 24, 4, 2
    BM, BN, BK = 16, 16, 16
    a = rng.standard_normal((tokens, hidden)).astype(np.float16)
    w = (rng.standard_normal((experts, inter, hidden)) / 4).astype(np.float16)
    logits = rng.standard_normal((tokens, experts))
    topk_ids = np.argsort(-logits, 1)[:, :top_k].astype(np.int32)
    topk_w = np.take_along_axis(np.exp(logits) / np.exp(logits).sum(1, keepdims=True), topk_ids, 1).astype(np.float32)
    dead = int(topk_ids[0, 1])
    sorted_ids, expert_ids, padded = _align(topk_ids, experts, BM, dead)
    c = np.full((tokens, top_k, inter), 7, np.float16)
    EM = int(padded[0]) + BM
    grid = (tiles.cdiv(EM, BM) * tiles.cdiv(inter, BN),)
    _moe_gemm[grid](a, w, c, topk_w, sorted_ids, expert_ids, padded, inter, hidden, EM, topk_ids.size,
                    stride(a, 0), stride(a, 1), stride(w, 0), stride(w, 2), stride(w, 1), stride(c, 1), stride(c, 2),
                    BLOCK_SIZE_M=BM, BLOCK_SIZE_N=BN, BLOCK_SIZE_K=BK, GROUP_SIZE_M=2, MUL_ROUTED_WEIGHT=True,
                    top_k=top_k, compute_type=tl.float16)
    a32, w32 = a.astype(np.float32), w.astype(np.float32)
    expected = np.einsum("tkh,tkih->tki", np.broadcast_to(a32[:, None], (tokens, top_k, hidden)), w32[topk_ids])
    expected *= topk_w[..., None]
    expected[topk_ids == dead] = 0
    close(c, expected.astype(np.float16), rtol=2e-2, atol=2e-2)
