"""Matmul with tl.swizzle2d program ordering and a 2-D launch, fp32 in and out."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.jit
def matmul_swizzled(A, B, C, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    pid_m, pid_n = tl.swizzle2d(pid_m, pid_n, tl.num_programs(0), tl.num_programs(1), GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(A + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(B + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, allow_tf32=False)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def check(rng):
    M, N, K = 70, 41, 29
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.empty((M, N), np.float32)
    grid = (tiles.cdiv(M, 16), tiles.cdiv(N, 16))
    matmul_swizzled[grid](a, b, c, M, N, K, stride(a, 0), stride(a, 1), stride(b, 0), stride(b, 1),
                          stride(c, 0), stride(c, 1), BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=3)
    close(c, a @ b, rtol=1e-4, atol=1e-4)
