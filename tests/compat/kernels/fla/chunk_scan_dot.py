"""flash-linear-attention style chunked cumsum of a [T, S] slab through ``tl.dot`` with a
lower-triangular mask, a [BS] carry between chunks, 2-D block pointers with ``boundary_check=(0, 1)``,
``tl.range`` with ``num_stages``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def chunk_cumsum_fwd_kernel(s, z, s_s_h, s_s_t, s_s_d, T, S: tl.constexpr, BT: tl.constexpr, BS: tl.constexpr):
    i_s, i_bh = tl.program_id(0), tl.program_id(1)
    o_i = tl.arange(0, BT)
    m_s = tl.where(o_i[:, None] >= o_i[None, :], 1.0, 0.0)
    b_z = tl.zeros([BS], dtype=tl.float32)
    for i_t in tl.range(tl.cdiv(T, BT), num_stages=2):
        p_s = tl.make_block_ptr(s + i_bh * s_s_h, (T, S), (s_s_t, s_s_d), (i_t * BT, i_s * BS), (BT, BS), (1, 0))
        p_z = tl.make_block_ptr(z + i_bh * s_s_h, (T, S), (s_s_t, s_s_d), (i_t * BT, i_s * BS), (BT, BS), (1, 0))
        b_s = tl.load(p_s, boundary_check=(0, 1)).to(tl.float32)
        b_c = b_z[None, :] + tl.dot(m_s, b_s, allow_tf32=False)
        tl.store(p_z, b_c.to(p_z.dtype.element_ty), boundary_check=(0, 1))
        b_z += tl.sum(b_s, 0)


def check(rng):
    BH, T, S, BT, BS = 3, 40, 24, 16, 16
    s = rng.standard_normal((BH, T, S)).astype(np.float32)
    z = np.empty_like(s)
    chunk_cumsum_fwd_kernel[(tiles.cdiv(S, BS), BH)](s, z, T * S, S, 1, T, S=S, BT=BT, BS=BS)
    close(z, np.cumsum(s.astype(np.float64), 1), rtol=1e-4, atol=1e-4)
