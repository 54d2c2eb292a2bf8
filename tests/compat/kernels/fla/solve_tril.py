"""flash-linear-attention style ``solve_tril``: ``(I + A)^-1`` of a strictly lower-triangular
matrix per chunk, for variable-length sequences.  A first kernel inverts the 16x16 diagonal
blocks by forward substitution (``for i in range(1, min(16, T - i_t * 16))``: the Python builtin
``min`` of a constexpr and a run-time value as a loop bound, a row replaced with
``tl.where(mask[:, None], row, tile)``, the identity added as a *boolean* tile
``b_A += o_i[:, None] == o_i[None, :]``); a second merges them into the 32x32 inverse with
nested ``tl.dot(..., input_precision='ieee')`` and stores bf16 through
``.to(ptr.dtype.element_ty, fp_downcast_rounding="rtne")``.  The varlen form reads (sequence,
chunk) pairs from a chunk-index table and the bounds from ``cu_seqlens`` (``USE_OFFSETS`` from
heuristics), with ``T`` reassigned inside the kernel; both kernels are autotuned over
``num_warps``/``num_stages`` with ``do_not_specialize=['T']``."""

import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl


@tiles.heuristics({"USE_OFFSETS": lambda args: args["offsets"] is not None})
@tiles.autotune(configs=[tiles.Config({}, num_warps=w, num_stages=s) for w in (1, 2) for s in (2, 3)],
                key=["BT"])
