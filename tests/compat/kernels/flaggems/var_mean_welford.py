"""FlagGems style var_mean: Welford partials per block, merged with ``tl.reduce`` over a tuple of
(mean, m2, count) and a combine function; correction as an argument."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def welford_func(mean_x, count_x, M_x, mean_y, count_y, M_y):
    count = count_x + count_y
    _count = tl.maximum(count, 1)
    mc_x = mean_x * count_x
    mc_y = mean_y * count_y
    mean = (mc_x + mc_y) / _count
    M = M_x + mc_x * mean_x + M_y + mc_y * mean_y - count * mean * mean
    return mean, count, M


@tiles.jit(do_not_specialize=["correction"])
def var_mean_welford_kernel(X, Var, Mean, M, N, correction, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    X = X + pid * N
    Var = Var + pid
    Mean = Mean + pid
    row_mask = pid < M
    _mean = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    _acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    _count = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.int32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)[None, :]
        col_mask = cols < N
        mask = row_mask and col_mask
        x = tl.load(X + cols, mask, other=0.0).to(tl.float32)
        count = _count + mask
        cnt = tl.maximum(count, 1)
        cur_mean = (_mean * _count + x) / cnt
        _acc += (x - cur_mean) * (x - _mean) * mask
        _mean = cur_mean
        _count = count
    mean, _, acc = tl.reduce((_mean, _count, _acc), axis=1, combine_fn=welford_func)
    var = acc / (N - correction)
    mean = mean[:, None]
    var = var[:, None]
    tl.store(Mean, mean, row_mask)
    tl.store(Var, var, row_mask)


def check(rng):
    M, N = 10, 203
    x = (rng.standard_normal((M, N)) * 5 + 3).astype(np.float32)
    var = np.empty(M, np.float32)
    mean = np.empty(M, np.float32)
    var_mean_welford_kernel[(tiles.cdiv(M, 4),)](x, var, mean, M, N, 1, BLOCK_M=4, BLOCK_N=32)
    close(mean, x.astype(np.float64).mean(1), rtol=1e-5, atol=1e-5)
    close(var, x.astype(np.float64).var(1, ddof=1), rtol=1e-4, atol=1e-4)
