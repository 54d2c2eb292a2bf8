"""flash-linear-attention style global cumsum over chunks: a scalar carry ``tl.zeros([])`` broadcast
with ``b_z[None]``, variable-length sequences through an optional offsets tensor selected by a
heuristic on ``None``, and a loop over ``tl.cdiv(T, BT)`` chunks."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.heuristics({"USE_OFFSETS": lambda args: args["offsets"] is not None})
@tiles.jit
def chunk_global_cumsum_scalar_kernel(s, o, offsets, T, H: tl.constexpr, BT: tl.constexpr,
                                      USE_OFFSETS: tl.constexpr):
    i_bh = tl.program_id(0)
    i_b, i_h = i_bh // H, i_bh % H
    if USE_OFFSETS:
        bos, eos = tl.load(offsets + i_b).to(tl.int32), tl.load(offsets + i_b + 1).to(tl.int32)
    else:
        bos, eos = i_b * T, i_b * T + T
    T = eos - bos
    b_z = tl.zeros([], dtype=tl.float32)
    for i_t in range(tl.cdiv(T, BT)):
        p_s = tl.make_block_ptr(s + bos * H + i_h, (T,), (H,), (i_t * BT,), (BT,), (0,))
        p_o = tl.make_block_ptr(o + bos * H + i_h, (T,), (H,), (i_t * BT,), (BT,), (0,))
        b_s = tl.load(p_s, boundary_check=(0,)).to(tl.float32)
        b_o = tl.cumsum(b_s, axis=0) + b_z[None]
        b_z += tl.sum(b_s, axis=0)
        tl.store(p_o, b_o.to(p_o.dtype.element_ty), boundary_check=(0,))


def check(rng):
    B, T, H, BT = 2, 37, 2, 16
    g = rng.standard_normal((B, T, H)).astype(np.float32)
    out = np.empty_like(g)
    chunk_global_cumsum_scalar_kernel[(B * H,)](g, out, None, T, H=H, BT=BT)
    close(out, np.cumsum(g.astype(np.float64), 1), rtol=1e-5, atol=1e-5)
    flat = rng.standard_normal((1, 50, H)).astype(np.float32)
    offsets = np.array([0, 13, 50], np.int64)
    out = np.empty_like(flat)
    chunk_global_cumsum_scalar_kernel[(2 * H,)](flat, out, offsets, 50, H=H, BT=BT)
    ref = np.concatenate([np.cumsum(flat[:, a:b].astype(np.float64), 1) for a, b in [(0, 13), (13, 50)]], 1)
    close(out, ref, rtol=1e-5, atol=1e-5)
