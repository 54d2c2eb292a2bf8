"""vLLM style ``triton_scaled_mm`` (compressed-tensors w8a8): ``C = (sa * sb) * (A @ B) + bias``
with int8 (int32 accumulator) or fp8 e4m3 (fp32 accumulator) operands.  Exercises the accumulator
dtype passed positionally as a ``tl.constexpr`` dtype into ``tl.zeros`` and ``tl.dot(...,
out_dtype=)``, ``tl.int64`` offsets from ``tl.arange(...).to``, a transposed (column-major) weight
given by strides, per-token / per-channel scales or one scalar chosen by
``BLOCK_SIZE_SCALE_* = 1``, a ``(BLOCK > 1) * pid`` bool-times-int offset, a positional ``mask``
in ``tl.load``, ``broadcast_to`` and ``.T`` on loaded scales, the result cast to
``c_ptr.type.element_ty`` before a bias is added, and ``if bias_ptr:`` with ``bias=None``."""

import ml_dtypes
import numpy as np
from compat_harness import BF16, close, stride

import tiles
import tiles.language as tl


@tiles.jit
def _scaled_mm(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, bias_ptr, M, N, K, stride_am, stride_ak,
               stride_bk, stride_bn, stride_cm, stride_cn, ACC_DTYPE: tl.constexpr,
               BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
               BLOCK_SIZE_SCALE_A: tl.constexpr, BLOCK_SIZE_SCALE_B: tl.constexpr):
    pid = tl.program_id(axis=0)
    grid_n = tl.cdiv(N, BLOCK_SIZE_N)
    pid_m = pid // grid_n
    pid_n = pid % grid_n
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=ACC_DTYPE)

    rows = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M).to(tl.int64)
    cols = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N).to(tl.int64)
    row_ok = rows < M
    col_ok = cols < N
    ks = tl.arange(0, BLOCK_SIZE_K).to(tl.int64)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    # a scale block is either the whole M tile (per token) or one element (per tensor)
    sa_offs = tl.arange(0, BLOCK_SIZE_SCALE_A) + (BLOCK_SIZE_SCALE_A > 1) * pid_m * BLOCK_SIZE_M
    sb_offs = tl.arange(0, BLOCK_SIZE_SCALE_B) + (BLOCK_SIZE_SCALE_B > 1) * pid_n * BLOCK_SIZE_N

    for _ in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        k_ok = ks < K
        a = tl.load(a_ptrs, mask=row_ok[:, None] & k_ok[None, :])
        b = tl.load(b_ptrs, mask=k_ok[:, None] & col_ok[None, :])
        acc = tl.dot(a, b, acc, out_dtype=ACC_DTYPE)
        ks += BLOCK_SIZE_K
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    one = tl.arange(0, 1)
    sa = tl.load(sa_ptr + sa_offs[:, None], (sa_offs < M)[:, None] & (one < 1)[:, None])
    sa = sa.broadcast_to((BLOCK_SIZE_M, 1))
    out = sa * acc.to(tl.float32)
    sb = tl.load(sb_ptr + sb_offs[:, None], (sb_offs < N)[:, None] & (one < 1)[None, :])
    sb = sb.broadcast_to((BLOCK_SIZE_N, 1))
    out = sb.T * out
    c = out.to(c_ptr.type.element_ty)
    if bias_ptr:
        c += tl.load(bias_ptr + cols, col_ok)
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=row_ok[:, None] & col_ok[None, :])


def scaled_mm(a, b, scale_a, scale_b, out_dtype, bias=None, bm=16, bn=32, bk=32):
    M, K = a.shape
    N = b.shape[1]
    scale_a = scale_a.reshape(-1, 1)
    scale_b = scale_b.reshape(-1, 1)
    c = np.empty((M, N), out_dtype)
    acc_dtype = tl.int32 if a.dtype == np.int8 else tl.float32

    def grid(META):
        return (tiles.cdiv(M, META["BLOCK_SIZE_M"]) * tiles.cdiv(N, META["BLOCK_SIZE_N"]),)

    _scaled_mm[grid](a, b, scale_a, scale_b, c, bias, M, N, K, stride(a, 0), stride(a, 1),
                     stride(b, 0), stride(b, 1), stride(c, 0), stride(c, 1), acc_dtype,
                     BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk,
                     BLOCK_SIZE_SCALE_A=1 if scale_a.size == 1 else bm,
                     BLOCK_SIZE_SCALE_B=1 if scale_b.size == 1 else bn)
    return c


def reference(a, b, sa, sb, out_dtype, bias):
    acc = a.astype(np.int64) @ b.astype(np.int64) if a.dtype == np.int8 else (
        a.astype(np.float64) @ b.astype(np.float64))
    out = (sa.reshape(-1, 1).astype(np.float64) * sb.reshape(1, -1) * acc).astype(out_dtype)
    return out if bias is None else (out + bias).astype(out_dtype)


def check(rng):
    M, N, K = 37, 70, 129
    a = rng.integers(-128, 128, (M, K), dtype=np.int8)
    a[0] = -128  # extreme row: |acc| reaches 128 * 127 * K, still exact in int32
    w = rng.integers(-128, 128, (N, K), dtype=np.int8)
    w[:, 5] = 127
    b = w.T  # column-major [K, N], as vLLM stores the transposed weight
    sa = rng.uniform(1e-3, 2e-2, M).astype(np.float32)
    sb = rng.uniform(1e-3, 2e-2, N).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float16)
    # per-token x per-channel, fp16 out, with bias; fp16 rounding of the product then of the sum
    c = scaled_mm(a, b, sa, sb, np.float16, bias)
    close(c, reference(a, b, sa, sb, np.float16, bias), rtol=2e-3, atol=2e-3)
    # scalar scales on both sides, bf16 out, no bias
    s1, s2 = np.float32([0.0123]), np.float32([0.0071])
    c = scaled_mm(a, b, s1, s2, BF16, bm=32, bn=16, bk=64)
    close(c, reference(a, b, s1, s2, BF16, None), rtol=1e-2, atol=1e-2)
    # fp8 e4m3 operands (values exact in e4m3), fp32 accumulate, per-token scale only
    fp8 = ml_dtypes.float8_e4m3fn
    a8 = (rng.standard_normal((M, K)) * 4).astype(fp8)
    a8[1, :4] = np.array([448.0, -448.0, 2.0 ** -9, 0.0]).astype(fp8)
    b8 = np.ascontiguousarray((rng.standard_normal((K, N)) * 2).astype(fp8))
    c = scaled_mm(a8, b8, sa, s2, np.float32)
    close(c, reference(a8, b8, sa, s2, np.float32, None), rtol=1e-5, atol=1e-4)
