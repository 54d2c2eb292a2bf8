"""FlagGems style top-k of each row by repeated max-and-mask under ``tl.static_range``, with
``tl.topk`` on the same rows for the values."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def topk_kernel(x_ptr, val_ptr, idx_ptr, val2_ptr, N, K: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=float("-inf"))
    work = x
    for j in tl.static_range(K):
        best = tl.max(work, axis=0)
        where = tl.argmax(work, axis=0, tie_break_left=True)
        tl.store(val_ptr + row * K + j, best)
        tl.store(idx_ptr + row * K + j, where)
        work = tl.where(cols == where, float("-inf"), work)
    top = tl.topk(x, K)
    tl.store(val2_ptr + row * K + tl.arange(0, K), top)


def check(rng):
    M, N, K = 5, 100, 4
    x = rng.permutation(M * N).reshape(M, N).astype(np.float32) / 7
    vals = np.empty((M, K), np.float32)
    idx = np.empty((M, K), np.int32)
    vals2 = np.empty((M, K), np.float32)
    topk_kernel[(M,)](x, vals, idx, vals2, N, K=K, BLOCK_N=128)
    order = np.argsort(-x, 1)[:, :K]
    close(idx, order)
    close(vals, np.take_along_axis(x, order, 1), rtol=0, atol=0)
    close(vals2, np.take_along_axis(x, order, 1), rtol=0, atol=0)
