"""flash-linear-attention style ``chunk_scaled_dot_kkt``: per chunk of BT steps, the strictly
lower-triangular ``A = beta * (K K^T) * exp(g_i - g_j)``, with K read twice through
``tl.make_block_ptr``: once row-major and once as its transpose (``order=(0, 1)``, shape and
strides swapped), accumulated over key blocks with ``tl.dot`` (``allow_tf32=False``, the old
spelling), ``boundary_check`` on both block pointers, the triangle from ``o_t[:, None] > o_t[None, :]``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.heuristics({"USE_G": lambda args: args["g"] is not None})
@tiles.jit(do_not_specialize=["T"])
def _kkt(k, beta, g, A, T, H: tl.constexpr, K: tl.constexpr, BT: tl.constexpr, BK: tl.constexpr,
         USE_G: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    bos = i_b * T
    o_t = i_t * BT + tl.arange(0, BT)
    t_ok = o_t < T
    b_beta = tl.load(beta + (bos + o_t) * H + i_h, mask=t_ok, other=0.0)
    b_A = tl.zeros([BT, BT], dtype=tl.float32)
    for i_k in range(tl.cdiv(K, BK)):
        p_k = tl.make_block_ptr(k + (bos * H + i_h) * K, (T, K), (H * K, 1), (i_t * BT, i_k * BK), (BT, BK), (1, 0))
        p_kt = tl.make_block_ptr(k + (bos * H + i_h) * K, (K, T), (1, H * K), (i_k * BK, i_t * BT), (BK, BT), (0, 1))
        b_k = tl.load(p_k, boundary_check=(0, 1))
        b_kt = tl.load(p_kt, boundary_check=(0, 1))
        b_A += tl.dot(b_k * b_beta[:, None], b_kt, allow_tf32=False)
    if USE_G:
        b_g = tl.load(g + (bos + o_t) * H + i_h, mask=t_ok, other=0.0)
        b_A *= tl.exp(b_g[:, None] - b_g[None, :])
    b_A = tl.where(o_t[:, None] > o_t[None, :], b_A, 0)
    p_A = tl.make_block_ptr(A + (bos * H + i_h) * BT, (T, BT), (H * BT, 1), (i_t * BT, 0), (BT, BT), (1, 0))
    tl.store(p_A, b_A.to(p_A.dtype.element_ty), boundary_check=(0, 1))


def check(rng):
    B, T, H, K, BT = 2, 37, 2, 40, 16
    k = rng.standard_normal((B, T, H, K)).astype(np.float32)
    beta = rng.uniform(0, 1, (B, T, H)).astype(np.float32)
    g = np.cumsum(-rng.uniform(0, 0.2, (B, T, H)), 1).astype(np.float32)
    NT = tiles.cdiv(T, BT)
    for gate in (g, None):
        A = np.full((B, T, H, BT), np.nan, np.float32)
        _kkt[(NT, B * H)](k, beta, gate, A, T, H=H, K=K, BT=BT, BK=32)
        expected = np.zeros((B, T, H, BT))
        for b in range(B):
            for h in range(H):
                for c in range(NT):
                    s, e = c * BT, min((c + 1) * BT, T)
                    kc = k[b, s:e, h].astype(np.float64)
                    blk = (kc * beta[b, s:e, h, None]) @ kc.T
                    if gate is not None:
                        blk *= np.exp(gate[b, s:e, h, None] - gate[b, None, s:e, h])
                    expected[b, s:e, h, : e - s] = np.tril(blk, -1)
        close(A, expected, rtol=1e-4, atol=1e-4)
