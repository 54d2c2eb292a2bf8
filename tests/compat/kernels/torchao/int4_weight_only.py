"""torchao style int4 weight-only matmuls (fp16/bf16 activations, fp32 accumulation).
HQQ mixed-mm form: signed int4 packed two per int8 byte along K (row 2i in the low nibble, row
2i+1 in the high one), unpacked with arithmetic shifts on int8 (``(qb << 4) >> 4`` sign-extends
the low nibble, the shift amount a ``tl.full((1,), 4, tl.int8)`` tensor), put back in K order
with ``tl.join(lo, hi).permute(0, 2, 1).reshape(BLOCK_K, BLOCK_N)``, group-wise ``(q - zero) *
scale`` broadcast from one group row per K step (``tl.static_assert`` that groups hold whole
K blocks), bf16 reached through fp16; grouped program ids with the builtin ``min`` on tensors,
rows wrapped with ``% M`` under ``tl.max_contiguous(tl.multiple_of(...))``, a ragged K tail
masked with an ``other`` given as a (1, 1) fp16 tile even for the int8 load, ``tl.dot(...,
out_dtype=tl.float32, input_precision="ieee")``, and SPLIT_K programs ``tl.atomic_add``-ing
fp32 partials into an fp32 or (as HQQ does) an fp16 output.  tinygemm/AWQ-like form: unsigned
nibbles packed eight per int32 along K, unpacked by broadcasting ``>> (4 * tl.arange(0, 8))``
over a new axis, ``& 0xF`` and ``tl.reshape``, then ``(q - zero) * scale`` and ``tl.dot(x, tl.trans(w))``."""

import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl


