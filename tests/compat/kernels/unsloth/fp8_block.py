"""Unsloth style block-FP8 linear (DeepSeek-V3 scheme, as Unsloth ships it): activation
quantization per 1 x BLOCK group with the scale chosen by a conditional expression on a tensor
(``s = 1.0 if s == 0 else s``, so an all-zero group keeps scale 1) and the store cast through
``y_ptr.dtype.element_ty``; weight dequantization per BLOCK x BLOCK tile on a 2-D grid with
``.to(tl.int64)`` offsets and one scale per tile; and the W8A8 block matmul with GROUP_SIZE_M
swizzling (builtin ``min`` on a tensor and a constexpr), rows/cols wrapped with ``% M`` / ``% N``
instead of masked, K masked as ``offs_k < K - k * BLOCK_SIZE_K``, per-K-block scales applied to
each ``tl.dot`` before accumulating, and the output dtype picked by comparing
``C.dtype.element_ty`` with ``tl.bfloat16`` / ``tl.float16``."""

import ml_dtypes
import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl

FP8 = ml_dtypes.float8_e4m3fn


@tiles.jit
def act_quant_kernel(x_ptr, y_ptr, s_ptr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offs).to(tl.float32)
    s = tl.max(tl.abs(x)) / 448.0
    s = 1.0 if s == 0 else s
    y = (x / s).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + offs, y)
    tl.store(s_ptr + pid, s)


@tiles.jit
def weight_dequant_kernel(x_ptr, s_ptr, y_ptr, M, N, BLOCK_SIZE: tl.constexpr):
    pid_m = tl.program_id(axis=0)
    pid_n = tl.program_id(axis=1)
    n_tiles = tl.cdiv(N, BLOCK_SIZE)
    rows = pid_m * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    cols = pid_n * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    offs = rows[:, None].to(tl.int64) * N + cols[None, :].to(tl.int64)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(y_ptr + offs, x * tl.load(s_ptr + pid_m * n_tiles + pid_n), mask=mask)


@tiles.jit
def _w8a8_block_fp8_matmul(A, B, C, As, Bs, M, N, K, group_n, group_k, stride_am, stride_ak, stride_bk,
                           stride_bn, stride_cm, stride_cn, stride_As_m, stride_As_k, stride_Bs_k, stride_Bs_n,
                           BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                           GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    per_group = GROUP_SIZE_M * num_pid_n
    first_m = (pid // per_group) * GROUP_SIZE_M
    group_rows = min(num_pid_m - first_m, GROUP_SIZE_M)
    pid_m = first_m + (pid % group_rows)
    pid_n = (pid % per_group) // group_rows

    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = A + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = B + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    as_ptrs = As + offs_am * stride_As_m
    bs_ptrs = Bs + (offs_bn // group_n) * stride_Bs_n

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        kg = (k * BLOCK_SIZE_K) // group_k
        a_s = tl.load(as_ptrs + kg * stride_As_k)
        b_s = tl.load(bs_ptrs + kg * stride_Bs_k)
        acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if C.dtype.element_ty == tl.bfloat16:
        c = acc.to(tl.bfloat16)
    elif C.dtype.element_ty == tl.float16:
        c = acc.to(tl.float16)
    else:
        c = acc.to(tl.float32)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    tl.store(C + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :], c,
             mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def act_quant(x, block):
    y = np.empty(x.shape, FP8)
    s = np.empty((*x.shape[:-1], x.shape[-1] // block), np.float32)
    act_quant_kernel[(x.size // block,)](x, y, s, BLOCK_SIZE=block)
    return y, s


def w8a8_block_fp8_matmul(a, b, a_s, b_s, block_n, block_k, out_dtype, block_m=16):
    M, K = a.shape
    N = b.shape[0]  # b is [N, K], read as [K, N] through swapped strides
    c = np.empty((M, N), out_dtype)
    grid = (tiles.cdiv(M, block_m) * tiles.cdiv(N, block_n),)
    _w8a8_block_fp8_matmul[grid](a, b, c, a_s, b_s, M, N, K, block_n, block_k, K, 1, 1, K, N, 1,
                                 a_s.shape[1], 1, 1, b_s.shape[1], BLOCK_SIZE_M=block_m, BLOCK_SIZE_N=block_n,
                                 BLOCK_SIZE_K=block_k, GROUP_SIZE_M=2)
    return c


def check(rng):
    M, K, N, blk = 37, 96, 80, 32
    x = (rng.standard_normal((M, K)) * 3).astype(BF16)
    x[4, 32:64] = 0  # an all-zero group: scale stays 1
    x[5, :3] = [1e4, -1e-4, 0.5]
    x32 = x.astype(np.float32)
    y, s = act_quant(x, blk)
    ref_s = np.abs(x32).reshape(M, K // blk, blk).max(-1) / np.float32(448.0)
    ref_s = np.where(ref_s == 0, np.float32(1.0), ref_s).astype(np.float32)
    close(s, ref_s, rtol=3e-7, atol=0)  # CUDA's float32 `/` is div.full (2 ulp), as Triton's
    ref_y = (x32.reshape(M, K // blk, blk) / s[..., None]).reshape(M, K).astype(FP8)
    close(y.astype(np.float32), ref_y.astype(np.float32), rtol=0, atol=0)

    w = (rng.standard_normal((N, K)) * 100).astype(FP8)
    w_s = rng.uniform(1e-3, 1e-2, (tiles.cdiv(N, blk), tiles.cdiv(K, blk))).astype(np.float32)
    w_full = w.astype(np.float32) * np.repeat(np.repeat(w_s, blk, 0), blk, 1)[:N, :K]
    deq = np.empty((N, K), BF16)
    weight_dequant_kernel[(tiles.cdiv(N, blk), tiles.cdiv(K, blk))](w, w_s, deq, N, K, BLOCK_SIZE=blk)
    close(deq, w_full.astype(BF16), rtol=1e-2, atol=1e-6)

    a_full = y.astype(np.float64) * np.repeat(s, blk, 1)
    ref = a_full @ w_full.T.astype(np.float64)
    # fp8 products are exact in fp32; the fp32 sums then the output rounding bound the error
    for dtype, rtol in ((BF16, 1e-2), (np.float16, 2e-3), (np.float32, 1e-5)):
        c = w8a8_block_fp8_matmul(y, w, s, w_s, blk, blk, dtype)
        close(c, ref, rtol=rtol, atol=rtol)
    # K not a multiple of the block: the last K block is masked (operands built directly)
    K2 = 100
    a2 = (rng.standard_normal((M, K2)) * 50).astype(FP8)
    a2_s = rng.uniform(0.01, 0.1, (M, tiles.cdiv(K2, blk))).astype(np.float32)
    w2 = (rng.standard_normal((N, K2)) * 50).astype(FP8)
    w2_s = rng.uniform(0.01, 0.1, (tiles.cdiv(N, blk), tiles.cdiv(K2, blk))).astype(np.float32)
    a2_full = a2.astype(np.float64) * np.repeat(a2_s, blk, 1)[:, :K2]
    w2_full = w2.astype(np.float64) * np.repeat(np.repeat(w2_s, blk, 0), blk, 1)[:N, :K2]
    c = w8a8_block_fp8_matmul(a2, w2, a2_s, w2_s, blk, blk, np.float32)
    close(c, a2_full @ w2_full.T, rtol=1e-5, atol=1e-3)
