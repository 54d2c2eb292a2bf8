"""Triton tutorial 05 style: layer norm forward, one row per program, looping over column blocks."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


def check(rng):
    M, N = 13, 300
    x = (rng.standard_normal((M, N)) * 2 + 1).astype(np.float16)
    w = rng.standard_normal(N).astype(np.float16)
    b = rng.standard_normal(N).astype(np.float16)
    y = np.empty_like(x)
    mean = np.empty(M, np.float32)
    rstd = np.empty(M, np.float32)
    _layer_norm_fwd_fused[(M,)](x, y, w, b, mean, rstd, stride(x, 0), N, 1e-5, BLOCK_SIZE=128, num_warps=4)
    xf = x.astype(np.float32)
    mu = xf.mean(1)
    rs = 1 / np.sqrt(xf.var(1) + 1e-5)
    close(mean, mu, rtol=1e-5, atol=1e-5)
    close(rstd, rs, rtol=1e-4)
    ref = (xf - mu[:, None]) * rs[:, None] * w.astype(np.float32) + b.astype(np.float32)
    close(y, ref, rtol=1e-2, atol=1e-2)
