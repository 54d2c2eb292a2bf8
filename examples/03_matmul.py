"""Blocked matrix multiplication: fp16 inputs, fp32 accumulation, grouped program order.

Programs are numbered so that GROUP_M consecutive ones share a column block of B
while they walk down GROUP_M row blocks of A, which keeps both operands hot in
cache on a GPU.
"""

from __future__ import annotations

import argparse

import numpy as np

import tiles
import tiles.language as tl
from tiles.backends.choice import add_backend_argument, chosen, describe


@tiles.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(M, BLOCK_M)
    blocks_n = tl.cdiv(N, BLOCK_N)
    programs_per_group = GROUP_M * blocks_n
    group = pid // programs_per_group
    first_m = group * GROUP_M
    group_rows = min(blocks_m - first_m, GROUP_M)
    pid_m = first_m + (pid % programs_per_group) % group_rows
    pid_n = (pid % programs_per_group) // group_rows

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=(rows[:, None] < M) & (ks[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=(ks[:, None] < k_left) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c = acc.to(tl.float16)
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(rows[:, None] < M) & (cols[None, :] < N))


def matmul(a: np.ndarray, b: np.ndarray, block_m: int = 64, block_n: int = 64, block_k: int = 32,
           group_m: int = 8, backend: str | None = None) -> np.ndarray:
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    c = np.empty((m, n), dtype=np.float16)
    grid = (tiles.cdiv(m, block_m) * tiles.cdiv(n, block_n),)
    elems = [s // a.itemsize for s in (*a.strides, *b.strides)] + [s // c.itemsize for s in c.strides]
    matmul_kernel[grid](a, b, c, m, n, k, *elems, BLOCK_M=block_m, BLOCK_N=block_n,
                        BLOCK_K=block_k, GROUP_M=group_m, backend=backend)
    return c


def main(m: int = 200, n: int = 136, k: int = 90, backend: str | None = None) -> None:
    rng = np.random.default_rng()
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    got = matmul(a, b, backend=backend)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)
    print(f"matmul {m}x{k} @ {k}x{n}: ok")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--m", type=int, default=200)
    parser.add_argument("--n", type=int, default=136)
    parser.add_argument("--k", type=int, default=90)
    add_backend_argument(parser)
    args = parser.parse_args()
    main(args.m, args.n, args.k, backend=chosen(args.backend))
    print(describe(args.backend))
