"""flash-linear-attention style ``pack_sequence`` / ``unpack_sequence`` (padded [B, S, D] <-> packed
varlen [T, D], left or right padding): the program id is unflattened by a ``@jit`` helper called
with keyword arguments (``unflatten_program_id(X=..., Y=...)``, ``pid //= X`` on the program id)
returning a 3-tuple; the padding side is a *string* constexpr, and inside each constexpr branch a
run-time ``if`` returns early (``if i_s < NP: return``) before a variable the rest of the kernel
uses is assigned -- so the early return's continuation spans the enclosing constexpr ``if``.  A
second kernel maps each padded position to its source row through a helper with a value-returning
early exit on a run-time condition (``if i_s >= T: return -1`` then ``return (bos + i_s).to(tl.int32)``),
picking rows with ``tl.where(row >= 0, ...)``.  Bounds come from ``cu_seqlens`` as int64."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def unflatten_program_id(X, Y):
    pid = tl.program_id(0)
    i_x = pid % X
    pid //= X
    i_y = pid % Y
    i_z = pid // Y
    return i_x, i_y, i_z


@tiles.autotune(configs=[tiles.Config({}, num_warps=w) for w in (1, 2)], key=["D", "PADDING_SIDE", "PACK"])
@tiles.jit
def packunpack_sequence_kernel(x, y, cu_seqlens, S, D, BD: tl.constexpr, PADDING_SIDE: tl.constexpr,
                               PACK: tl.constexpr):
    i_d, i_s, i_b = unflatten_program_id(X=tl.cdiv(D, BD), Y=S)
    bos, eos = tl.load(cu_seqlens + i_b).to(tl.int64), tl.load(cu_seqlens + i_b + 1).to(tl.int64)
    T = eos - bos
    if PADDING_SIDE == "left":
        NP = S - T
        if i_s < NP:
            return
        i_t = bos + (i_s - NP)
    else:
        if i_s >= T:
            return
        i_t = bos + i_s
    o_d = i_d * BD + tl.arange(0, BD)
    mask = o_d < D
    if PACK:
        b_x = tl.load(x + (i_b * S + i_s) * D + o_d, mask=mask)
        tl.store(y + i_t * D + o_d, b_x, mask=mask)
    else:
        b_x = tl.load(x + i_t * D + o_d, mask=mask)
        tl.store(y + (i_b * S + i_s) * D + o_d, b_x, mask=mask)


@tiles.jit
def _source_row(i_s, bos, T):
    if i_s >= T:
        return -1
    return (bos + i_s).to(tl.int32)  # both returns int32: Triton requires one return type


@tiles.jit
def gather_rows_kernel(x, y, cu_seqlens, S, D, BD: tl.constexpr):
    i_s, i_b = tl.program_id(0), tl.program_id(1)
    bos, eos = tl.load(cu_seqlens + i_b).to(tl.int64), tl.load(cu_seqlens + i_b + 1).to(tl.int64)
    row = _source_row(i_s, bos, eos - bos)
    o_d = tl.arange(0, BD)
    mask = (o_d < D) & (row >= 0)
    b_x = tl.load(x + tl.where(row >= 0, row, 0) * D + o_d, mask=mask, other=-1.0)
    tl.store(y + (i_b * S + i_s) * D + o_d, b_x, mask=o_d < D)


def check(rng):
    lens = np.array([5, 1, 9, 0, 6])
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    B, S, D, BD = len(lens), int(lens.max()), 40, 16
    T = int(cu[-1])
    packed = rng.standard_normal((T, D)).astype(np.float32)
    for side in ("left", "right"):
        padded = np.zeros((B, S, D), np.float32)
        packunpack_sequence_kernel[(tiles.cdiv(D, BD) * S * B,)](packed, padded, cu, S, D, BD=BD, PADDING_SIDE=side,
                                                                 PACK=False)
        expected = np.zeros((B, S, D), np.float32)
        for b in range(B):
            rows = packed[cu[b]:cu[b + 1]]
            if side == "left":
                expected[b, S - lens[b]:] = rows
            else:
                expected[b, : lens[b]] = rows
        close(padded, expected, rtol=0, atol=0)
        repacked = np.full((T, D), np.nan, np.float32)
        packunpack_sequence_kernel[(tiles.cdiv(D, BD) * S * B,)](padded, repacked, cu, S, D, BD=BD,
                                                                 PADDING_SIDE=side, PACK=True)
        close(repacked, packed, rtol=0, atol=0)
    out = np.zeros((B, S, D), np.float32)
    gather_rows_kernel[(S, B)](packed, out, cu, S, D, BD=64)
    expected = np.full((B, S, D), -1.0, np.float32)
    for b in range(B):
        expected[b, : lens[b]] = packed[cu[b]:cu[b + 1]]
    close(out, expected, rtol=0, atol=0)
