"""FlagGems style gather and scatter along dim 1 (torch.gather / torch.scatter / scatter_add with
atomics), one row block per program, int64 indices."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def gather_kernel(inp, index, out, N, K, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_K)[None, :]
    mask = cols < K
    idx = tl.load(index + rows * K + cols, mask=mask, other=0)
    vals = tl.load(inp + rows * N + idx, mask=mask)
    tl.store(out + rows * K + cols, vals, mask=mask)


@tiles.jit
def scatter_kernel(src, index, out, N, K, REDUCE_ADD: tl.constexpr, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_K)
    mask = cols < K
    idx = tl.load(index + row * K + cols, mask=mask, other=0)
    vals = tl.load(src + row * K + cols, mask=mask, other=0)
    if REDUCE_ADD:
        tl.atomic_add(out + row * N + idx, vals, mask=mask, sem="relaxed")
    else:
        tl.store(out + row * N + idx, vals, mask=mask)


def check(rng):
    M, N, K = 8, 50, 19
    x = rng.standard_normal((M, N)).astype(np.float32)
    index = rng.integers(0, N, (M, K)).astype(np.int64)
    out = np.empty((M, K), np.float32)
    gather_kernel[(M // 4,)](x, index, out, N, K, BLOCK_M=4, BLOCK_K=32)
    close(out, np.take_along_axis(x, index, 1), rtol=0, atol=0)
    src = rng.standard_normal((M, K)).astype(np.float32)
    unique = np.stack([rng.permutation(N)[:K] for _ in range(M)]).astype(np.int64)
    dst = x.copy()
    scatter_kernel[(M,)](src, unique, dst, N, K, REDUCE_ADD=False, BLOCK_K=32)
    ref = x.copy()
    np.put_along_axis(ref, unique, src, 1)
    close(dst, ref, rtol=0, atol=0)
    dst = x.copy()
    scatter_kernel[(M,)](src, index, dst, N, K, REDUCE_ADD=True, BLOCK_K=32)
    ref = x.astype(np.float64)
    for r in range(M):
        np.add.at(ref[r], index[r], src[r])
    close(dst, ref, rtol=1e-5, atol=1e-5)
