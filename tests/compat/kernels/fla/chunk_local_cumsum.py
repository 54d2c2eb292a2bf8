"""flash-linear-attention style chunk-local cumsum of scalar gates laid out [B, T, H]: block
pointers with a head stride, ``boundary_check``, ``p_o.dtype.element_ty``, reverse as a constexpr,
autotuned over num_warps with ``T`` left unspecialized."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.autotune(configs=[tiles.Config({}, num_warps=num_warps) for num_warps in [1, 4]], key=["B", "H", "BT"])
@tiles.jit(do_not_specialize=["T"])
def chunk_local_cumsum_scalar_kernel(s, o, T, B: tl.constexpr, H: tl.constexpr, BT: tl.constexpr,
                                     REVERSE: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    bos = i_b * T
    p_s = tl.make_block_ptr(s + bos * H + i_h, (T,), (H,), (i_t * BT,), (BT,), (0,))
    p_o = tl.make_block_ptr(o + bos * H + i_h, (T,), (H,), (i_t * BT,), (BT,), (0,))
    b_s = tl.load(p_s, boundary_check=(0,)).to(tl.float32)
    b_o = tl.cumsum(b_s, axis=0)
    if REVERSE:
        b_z = tl.sum(b_s, axis=0)
        b_o = -b_o + b_z[None] + b_s
    tl.store(p_o, b_o.to(p_o.dtype.element_ty), boundary_check=(0,))


def check(rng):
    B, T, H, BT = 2, 45, 3, 16
    g = rng.standard_normal((B, T, H)).astype(np.float32)
    NT = tiles.cdiv(T, BT)
    for reverse in (True,):
        out = np.empty_like(g)
        chunk_local_cumsum_scalar_kernel[(NT, B * H)](g, out, T, B=B, H=H, BT=BT, REVERSE=reverse)
        ref = np.empty_like(g, dtype=np.float64)
        for start in range(0, T, BT):
            chunk = g[:, start:start + BT].astype(np.float64)
            ref[:, start:start + BT] = np.flip(np.cumsum(np.flip(chunk, 1), 1), 1) if reverse else np.cumsum(chunk, 1)
        close(out, ref, rtol=1e-5, atol=1e-5)
