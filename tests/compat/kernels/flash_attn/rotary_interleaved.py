"""flash-attn style rotary embedding kernel: GPT-J *interleaved* pairs taken apart with
``tl.split(tl.reshape(x, [BLOCK_M, BLOCK_K // 2, 2]))`` and put back with ``tl.join`` + reshape,
GPT-NeoX halves otherwise; ``seqlen_offsets`` either an int or a per-batch tensor
(``IS_SEQLEN_OFFSETS_TENSOR`` decided by heuristics from ``isinstance``), ``CONJUGATE`` for the
backward, a partial ``rotary_dim`` with the rest of the head copied, and a 3-D grid."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.heuristics({"IS_SEQLEN_OFFSETS_TENSOR": lambda args: not isinstance(args["seqlen_offsets"], int)})
@tiles.jit
def _rotary(OUT, X, COS, SIN, seqlen_offsets, seqlen, rotary_dim, seqlen_ro,
            stride_out_b, stride_out_s, stride_out_h, stride_x_b, stride_x_s, stride_x_h,
            HEADDIM: tl.constexpr, BLOCK_K: tl.constexpr, IS_SEQLEN_OFFSETS_TENSOR: tl.constexpr,
            INTERLEAVED: tl.constexpr, CONJUGATE: tl.constexpr, BLOCK_M: tl.constexpr):
    pid_m = tl.program_id(axis=0)
    pid_head = tl.program_id(axis=1)
    pid_batch = tl.program_id(axis=2)
    X = X + pid_batch * stride_x_b + pid_head * stride_x_h
    OUT = OUT + pid_batch * stride_out_b + pid_head * stride_out_h
    if pid_m * BLOCK_M >= seqlen:
        return
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    if not IS_SEQLEN_OFFSETS_TENSOR:
        rm_cs = rm + seqlen_offsets
    else:
        rm_cs = rm + tl.load(seqlen_offsets + pid_batch)
    rotary_half = rotary_dim // 2
    rows_ok = rm[:, None] < seqlen
    cs_ok = rm_cs[:, None] < seqlen_ro
    if not INTERLEAVED:
        rk_half = tl.arange(0, BLOCK_K // 2)
        half_ok = rk_half[None, :] < rotary_half
        cos = tl.load(COS + rm_cs[:, None] * rotary_half + rk_half[None, :], mask=cs_ok & half_ok, other=1.0)
        sin = tl.load(SIN + rm_cs[:, None] * rotary_half + rk_half[None, :], mask=cs_ok & half_ok, other=0.0)
        if CONJUGATE:
            sin = -sin
        x_ptrs = X + rm[:, None] * stride_x_s + rk_half[None, :]
        x0 = tl.load(x_ptrs, mask=rows_ok & half_ok, other=0.0).to(tl.float32)
        x1 = tl.load(x_ptrs + rotary_half, mask=rows_ok & half_ok, other=0.0).to(tl.float32)
        out_ptrs = OUT + rm[:, None] * stride_out_s + rk_half[None, :]
        tl.store(out_ptrs, x0 * cos - x1 * sin, mask=rows_ok & half_ok)
        tl.store(out_ptrs + rotary_half, x0 * sin + x1 * cos, mask=rows_ok & half_ok)
    else:
        rk = tl.arange(0, BLOCK_K)
        rk_pair = rk // 2
        pair_ok = rk[None, :] < rotary_dim
        cos = tl.load(COS + rm_cs[:, None] * rotary_half + rk_pair[None, :], mask=cs_ok & pair_ok, other=1.0)
        sin = tl.load(SIN + rm_cs[:, None] * rotary_half + rk_pair[None, :], mask=cs_ok & pair_ok, other=0.0)
        if CONJUGATE:
            sin = -sin
        x = tl.load(X + rm[:, None] * stride_x_s + rk[None, :], mask=rows_ok & pair_ok, other=0.0).to(tl.float32)
        x0, x1 = tl.split(tl.reshape(x, [BLOCK_M, BLOCK_K // 2, 2]))
        c0, _ = tl.split(tl.reshape(cos, [BLOCK_M, BLOCK_K // 2, 2]))
        s0, _ = tl.split(tl.reshape(sin, [BLOCK_M, BLOCK_K // 2, 2]))
        out = tl.reshape(tl.join(x0 * c0 - x1 * s0, x0 * s0 + x1 * c0), [BLOCK_M, BLOCK_K])
        tl.store(OUT + rm[:, None] * stride_out_s + rk[None, :], out, mask=rows_ok & pair_ok)
    rest = rotary_dim + tl.arange(0, BLOCK_K)
    rest_ok = rows_ok & (rest[None, :] < HEADDIM)
    tail = tl.load(X + rm[:, None] * stride_x_s + rest[None, :], mask=rest_ok, other=0.0)
    tl.store(OUT + rm[:, None] * stride_out_s + rest[None, :], tail, mask=rest_ok)


def _reference(x, cos, sin, offsets, rotary_dim, interleaved, conjugate):
    out = x.astype(np.float64).copy()
    seqlen = x.shape[1]
    for b in range(x.shape[0]):
        pos = np.arange(seqlen) + offsets[b]
        c, s = cos[pos][:, None, :], sin[pos][:, None, :]
        s = -s if conjugate else s
        if interleaved:
            x0, x1 = x[b, :, :, 0:rotary_dim:2], x[b, :, :, 1:rotary_dim:2]
            out[b, :, :, 0:rotary_dim:2] = x0 * c - x1 * s
            out[b, :, :, 1:rotary_dim:2] = x0 * s + x1 * c
        else:
            h = rotary_dim // 2
            x0, x1 = x[b, :, :, :h], x[b, :, :, h:rotary_dim]
            out[b, :, :, :h] = x0 * c - x1 * s
            out[b, :, :, h:rotary_dim] = x0 * s + x1 * c
    return out


def check(rng):
    batch, seqlen, heads, headdim, rotary_dim, seqlen_ro = 2, 11, 3, 24, 16, 20
    x = rng.standard_normal((batch, seqlen, heads, headdim)).astype(np.float32)
    theta = rng.uniform(0, 6.3, (seqlen_ro, rotary_dim // 2))
    cos, sin = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
    cases = ((3, False, False), (np.array([0, 9], np.int32), True, False), (np.array([5, 1], np.int32), True, True))
    for offsets, interleaved, conjugate in cases:
        out = np.full_like(x, np.nan)
        grid = (tiles.cdiv(seqlen, 8), heads, batch)
        _rotary[grid](out, x, cos, sin, offsets, seqlen, rotary_dim, seqlen_ro,
                      stride(out, 0), stride(out, 1), stride(out, 2), stride(x, 0), stride(x, 1), stride(x, 2),
                      HEADDIM=headdim, BLOCK_K=32, INTERLEAVED=interleaved, CONJUGATE=conjugate, BLOCK_M=8)
        per_batch = np.broadcast_to(np.asarray(offsets), (batch,))
        close(out, _reference(x, cos, sin, per_batch, rotary_dim, interleaved, conjugate), rtol=1e-5, atol=1e-5)
