"""Fused attention in Triton's current tutorial form: device-side tensor descriptors
(``tl.make_tensor_descriptor``, ``desc.load([...])`` / ``desc.store``), a ``tl.range`` over key
blocks with ``warp_specialize=``, ``sm_scale * 1.44269504`` and exp2, an allocator set for
descriptors, and the output cast to ``Out.type.element_ty``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _attn_fwd_desc(Q, K, V, Out, sm_scale, Z, H, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    y_dim = Z * H * N_CTX
    desc_q = tl.make_tensor_descriptor(Q, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    offset_y = off_hz * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = desc_q.load([qo_offset_y, 0])
    for start_n in tl.range(0, N_CTX, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        k = desc_k.load([offset_y + start_n, 0]).T
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offset_y + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    desc_o.store([qo_offset_y, 0], acc.to(Out.type.element_ty))


def check(rng):
    tiles.set_allocator(lambda size, alignment, stream: np.empty(size, np.int8))
    Z, H, N_CTX, D = 1, 2, 32, 16
    q, k, v = (rng.standard_normal((Z, H, N_CTX, D)).astype(np.float16) for _ in range(3))
    o = np.empty_like(q)
    _attn_fwd_desc[(N_CTX // 16, Z * H)](q, k, v, o, 0.25, Z, H, N_CTX, HEAD_DIM=D, BLOCK_M=16, BLOCK_N=16,
                                         WARP_SPECIALIZE=False)
    qf, kf, vf = (t.astype(np.float32) for t in (q, k, v))
    s = qf @ kf.transpose(0, 1, 3, 2) * 0.25
    p = np.exp(s - s.max(-1, keepdims=True))
    close(o, (p / p.sum(-1, keepdims=True)) @ vf, rtol=2e-2, atol=2e-2)
