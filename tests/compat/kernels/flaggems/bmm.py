"""FlagGems style batched matmul: a 3-D grid (M tiles, N tiles, batch) with the batch taken from
``program_id(2)`` and added to the pointer arguments in place; program ids regrouped along M
(``GROUP_M``) with ``tl.num_programs`` and a group size chosen by ``tl.where`` on scalars;
``DIVISIBLE_M/N/K`` from ``tiles.heuristics``, masks that are ``None`` in some constexpr branches
(``mask_a = None`` then ``tl.load(ptrs, mask_a)``) and names such as ``mask_m`` bound only in the
branches that need them; the K loop advances offsets and pointers with ``+=`` and accumulates
``tl.dot(a, b, allow_tf32=False)`` in fp32 before a store cast by the output pointer.  A second
kernel takes every stride, including batch strides, so it runs on a transposed, sliced ``B``
view and writes into every other column of a wider output."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.heuristics({
    "DIVISIBLE_M": lambda args: args["M"] % args["TILE_M"] == 0,
    "DIVISIBLE_N": lambda args: args["N"] % args["TILE_N"] == 0,
    "DIVISIBLE_K": lambda args: args["K"] % args["TILE_K"] == 0,
})
@tiles.jit
def bmm_kernel(A, B, Out, M, N, K, TILE_M: tl.constexpr, TILE_N: tl.constexpr, TILE_K: tl.constexpr,
               GROUP_M: tl.constexpr, DIVISIBLE_M: tl.constexpr, DIVISIBLE_N: tl.constexpr,
               DIVISIBLE_K: tl.constexpr):
    pid_b = tl.program_id(2)
    A += pid_b * M * K
    B += pid_b * K * N
    Out += pid_b * M * N
    pidx = tl.program_id(0)
    pidy = tl.program_id(1)
    if GROUP_M == 1:
        pid_m, pid_n = pidx, pidy
    else:
        gridx = tl.num_programs(0)
        gridy = tl.num_programs(1)
        pid = pidx + pidy * gridx
        per_group = gridy * GROUP_M
        group_id = pid // per_group
        in_group = pid % per_group
        group_size = tl.where(group_id * GROUP_M + GROUP_M > gridx, gridx % GROUP_M, GROUP_M)
        pid_m = group_id * GROUP_M + in_group % group_size
        pid_n = in_group // group_size
    offs_m = pid_m * TILE_M + tl.arange(0, TILE_M)
    offs_n = pid_n * TILE_N + tl.arange(0, TILE_N)
    offs_k = tl.arange(0, TILE_K)
    if not DIVISIBLE_M:
        mask_m = offs_m < M
    if not DIVISIBLE_N:
        mask_n = offs_n < N
    a_ptrs = A + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = B + offs_k[:, None] * N + offs_n[None, :]
    o_ptrs = Out + offs_m[:, None] * N + offs_n[None, :]
    acc = tl.zeros((TILE_M, TILE_N), dtype=tl.float32)
    for _ in range(tl.cdiv(K, TILE_K)):
        if DIVISIBLE_K:
            if DIVISIBLE_M:
                mask_a = None
            else:
                mask_a = mask_m[:, None]
            if DIVISIBLE_N:
                mask_b = None
            else:
                mask_b = mask_n[None, :]
        else:
            mask_k = offs_k < K
            if DIVISIBLE_M:
                mask_a = mask_k[None, :]
            else:
                mask_a = mask_m[:, None] & mask_k[None, :]
            if DIVISIBLE_N:
                mask_b = mask_k[:, None]
            else:
                mask_b = mask_k[:, None] & mask_n[None, :]
        a = tl.load(a_ptrs, mask_a)
        b = tl.load(b_ptrs, mask_b)
        offs_k += TILE_K
        a_ptrs += TILE_K
        b_ptrs += TILE_K * N
        acc += tl.dot(a, b, allow_tf32=False)
    if DIVISIBLE_M and DIVISIBLE_N:
        mask_c = None
    elif DIVISIBLE_M and not DIVISIBLE_N:
        mask_c = mask_n[None, :]
    elif not DIVISIBLE_M and DIVISIBLE_N:
        mask_c = mask_m[:, None]
    else:
        mask_c = mask_m[:, None] & mask_n[None, :]
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask_c)


@tiles.jit
def bmm_strided_kernel(A, B, Out, M, N, K, stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn,
                       stride_ob, stride_om, stride_on, TILE_M: tl.constexpr, TILE_N: tl.constexpr,
                       TILE_K: tl.constexpr):
    pid_b = tl.program_id(2).to(tl.int64)
    offs_m = tl.program_id(0) * TILE_M + tl.arange(0, TILE_M)
    offs_n = tl.program_id(1) * TILE_N + tl.arange(0, TILE_N)
    a_ptrs = A + pid_b * stride_ab + offs_m[:, None] * stride_am
    b_ptrs = B + pid_b * stride_bb + offs_n[None, :] * stride_bn
    acc = tl.zeros((TILE_M, TILE_N), dtype=tl.float32)
    for k0 in range(0, K, TILE_K):
        ks = k0 + tl.arange(0, TILE_K)
        a = tl.load(a_ptrs + ks[None, :] * stride_ak, mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0)
        b = tl.load(b_ptrs + ks[:, None] * stride_bk, mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")
    o_ptrs = Out + pid_b * stride_ob + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _bmm(a, b, out, tile_m, tile_n, tile_k, group_m):
    batch, M, K = a.shape
    N = b.shape[2]
    grid = (tiles.cdiv(M, tile_m), tiles.cdiv(N, tile_n), batch)
    bmm_kernel[grid](a, b, out, M, N, K, TILE_M=tile_m, TILE_N=tile_n, TILE_K=tile_k, GROUP_M=group_m)


def check(rng):
    # odd sizes: every DIVISIBLE_* flag false; then sizes that make each of them true
    for (batch, M, N, K), (tm, tn, tk), group_m in (((3, 37, 29, 45), (16, 16, 16), 2),
                                                   ((2, 32, 29, 48), (16, 16, 16), 1),
                                                   ((2, 37, 32, 32), (16, 16, 16), 4),
                                                   ((2, 48, 64, 20), (16, 32, 16), 2)):
        a = rng.standard_normal((batch, M, K)).astype(np.float32)
        b = rng.standard_normal((batch, K, N)).astype(np.float32)
        out = np.full((batch, M, N), np.nan, np.float32)
        _bmm(a, b, out, tm, tn, tk, group_m)
        # fp32 products (allow_tf32=False) summed over K <= 48 terms
        close(out, np.matmul(a.astype(np.float64), b), rtol=1e-4, atol=1e-4)
    batch, M, N, K = 3, 21, 19, 33
    a16 = rng.standard_normal((batch, M, K)).astype(np.float16)
    b16 = rng.standard_normal((batch, K, N)).astype(np.float16)
    out16 = np.empty((batch, M, N), np.float16)
    _bmm(a16, b16, out16, 16, 16, 16, 2)
    # fp16 inputs, fp32 accumulation, fp16 result: one rounding of |values| up to ~20
    close(out16, np.matmul(a16.astype(np.float32), b16.astype(np.float32)), rtol=2e-3, atol=2e-2)
    a = rng.standard_normal((batch, M, K)).astype(np.float32)
    bt_base = rng.standard_normal((batch, N + 3, K)).astype(np.float32)
    b = bt_base[:, 1:N + 1, :].transpose(0, 2, 1)  # [batch, K, N], strides (.., 1, K)
    wide = np.zeros((batch, M, 2 * N), np.float32)
    out = wide[:, :, ::2]
    grid = (tiles.cdiv(M, 16), tiles.cdiv(N, 16), batch)
    bmm_strided_kernel[grid](a, b, out, M, N, K, *(stride(a, d) for d in range(3)), *(stride(b, d) for d in range(3)),
                             *(stride(out, d) for d in range(3)), TILE_M=16, TILE_N=16, TILE_K=16)
    close(out, np.matmul(a.astype(np.float64), b), rtol=1e-4, atol=1e-4)
    close(wide[:, :, 1::2], np.zeros((batch, M, N), np.float32), rtol=0, atol=0)
