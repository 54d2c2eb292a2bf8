"""OpenAI triton_kernels style routing compaction: each row's top-k expert slots are kept where a
packed int32 bitmask has the expert's bit (``(word >> (idx % 32)) & 1`` gathered with
``idx // 32``), the kept ones moved to the front in order by an exclusive ``tl.cumsum`` and the
dropped ones written back to front (a computed permutation as store offsets) with a scalar
sentinel from ``tl.where``.  The padded width comes from a ``@triton.constexpr_function`` called
on a constexpr and on the pointer's dtype; the per-row counts are assembled with ``tl.cat`` of
two tiles, ``tl.expand_dims`` and ``tl.ravel``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.constexpr_function
def padded_k(k, dtype):
    width = 1 << (k - 1).bit_length()
    return max(width, 32 // dtype.primitive_bitwidth)


@tiles.jit
def _masked_compaction(Yv, Yi, BitMask, stride_bm, stride_bn, RetYv, RetYi, Counts, sentinel, K: tl.constexpr):
    KP: tl.constexpr = padded_k(K, Yi.dtype.element_ty)
    pid_m = tl.program_id(0)
    offs = tl.arange(0, KP)
    in_k = offs < K
    yv = tl.load(Yv + pid_m * K + offs, mask=in_k, other=0.0)
    yi = tl.load(Yi + pid_m * K + offs, mask=in_k, other=0)
    word = tl.load(BitMask + pid_m * stride_bm + (yi // 32) * stride_bn, mask=in_k, other=0)
    active_bits = ((word >> (yi % 32)) & 1) * in_k.to(tl.int32)
    exc_cumsum = tl.cumsum(active_bits, 0) - active_bits
    active = active_bits.to(tl.int1)
    dropped_before = offs - exc_cumsum
    n_active = tl.sum(active_bits, 0)
    write_indx = tl.where(active, exc_cumsum, K - 1 - dropped_before)
    tl.store(RetYv + pid_m * K + write_indx, tl.where(active, yv, sentinel), mask=in_k)
    tl.store(RetYi + pid_m * K + write_indx, tl.where(active, yi, sentinel), mask=in_k)
    counts = tl.cat(tl.full([1], 0, tl.int32) + n_active, tl.full([1], K, tl.int32) - n_active)
    pair = tl.expand_dims(counts, 0)
    tl.store(Counts + pid_m * 2 + tl.arange(0, 2), tl.ravel(pair))


def check(rng):
    n_rows, n_experts, k = 23, 70, 6
    words = -(-n_experts // 32)
    yi = np.stack([rng.choice(n_experts, k, replace=False) for _ in range(n_rows)]).astype(np.int32)
    yi[0, 0] = 31  # bit 31: a negative mask word
    yv = rng.standard_normal((n_rows, k)).astype(np.float32)
    keep = rng.random((n_rows, words * 32)) < 0.5
    keep[0, 31] = True
    keep[1] = False  # a row that keeps nothing
    keep[2] = True  # and one that keeps everything
    bitmask = (keep.reshape(n_rows, words, 32).astype(np.uint64) << np.arange(32, dtype=np.uint64)).sum(-1)
    bitmask = bitmask.astype(np.uint32).view(np.int32)
    bitmask_t = np.ascontiguousarray(bitmask.T)  # column-major: strides given explicitly
    ret_v = np.full_like(yv, 99.0)
    ret_i = np.full_like(yi, 99)
    counts = np.full((n_rows, 2), -1, np.int32)
    _masked_compaction[(n_rows,)](yv, yi, bitmask_t, 1, n_rows, ret_v, ret_i, counts, -1, K=k)
    exp_v, exp_i = np.empty_like(yv), np.empty_like(yi)
    for r in range(n_rows):
        on = keep[r, yi[r]]
        exp_v[r] = np.concatenate([yv[r][on], np.full((~on).sum(), -1.0, np.float32)])
        exp_i[r] = np.concatenate([yi[r][on], np.full((~on).sum(), -1, np.int32)])
    close(ret_v, exp_v, rtol=0, atol=0)
    close(ret_i, exp_i)
    n_on = keep[np.arange(n_rows)[:, None], yi].sum(1)
    close(counts, np.stack([n_on, k - n_on], 1).astype(np.int32))