@tiles.heuristics({"EVEN_K": lambda args: args["K"] % (args["BLOCK_K"] * args["SPLIT_K"]) == 0})
@tiles.jit
def _mixed_mm_int4(A, B, scales_ptr, zeros_ptr, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                   stride_cm, stride_cn, stride_scale_k, stride_scale_n, IS_BFLOAT16: tl.constexpr,
                   QGROUP_SIZE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   SPLIT_K: tl.constexpr, EVEN_K: tl.constexpr, GROUP_M: tl.constexpr = 4):
    tl.static_assert(QGROUP_SIZE % BLOCK_K == 0)
    pid = tl.program_id(0)
    pid_z = tl.program_id(1)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // group_size
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    rak = pid_z * BLOCK_K + tl.arange(0, BLOCK_K)
    rbk = pid_z * (BLOCK_K // 2) + tl.arange(0, BLOCK_K // 2)
    A = A + ram[:, None] * stride_am + rak[None, :] * stride_ak
    B = B + rbk[:, None] * stride_bk + rbn[None, :] * stride_bn
    offs_scale_n = rbn * stride_scale_n
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        if EVEN_K:
            a = tl.load(A)
            qb = tl.load(B)
        else:
            k_left = K - k * (BLOCK_K * SPLIT_K)
            _0 = tl.zeros((1, 1), dtype=C.dtype.element_ty)
            a = tl.load(A, mask=rak[None, :] < k_left, other=_0)
            qb = tl.load(B, mask=rbk[:, None] < k_left // 2, other=_0)
        group = min((k * BLOCK_K * SPLIT_K + pid_z * BLOCK_K) // QGROUP_SIZE, tl.cdiv(K, QGROUP_SIZE) - 1)
        scales = tl.load(scales_ptr + group * stride_scale_k + offs_scale_n)
        zeros = tl.load(zeros_ptr + group * stride_scale_k + offs_scale_n)
        _4_i8 = tl.full((1,), 4, dtype=tl.int8)
        qb_lo = (qb << _4_i8) >> _4_i8
        qb_hi = qb >> _4_i8
        if IS_BFLOAT16:
            dq = tl.join(qb_lo.to(tl.float16).to(A.dtype.element_ty), qb_hi.to(tl.float16).to(A.dtype.element_ty))
        else:
            dq = tl.join(qb_lo.to(A.dtype.element_ty), qb_hi.to(A.dtype.element_ty))
        dq = dq.permute(0, 2, 1).reshape(BLOCK_K, BLOCK_N)
        dq = (dq - zeros[None, :]) * scales[None, :]
        acc += tl.dot(a, dq, out_dtype=tl.float32, input_precision="ieee")
        A += BLOCK_K * SPLIT_K * stride_ak
        B += BLOCK_K * SPLIT_K * stride_bk // 2
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    C = C + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    if SPLIT_K == 1:
        tl.store(C, acc.to(C.dtype.element_ty), mask=mask)
    else:
        tl.atomic_add(C, acc, mask=mask)


@tiles.jit
def _int4_int32_linear(X, Wq, S, Z, Y, M, N, K, GROUP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    shifts = tl.arange(0, 8) * 4
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs_k = k0 + tl.arange(0, BLOCK_K)
        offs_kp = k0 // 8 + tl.arange(0, BLOCK_K // 8)
        x = tl.load(X + offs_m[:, None] * K + offs_k[None, :], mask=offs_m[:, None] < M, other=0.0)
        packed = tl.load(Wq + offs_n[:, None] * (K // 8) + offs_kp[None, :], mask=offs_n[:, None] < N, other=0)
        q = (packed[:, :, None] >> shifts[None, None, :]) & 0xF
        q = tl.reshape(q, (BLOCK_N, BLOCK_K))
        g = k0 // GROUP
        scale = tl.load(S + offs_n * (K // GROUP) + g, mask=offs_n < N, other=0.0)
        zero = tl.load(Z + offs_n * (K // GROUP) + g, mask=offs_n < N, other=0.0)
        w = ((q.to(tl.float32) - zero[:, None]) * scale[:, None]).to(X.dtype.element_ty)
        acc = tl.dot(x, tl.trans(w), acc)
    tl.store(Y + offs_m[:, None] * N + offs_n[None, :], acc.to(Y.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _pack_2xint4(q):
    """[K, N] int8 values in [-8, 7] -> [K // 2, N] int8: row 2i low nibble, row 2i + 1 high."""
    lo, hi = q[0::2].astype(np.uint8) & 0xF, q[1::2].astype(np.uint8) << 4
    return (lo | hi).view(np.int8)


def _mixed_mm(a, packed, scales, zeros, group, out_dtype, split_k, block_k=32):
    M, K = a.shape
    N = packed.shape[1]
    c = np.zeros((M, N), out_dtype)
    grid = (tiles.cdiv(M, 16) * tiles.cdiv(N, 32), split_k)
    _mixed_mm_int4[grid](a, packed, scales, zeros, c, M, N, K, K, 1, N, 1, N, 1, N, 1,
                         IS_BFLOAT16=a.dtype == BF16, QGROUP_SIZE=group, BLOCK_M=16, BLOCK_N=32, BLOCK_K=block_k,
                         SPLIT_K=split_k)
    return c


def _check_int32_packed(rng):
    M, N, K, group = 37, 45, 128, 32
    q = rng.integers(0, 16, (N, K)).astype(np.uint32)
    q[0, :8] = 15
    packed = np.zeros((N, K // 8), np.uint32)
    for j in range(8):
        packed |= q[:, j::8] << np.uint32(4 * j)
    packed = packed.view(np.int32)
    scales = rng.uniform(0.01, 0.1, (N, K // group)).astype(np.float32)
    zeros = rng.uniform(6, 9, (N, K // group)).astype(np.float32)
    for dtype in (np.float16, BF16):
        x = rng.standard_normal((M, K)).astype(dtype)
        y = np.empty((M, N), dtype)
        _int4_int32_linear[(tiles.cdiv(M, 16), tiles.cdiv(N, 16))](x, packed, scales, zeros, y, M, N, K, GROUP=group,
                                                                   BLOCK_M=16, BLOCK_N=16, BLOCK_K=32)
        w = (q.astype(np.float32) - np.repeat(zeros, group, 1)) * np.repeat(scales, group, 1)
        ref = x.astype(np.float64) @ w.astype(dtype).astype(np.float64).T
        tol = 5e-2 if dtype == BF16 else 5e-3
        close(y, ref, rtol=tol, atol=tol)


def check(rng):
    _check_int32_packed(rng)
    M, N = 37, 80
    # last: SPLIT_K partials atomically added into the fp16 output, as HQQ does for fp16
    for K, group, dtype, split_k, out_dtype in ((256, 64, np.float16, 1, np.float16),
                                                (128, 64, BF16, 1, BF16),
                                                (160, 32, np.float16, 2, np.float32),
                                                (160, 32, np.float16, 2, np.float16)):
        q = rng.integers(-8, 8, (K, N)).astype(np.int8)
        q[:2, :2] = [[-8, 7], [7, -8]]
        packed = _pack_2xint4(q)
        scales = rng.uniform(0.01, 0.05, (K // group, N)).astype(dtype)
        zeros = rng.integers(-2, 3, (K // group, N)).astype(dtype)
        a = rng.standard_normal((M, K)).astype(dtype)
        w = (q.astype(np.float32) - np.repeat(zeros.astype(np.float32), group, 0)) * \
            np.repeat(scales.astype(np.float32), group, 0)
        w = w.astype(dtype).astype(np.float64)  # the kernel dequantises in the activation dtype
        ref = a.astype(np.float64) @ w
        c = _mixed_mm(a, packed, scales, zeros, group, out_dtype, split_k)
        # |ref| ~ 1-5: dequant rounding (fp16 2^-11, bf16 2^-8 per weight) plus output rounding
        tol = 5e-2 if dtype == BF16 else 5e-3
        close(c, ref, rtol=tol, atol=tol)
