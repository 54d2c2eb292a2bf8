"""FlagGems style softmax along a non-last dimension: the input seen as [M, N, K], softmax over N,
one program per (m, block of k).  An online pass keeps a running max and rescaled sum per column
of a [TILE_N, TILE_K] tile, a second pass writes; a heuristic picks a one-tile path (whole N in a
tile, ``tl.max``/``tl.sum`` along axis 0) when N fits.  fp16 in, fp32 math, -inf entries kept."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.heuristics({"ONE_TILE": lambda args: args["N"] <= args["TILE_N"]})
@tiles.jit
def _softmax_mid(out_ptr, in_ptr, M, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr, ONE_TILE: tl.constexpr):
    pid_k = tl.program_id(1)
    pid_m = tl.program_id(0)
    k_offs = pid_k * TILE_K + tl.arange(0, TILE_K)
    base = pid_m * N * K
    if ONE_TILE:
        n_offs = tl.arange(0, TILE_N)
        offs = base + n_offs[:, None] * K + k_offs[None, :]
        mask = (n_offs[:, None] < N) & (k_offs[None, :] < K)
        x = tl.load(in_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, axis=0)[None, :])
        y = e / tl.sum(e, axis=0)[None, :]
        tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        m = tl.full([TILE_N, TILE_K], value=float("-inf"), dtype=tl.float32)
        z = tl.full([TILE_N, TILE_K], value=0.0, dtype=tl.float32)
        for start_n in range(0, N, TILE_N):
            n_offs = start_n + tl.arange(0, TILE_N)
            offs = base + n_offs[:, None] * K + k_offs[None, :]
            mask = (n_offs[:, None] < N) & (k_offs[None, :] < K)
            x = tl.load(in_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            scale = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
            z = z * scale + tl.where(m_new == float("-inf"), 0.0, tl.exp(x - m_new))
            m = m_new
        m_col = tl.max(m, axis=0)
        z_col = tl.sum(z * tl.exp(m - m_col[None, :]), axis=0)
        for start_n in range(0, N, TILE_N):
            n_offs = start_n + tl.arange(0, TILE_N)
            offs = base + n_offs[:, None] * K + k_offs[None, :]
            mask = (n_offs[:, None] < N) & (k_offs[None, :] < K)
            x = tl.load(in_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
            y = tl.exp(x - m_col[None, :]) / z_col[None, :]
            tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


def _softmax(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def check(rng):
    for M, N, K, tile_n in ((3, 50, 7, 16), (2, 11, 9, 16)):
        x = (rng.standard_normal((M, N, K)) * 3).astype(np.float16)
        x[0, 5, 1] = -np.inf
        x[1, 2:4, 2] = np.float16(60000)
        out = np.empty_like(x)
        _softmax_mid[(M, tiles.cdiv(K, 4))](out, x, M, N, K, TILE_N=tile_n, TILE_K=4)
        close(out, _softmax(x, 1).astype(np.float16), rtol=2e-3, atol=1e-3)
