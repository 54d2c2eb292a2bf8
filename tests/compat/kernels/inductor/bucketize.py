"""PyTorch Inductor's ``torch.bucketize``/``searchsorted`` lowering (``triton_poi_fused_bucketize_0``):
a ``triton_helpers.bucketize_binary_search``-style helper running a ``while full_range > 1:`` loop
whose counter is a run-time scalar derived from an argument (``BOUNDARIES_SIZE + 1``, halved with
``(full_range + 1) // 2``) while tile-shaped ``low``/``high`` are carried through it; the loads'
mask joins two tile comparisons with Python ``and``; the index dtype arrives as a ``tl.int64``/
``tl.int32`` *argument* used in ``tl.zeros(values.shape, dtype=indexing_dtype)`` and
``tl.full(..., dtype=indexing_dtype)``; ``right`` is a constexpr picking ``>=`` or ``>``; an optional
sorter (argsort of unsorted boundaries, ``sorter_ptr is not None``) is read through an extra
indirection.  The pointwise kernel is 1-D (``xindex = xoffset + tl.arange(0, XBLOCK)[:]``), and
NaN/inf inputs land where torch puts them."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def bucketize_binary_search(values, boundaries_ptr, BOUNDARIES_SIZE, BOUNDARIES_UNDERLYING_NUMEL,
                            BOUNDARIES_STRIDE, boundary_indices, indexing_dtype, right: tl.constexpr,
                            sorter_ptr, SORTER_STRIDE, sorter_indices):
    low = tl.zeros(values.shape, dtype=indexing_dtype)
    high = tl.full(values.shape, BOUNDARIES_SIZE, dtype=indexing_dtype)
    full_range = BOUNDARIES_SIZE + 1
    while full_range > 1:
        mid = (high + low) // 2
        mask = (mid * BOUNDARIES_STRIDE + boundary_indices) < BOUNDARIES_UNDERLYING_NUMEL and mid < BOUNDARIES_SIZE
        mid_indices = mid if sorter_ptr is None or SORTER_STRIDE is None else tl.load(
            sorter_ptr + sorter_indices + SORTER_STRIDE * mid, mask=mask, other=0)
        bucket_upper_bound = tl.load(boundaries_ptr + boundary_indices + BOUNDARIES_STRIDE * mid_indices,
                                     mask=mask, other=0.0)
        if right:
            is_above = values >= bucket_upper_bound
        else:
            is_above = values > bucket_upper_bound
        low = tl.where(is_above & mask, mid + 1, low)
        high = tl.where(is_above, high, mid)
        full_range = (full_range + 1) // 2
    return low


@tiles.jit
def triton_poi_fused_bucketize_0(in_ptr0, in_ptr1, in_ptr2, out_ptr0, ks0, xnumel, XBLOCK: tl.constexpr,
                                 RIGHT: tl.constexpr, INDEX_DTYPE: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask)
    tmp1 = bucketize_binary_search(tmp0, in_ptr1, ks0, ks0, 1, 0, INDEX_DTYPE, RIGHT, in_ptr2,
                                   1 if in_ptr2 is not None else None, 0)
    tl.store(out_ptr0 + (x0), tmp1, xmask)


def check(rng):
    n = 301
    bounds = np.sort(rng.uniform(-3, 3, 37)).astype(np.float32)
    bounds[5] = bounds[6]  # a repeated boundary
    values = rng.uniform(-4, 4, n).astype(np.float32)
    values[:6] = [bounds[0], bounds[6], bounds[-1], -np.inf, np.inf, np.nan]
    for right, dtype, npdt in ((False, tl.int64, np.int64), (True, tl.int32, np.int32)):
        out = np.full(n, -7, npdt)
        triton_poi_fused_bucketize_0[(tiles.cdiv(n, 128),)](values, bounds, None, out, len(bounds), n, XBLOCK=128,
                                                            RIGHT=right, INDEX_DTYPE=dtype)
        expected = np.searchsorted(bounds, values, side="right" if right else "left").astype(npdt)
        expected[5] = 0  # NaN compares false against every boundary: this search leaves it at 0
        close(out, expected)
    # unsorted boundaries read through a sorter
    raw = rng.permutation(bounds).astype(np.float32)
    sorter = np.argsort(raw, kind="stable").astype(np.int64)
    out = np.empty(n, np.int64)
    triton_poi_fused_bucketize_0[(tiles.cdiv(n, 128),)](values, raw, sorter, out, len(raw), n, XBLOCK=128,
                                                        RIGHT=False, INDEX_DTYPE=tl.int64)
    expected = np.searchsorted(raw, values, side="left", sorter=sorter)
    expected[5] = 0
    close(out, expected)
