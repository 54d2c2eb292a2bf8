"""FlagGems / Triton 2 ``ops.matmul`` style split-K GEMM: autotuned over configs that differ in
``SPLIT_K`` (``reset_to_zero`` on C, accumulated with ``tl.atomic_add`` when ``SPLIT_K > 1``), an
``EVEN_K`` heuristic from the arguments and the chosen config, rows and columns wrapped with ``%``
and hinted with ``tl.max_contiguous(tl.multiple_of(..))``, a 2-D grid function reading the
config, fp16 operands with an fp32 accumulator and ``acc.to(C.dtype.element_ty)``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.autotune(
    configs=[tiles.Config({"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "SPLIT_K": 1}, num_warps=2),
             tiles.Config({"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "SPLIT_K": 3}, num_warps=4)],
    key=["M", "N", "K"],
    reset_to_zero=["C"],
    warmup=1,
    rep=1,
)
@tiles.heuristics({"EVEN_K": lambda args: args["K"] % (args["BLOCK_K"] * args["SPLIT_K"]) == 0})
@tiles.jit
def _mm(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr,
        EVEN_K: tl.constexpr, GROUP_M: tl.constexpr = 4):
    pid = tl.program_id(0)
    pid_z = tl.program_id(1)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * grid_n
    group_id = pid // width
    group_size = min(grid_m - group_id * GROUP_M, GROUP_M)
    pid_m = group_id * GROUP_M + (pid % group_size)
    pid_n = (pid % width) // group_size
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    rk = pid_z * BLOCK_K + tl.arange(0, BLOCK_K)
    A = A + (ram[:, None] * stride_am + rk[None, :] * stride_ak)
    B = B + (rk[:, None] * stride_bk + rbn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        if EVEN_K:
            a = tl.load(A)
            b = tl.load(B)
        else:
            k_left = K - k * (BLOCK_K * SPLIT_K)
            a = tl.load(A, mask=rk[None, :] < k_left, other=0.0)
            b = tl.load(B, mask=rk[:, None] < k_left, other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
        A += BLOCK_K * SPLIT_K * stride_ak
        B += BLOCK_K * SPLIT_K * stride_bk
    acc = acc.to(C.dtype.element_ty)
    C = C + (rm[:, None] * stride_cm + rn[None, :] * stride_cn)
    mask = (rm < M)[:, None] & (rn < N)[None, :]
    if SPLIT_K == 1:
        tl.store(C, acc, mask=mask)
    else:
        tl.atomic_add(C, acc, mask=mask)


def check(rng):
    for M, N, K in ((37, 45, 96), (20, 33, 50)):
        a = (rng.standard_normal((M, K)) / 4).astype(np.float16)
        b = (rng.standard_normal((K, N)) / 4).astype(np.float16)
        c = np.full((M, N), 99, np.float32)

        def grid(meta, M=M, N=N):
            return (tiles.cdiv(M, meta["BLOCK_M"]) * tiles.cdiv(N, meta["BLOCK_N"]), meta["SPLIT_K"])

        _mm[grid](a, b, c, M, N, K, K, 1, N, 1, N, 1)
        close(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
        assert _mm.best_config.kwargs["SPLIT_K"] in (1, 3)