@tiles.jit(do_not_specialize=["T"])
def _diag_inverse_16(A, Ad, offsets, indices, T, H: tl.constexpr, BT: tl.constexpr, USE_OFFSETS: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    if USE_OFFSETS:
        i_n, i_t = tl.load(indices + i_t * 2).to(tl.int32), tl.load(indices + i_t * 2 + 1).to(tl.int32)
        bos, eos = tl.load(offsets + i_n).to(tl.int32), tl.load(offsets + i_n + 1).to(tl.int32)
        T = eos - bos
    else:
        bos, eos = i_b * T, i_b * T + T
    A = A + (bos * H + i_h) * BT
    Ad = Ad + (bos * H + i_h) * 16
    col0 = (i_t * 16) % BT
    p_A = tl.make_block_ptr(A, (T, BT), (H * BT, 1), (i_t * 16, col0), (16, 16), (1, 0))
    p_Ad = tl.make_block_ptr(Ad, (T, 16), (H * 16, 1), (i_t * 16, 0), (16, 16), (1, 0))
    b_A = tl.load(p_A, boundary_check=(0, 1))
    b_A = -tl.where(tl.arange(0, 16)[:, None] > tl.arange(0, 16)[None, :], b_A, 0)
    o_i = tl.arange(0, 16)
    for i in range(1, min(16, T - i_t * 16)):
        b_a = -tl.load(A + (i_t * 16 + i) * H * BT + col0 + o_i)
        b_a = b_a + tl.sum(b_a[:, None] * b_A, 0)
        b_A = tl.where((o_i == i)[:, None], b_a, b_A)
    b_A += o_i[:, None] == o_i[None, :]
    tl.store(p_Ad, b_A.to(p_Ad.dtype.element_ty, fp_downcast_rounding="rtne"), boundary_check=(0, 1))


@tiles.heuristics({"USE_OFFSETS": lambda args: args["offsets"] is not None})
@tiles.autotune(configs=[tiles.Config({}, num_warps=w) for w in (1, 2)], key=["H"])
@tiles.jit(do_not_specialize=["T"])
def _merge_inverse_32(A, Ad, Ai, offsets, indices, T, H: tl.constexpr, USE_OFFSETS: tl.constexpr):
    i_t, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    if USE_OFFSETS:
        i_n, i_t = tl.load(indices + i_t * 2).to(tl.int32), tl.load(indices + i_t * 2 + 1).to(tl.int32)
        bos, eos = tl.load(offsets + i_n).to(tl.int32), tl.load(offsets + i_n + 1).to(tl.int32)
        T = eos - bos
    else:
        bos, eos = i_b * T, i_b * T + T
    A += (bos * H + i_h) * 32
    Ad += (bos * H + i_h) * 16
    Ai += (bos * H + i_h) * 32
    p_d11 = tl.make_block_ptr(Ad, (T, 16), (16 * H, 1), (i_t * 32, 0), (16, 16), (1, 0))
    p_d22 = tl.make_block_ptr(Ad, (T, 16), (16 * H, 1), (i_t * 32 + 16, 0), (16, 16), (1, 0))
    p_a21 = tl.make_block_ptr(A, (T, 32), (32 * H, 1), (i_t * 32 + 16, 0), (16, 16), (1, 0))
    p_o11 = tl.make_block_ptr(Ai, (T, 32), (32 * H, 1), (i_t * 32, 0), (16, 16), (1, 0))
    p_o22 = tl.make_block_ptr(Ai, (T, 32), (32 * H, 1), (i_t * 32 + 16, 16), (16, 16), (1, 0))
    p_o21 = tl.make_block_ptr(Ai, (T, 32), (32 * H, 1), (i_t * 32 + 16, 0), (16, 16), (1, 0))
    d11 = tl.load(p_d11, boundary_check=(0, 1))
    d22 = tl.load(p_d22, boundary_check=(0, 1))
    a21 = tl.load(p_a21, boundary_check=(0, 1))
    o21 = -tl.dot(tl.dot(d22, a21, input_precision="ieee"), d11, input_precision="ieee")
    tl.store(p_o11, d11.to(p_o11.dtype.element_ty, fp_downcast_rounding="rtne"), boundary_check=(0, 1))
    tl.store(p_o22, d22.to(p_o22.dtype.element_ty, fp_downcast_rounding="rtne"), boundary_check=(0, 1))
    tl.store(p_o21, o21.to(p_o21.dtype.element_ty, fp_downcast_rounding="rtne"), boundary_check=(0, 1))


def _chunk_indices(cu_seqlens, size):
    pairs = [(n, i) for n in range(len(cu_seqlens) - 1)
             for i in range(tiles.cdiv(int(cu_seqlens[n + 1] - cu_seqlens[n]), size))]
    return np.array(pairs, np.int32).reshape(-1)


def check(rng):
    H, BT = 2, 32
    cu = np.array([0, 45, 52, 90], np.int64)
    T = int(cu[-1])
    # a small strictly-lower triangle per 32-chunk, as kkt * beta would give
    A = np.zeros((1, T, H, BT), np.float32)
    for n in range(len(cu) - 1):
        for s in range(int(cu[n]), int(cu[n + 1]), BT):
            e = min(s + BT, int(cu[n + 1]))
            for h in range(H):
                A[0, s:e, h, : e - s] = np.tril(rng.uniform(-0.3, 0.3, (e - s, e - s)), -1)
    idx16 = _chunk_indices(cu, 16)
    idx32 = _chunk_indices(cu, BT)
    Ad = np.full((1, T, H, 16), np.nan, np.float32)
    _diag_inverse_16[(len(idx16) // 2, H)](A, Ad, cu, idx16, T, H=H, BT=BT)
    Ai = np.zeros((1, T, H, BT), BF16)
    _merge_inverse_32[(len(idx32) // 2, H)](A, Ad, Ai, cu, idx32, T, H=H)
    expected = np.zeros((1, T, H, BT))
    expected_d = np.zeros((1, T, H, 16))
    for n in range(len(cu) - 1):
        for s in range(int(cu[n]), int(cu[n + 1]), BT):
            e = min(s + BT, int(cu[n + 1]))
            for h in range(H):
                blk = A[0, s:e, h, : e - s].astype(np.float64)
                expected[0, s:e, h, : e - s] = np.linalg.inv(np.eye(e - s) + blk)
                for s16 in range(s, e, 16):
                    e16 = min(s16 + 16, e)
                    sub = blk[s16 - s:e16 - s, s16 - s:e16 - s]
                    expected_d[0, s16:e16, h, : e16 - s16] = np.linalg.inv(np.eye(e16 - s16) + sub)
    close(Ad, expected_d, rtol=1e-5, atol=1e-5)
    close(Ai, expected, rtol=2e-2, atol=1e-2)
    # fixed-length batch (no offsets): B sequences of T each
    B, Tf = 2, 37
    Af = rng.uniform(-0.3, 0.3, (B, Tf, H, 16)).astype(np.float32)
    for r in range(Tf):
        Af[:, r, :, r % 16:] = 0
    Adf = np.full((B, Tf, H, 16), np.nan, np.float32)
    _diag_inverse_16[(tiles.cdiv(Tf, 16), B * H)](Af, Adf, None, None, Tf, H=H, BT=16)
    for b in range(B):
        for h in range(H):
            for c in range(0, Tf, 16):
                e = min(c + 16, Tf)
                inv = np.linalg.inv(np.eye(e - c) + Af[b, c:e, h, : e - c].astype(np.float64))
                close(Adf[b, c:e, h, : e - c], inv, rtol=1e-5, atol=1e-5)
                assert not np.isnan(Adf[b, c:e, h]).any()
