"""Unsloth style RoPE on Q in place: one program per (row, group of heads), ``ROPE_GROUP_SIZE`` as a
module-level int, a plain ``range`` loop over heads and a backward flag flipping the sine."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl

ROPE_GROUP_SIZE = tl.constexpr(4)


@tiles.heuristics({"BACKWARD_PASS": lambda args: bool(args["BACKWARD_PASS"])})
@tiles.jit
def _rope_embedding(Q, Q_row_stride, cos, cos_row_stride, sin, sin_row_stride, seqlen, head_dim: tl.constexpr,
                    n_heads: tl.constexpr, BACKWARD_PASS: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    row_position = tl.program_id(0)
    group_head_position = tl.program_id(1)
    col_offsets = tl.arange(0, BLOCK_SIZE)
    half_head_dim = head_dim // 2
    mask = col_offsets < half_head_dim
    sin1 = tl.load(sin + (row_position % seqlen) * sin_row_stride + half_head_dim * 0 + col_offsets, mask=mask, other=0)
    cos1 = tl.load(cos + (row_position % seqlen) * cos_row_stride + half_head_dim * 0 + col_offsets, mask=mask, other=0)
    if BACKWARD_PASS:
        sin1 = -sin1
    head_start = group_head_position * ROPE_GROUP_SIZE
    head_end = min((head_start + ROPE_GROUP_SIZE), n_heads)
    for k in range(head_start, head_end):
        offs_q1 = row_position * Q_row_stride + k * head_dim + col_offsets
        offs_q2 = row_position * Q_row_stride + k * head_dim + col_offsets + half_head_dim
        Q1 = tl.load(Q + offs_q1, mask=mask, other=0).to(sin1.dtype)
        Q2 = tl.load(Q + offs_q2, mask=mask, other=0).to(sin1.dtype)
        tl.store(Q + offs_q1, Q1 * cos1 - Q2 * sin1, mask=mask)
        tl.store(Q + offs_q2, Q2 * cos1 + Q1 * sin1, mask=mask)


def check(rng):
    batch, seq_len, n_heads, head_dim = 2, 7, 6, 20
    Q = rng.standard_normal((batch, seq_len, n_heads, head_dim)).astype(np.float32)
    theta = rng.uniform(0, 6.3, (seq_len, head_dim // 2)).astype(np.float32)
    cos, sin = np.cos(theta), np.sin(theta)
    q = Q.reshape(batch * seq_len, n_heads * head_dim).copy()
    n_groups = tiles.cdiv(n_heads, ROPE_GROUP_SIZE)
    _rope_embedding[(batch * seq_len, n_groups)](q, q.shape[1], cos, cos.shape[1], sin, sin.shape[1], seq_len,
                                                 head_dim=head_dim, n_heads=n_heads, BACKWARD_PASS=False,
                                                 BLOCK_SIZE=tiles.next_power_of_2(head_dim // 2))
    h = head_dim // 2
    x1, x2 = Q[..., :h], Q[..., h:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    ref = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)
    close(q.reshape(Q.shape), ref, rtol=1e-5, atol=1e-6)
