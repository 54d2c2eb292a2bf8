"""PyTorch Inductor pointwise kernels: ``triton_poi_fused_cat_0`` builds ``torch.cat`` along the last
dim from per-segment masked loads selected with chained ``tl.where``, the segment bounds written
as ``tl.full([1], c, tl.int64)`` one-element tiles (broadcast against ``[XBLOCK]`` int32 indices,
so comparisons promote to int64) and one segment computed (``tmp * 2.0`` through
``tl.broadcast_to``) rather than loaded; ``triton_poi_fused_clone_1`` is a tiled 2-D transpose-copy
with ``yoffset = (tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)) * YBLOCK`` (the grid's y
folded into z), ``yindex[None, :]``/``xindex[:, None]``, ``y0 = yindex % ks0; y1 = yindex // ks0``
over symbolic sizes ``ks0``/``ks1`` and loads with ``xmask & ymask`` and ``evict_last``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def triton_poi_fused_cat_0(in_ptr0, in_ptr1, in_ptr2, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex % 9
    x1 = xindex // 9
    tmp0 = x0
    tmp1 = tl.full([1], 0, tl.int64)
    tmp2 = tmp0 >= tmp1
    tmp3 = tl.full([1], 3, tl.int64)
    tmp4 = tmp0 < tmp3
    tmp5 = tl.load(in_ptr0 + (3 * x1 + (x0)), tmp4 & xmask, eviction_policy="evict_last", other=0.0)
    tmp6 = tmp0 >= tmp3
    tmp7 = tl.full([1], 7, tl.int64)
    tmp8 = tmp0 < tmp7
    tmp9 = tmp6 & tmp8
    tmp10 = tl.load(in_ptr1 + (4 * x1 + ((-3) + x0)), tmp9 & xmask, eviction_policy="evict_last", other=0.0)
    tmp11 = tmp0 >= tmp7
    tmp12 = tl.full([1], 9, tl.int64)
    tmp13 = tmp0 < tmp12
    tmp14 = tl.load(in_ptr2 + (2 * x1 + ((-7) + x0)), tmp11 & xmask, eviction_policy="evict_last", other=0.0)
    tmp15 = 2.0
    tmp16 = tl.broadcast_to(tmp14 * tmp15, [XBLOCK])
    tmp17 = tl.full(tmp16.shape, 0.0, tmp16.dtype)
    tmp18 = tl.where(tmp11 & tmp13, tmp16, tmp17)
    tmp19 = tl.where(tmp9, tmp10, tmp18)
    tmp20 = tl.where(tmp4 & tmp2, tmp5, tmp19)
    tl.store(out_ptr0 + (xindex), tmp20, xmask)


@tiles.jit
def triton_poi_fused_clone_1(in_ptr0, out_ptr0, ks0, ks1, ynumel, xnumel, YBLOCK: tl.constexpr,
                             XBLOCK: tl.constexpr):
    yoffset = (tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[None, :]
    ymask = yindex < ynumel
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    x2 = xindex
    y0 = yindex % ks0
    y1 = yindex // ks0
    y3 = yindex
    tmp0 = tl.load(in_ptr0 + (y0 + ks0 * x2 + ks0 * ks1 * y1), xmask & ymask, eviction_policy="evict_last")
    tl.store(out_ptr0 + (x2 + ks1 * y3), tmp0, xmask & ymask)


def check(rng):
    rows = 37
    a = rng.standard_normal((rows, 3)).astype(np.float32)
    b = rng.standard_normal((rows, 4)).astype(np.float32)
    c = rng.standard_normal((rows, 2)).astype(np.float32)
    out = np.full((rows, 9), np.nan, np.float32)
    triton_poi_fused_cat_0[(tiles.cdiv(rows * 9, 128),)](a, b, c, out, rows * 9, XBLOCK=128)
    close(out, np.concatenate([a, b, c * 2.0], 1), rtol=0, atol=0)
    # x: [B, S, D] -> out = x.transpose(1, 2).contiguous(): [B, D, S]; y runs over (B, D), x over S
    B, S, D = 5, 19, 7
    x = rng.standard_normal((B, S, D)).astype(np.float32)
    y = np.full((B, D, S), np.nan, np.float32)
    YBLOCK, XBLOCK = 4, 16
    ny = tiles.cdiv(B * D, YBLOCK)
    grid = (tiles.cdiv(S, XBLOCK), 3, tiles.cdiv(ny, 3))  # y blocks folded into (y, z)
    triton_poi_fused_clone_1[grid](x, y, D, S, B * D, S, YBLOCK=YBLOCK, XBLOCK=XBLOCK)
    close(y, x.transpose(0, 2, 1), rtol=0, atol=0)
