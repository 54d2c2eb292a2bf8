"""torchao style int8 training/inference matmul: rows quantised to int8 with a per-row absmax
scale (``tl.max(tl.abs(x), axis=1)``, libdevice ``rint``, ``tl.clamp``, ``.to(tl.int8)``), then
``scaled_int8_mm``: ``tiles.autotune`` keyed on sizes *and strides* stacked on ``tiles.heuristics``
that overrides a constexpr default (``EVEN_K: tl.constexpr = True``), grouped program ids with the
builtin ``min``, ``% M`` wrapped rows under ``tl.max_contiguous(tl.multiple_of(...))``, a K loop
written as ``for k in range(K, 0, -BLOCK_K)`` (runtime start, negative step) whose masks compare
against the *remaining* ``k``, int8 tiles loaded with ``other=0.0`` and ``acc += tl.dot(a, b)`` into
an int32 accumulator, a scalar or per-column scale chosen by ``COL_SCALE_SCALAR``, and the store
offsets ``tl.broadcast_to(xindex, mask.shape)``.  B is passed as a transposed view (strides)."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl
from tiles.language.extra.libdevice import rint


@tiles.jit
def _quantize_rows_int8(X, Q, S, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(X + rows[:, None] * N + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    scale = tl.max(tl.abs(x), axis=1) / 127.0
    scale = tl.where(scale == 0, 1.0, scale)
    q = tl.clamp(rint(x / scale[:, None]), -128.0, 127.0).to(tl.int8)
    tl.store(Q + rows[:, None] * N + cols[None, :], q, mask=mask)
    tl.store(S + rows, scale.to(S.dtype.element_ty), mask=rows < M)


@tiles.autotune(configs=[tiles.Config(dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=32)),
                         tiles.Config(dict(BLOCK_M=32, BLOCK_N=16, BLOCK_K=16))],
                key=["M", "N", "K", "stride_ak", "stride_bk"])
@tiles.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
@tiles.jit
def _scaled_int8_mm_kernel(A_ptr, B_ptr, C_ptr, row_scale_ptr, col_scale_ptr, M, N, K, stride_am, stride_ak,
                           stride_bk, stride_bn, stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr = 8, EVEN_K: tl.constexpr = True,
                           COL_SCALE_SCALAR: tl.constexpr = False):
    pid = tl.program_id(0)
    grid_m = (M + BLOCK_M - 1) // BLOCK_M
    grid_n = (N + BLOCK_N - 1) // BLOCK_N
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // group_size
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    A = A_ptr + (ram[:, None] * stride_am + rk[None, :] * stride_ak)
    B = B_ptr + (rk[:, None] * stride_bk + rbn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(K, 0, -BLOCK_K):
        if EVEN_K:
            a = tl.load(A)
            b = tl.load(B)
        else:
            a = tl.load(A, mask=rk[None, :] < k, other=0.0)
            b = tl.load(B, mask=rk[:, None] < k, other=0.0)
        acc += tl.dot(a, b)
        A += BLOCK_K * stride_ak
        B += BLOCK_K * stride_bk
    idx_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M))[:, None]
    idx_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N))[None, :]
    mask = (idx_m < M) & (idx_n < N)
    row_scale = tl.load(row_scale_ptr + idx_m, mask=idx_m < M).to(tl.float32)
    if COL_SCALE_SCALAR:
        col_scale = tl.load(col_scale_ptr).to(tl.float32)
    else:
        col_scale = tl.load(col_scale_ptr + idx_n, mask=idx_n < N).to(tl.float32)
    acc = acc.to(tl.float32) * row_scale * col_scale
    xindex = idx_m * stride_cm + idx_n * stride_cn
    tl.store(C_ptr + tl.broadcast_to(xindex, mask.shape), acc, mask)


def _quantize(x):
    M, N = x.shape
    q = np.empty((M, N), np.int8)
    s = np.empty(M, np.float32)
    _quantize_rows_int8[(tiles.cdiv(M, 8),)](x, q, s, M, N, BLOCK_M=8, BLOCK_N=tiles.next_power_of_2(N))
    return q, s


def scaled_int8_mm(a, b, row_scale, col_scale, out_dtype):
    M, K = a.shape
    N = b.shape[1]
    c = np.empty((M, N), out_dtype)
    grid = lambda meta: (tiles.cdiv(M, meta["BLOCK_M"]) * tiles.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    _scaled_int8_mm_kernel[grid](a, b, c, row_scale, col_scale, M, N, K, stride(a, 0), stride(a, 1), stride(b, 0),
                                 stride(b, 1), stride(c, 0), stride(c, 1), COL_SCALE_SCALAR=col_scale.size == 1)
    return c


def check(rng):
    M, K = 37, 96
    x = (rng.standard_normal((M, K)) * rng.uniform(0.1, 10, (M, 1))).astype(np.float32)
    x[5] = 0.0  # an all-zero row: scale falls back to 1
    x[6, :4] = [127.0, -127.0, 63.5, -64.5]  # scale 1: exact halves round to even
    q, s = _quantize(x)
    ref_s = np.abs(x).max(1) / np.float32(127)
    ref_s = np.where(ref_s == 0, np.float32(1), ref_s)
    close(s, ref_s, rtol=3e-7, atol=0)  # CUDA's float32 `/` is div.full (2 ulp), as Triton's
    close(q, np.clip(np.rint(x / s[:, None]), -128, 127).astype(np.int8))
    for N, K2 in ((45, 96), (29, 70)):  # K2 = 70: the ragged-K masks
        a = rng.integers(-128, 128, (M, K2)).astype(np.int8)
        bt = rng.integers(-128, 128, (N, K2)).astype(np.int8)
        b = bt.T  # [K, N] with strides (1, K): B along K is contiguous
        row_scale = rng.uniform(0.001, 0.01, M).astype(np.float32)
        exact = a.astype(np.int64) @ b.astype(np.int64)
        for col_scale in (rng.uniform(0.001, 0.01, N).astype(np.float32), np.array([0.004], np.float32)):
            c = scaled_int8_mm(a, b, row_scale, col_scale, np.float32)
            ref = exact.astype(np.float64) * row_scale[:, None] * (col_scale if col_scale.size > 1 else col_scale[0])
            # int32 products are exact; two fp32 scale multiplies round
            close(c, ref, rtol=1e-6, atol=1e-7)
        c16 = scaled_int8_mm(a, b, row_scale, col_scale, np.float16)
        close(c16, ref, rtol=1e-3, atol=1e-4)
