"""PyTorch Inductor's persistent sort (``triton_per_fused_sort_0``) through its own bitonic network
(``triton_helpers.sort_with_index``), written in user code rather than ``tl.sort``: ``n_dims:
tl.constexpr = _log2(x.shape[_dim])`` (``_log2`` from ``triton.language.standard``), annotated
constexpr locals holding *lists* (``shape: tl.constexpr = [n_outer * 2**i, 2, 2 ** (n_dims - i - 1)]``)
fed to ``tl.reshape``, ``x.numel``, ``tl.core.get_int_dtype(bitwidth=x.dtype.primitive_bitwidth,
signed=True)`` and ``.to(idtype, bitcast=True)``, 3-D ``tl.arange(0, 2)[None, :, None]`` masks and
``tl.sum(..., 1)`` to pick the left/right halves, ``tl.broadcast(x, idxs)`` unpacked, a helper
``is_floating`` used as ``if is_floating(left):``, keyword constexpr arguments with
``tl.constexpr(False)`` defaults, ``alternating=i < n_dims`` passed from a ``tl.static_range``
loop that reassigns a tuple ``x, idxs = ...``, ``flip = False`` vs a tile, ``(cond ^ flip).to(tl.int1)``,
and NaN-last ordering (stable and unstable, ascending and descending) with masked padding."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.standard import _log2


@tiles.jit
def promote_to_tensor(x):
    return x + tl.zeros((1,), tl.int1)


@tiles.jit
def is_floating(x):
    return promote_to_tensor(x).dtype.is_floating()


@tiles.jit
def _compare_and_swap_with_index(x, idxs, rnumel, flip, i: tl.constexpr, n_dims: tl.constexpr,
                                 stable: tl.constexpr, descending: tl.constexpr):
    n_outer: tl.constexpr = x.numel >> n_dims
    shape: tl.constexpr = [n_outer * 2**i, 2, 2 ** (n_dims - i - 1)]
    idtype = tl.core.get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)
    y = tl.reshape(x, shape)
    iy = y.to(idtype, bitcast=True)
    right_mask = tl.arange(0, 2)[None, :, None].to(idtype)
    left_mask = (1 - right_mask).to(idtype)
    ileft = tl.broadcast_to(tl.sum(iy * left_mask, 1).to(idtype)[:, None, :], shape)
    iright = tl.broadcast_to(tl.sum(iy * right_mask, 1).to(idtype)[:, None, :], shape)
    ileft = tl.reshape(ileft, x.shape)
    iright = tl.reshape(iright, x.shape)
    left = ileft.to(x.dtype, bitcast=True)
    right = iright.to(x.dtype, bitcast=True)
    y_idx = tl.reshape(idxs, shape)
    left_idx = tl.broadcast_to(tl.sum(y_idx * left_mask.to(y_idx.dtype), 1)[:, None, :], shape)
    right_idx = tl.broadcast_to(tl.sum(y_idx * right_mask.to(y_idx.dtype), 1)[:, None, :], shape)
    left_idx = tl.reshape(left_idx, x.shape)
    right_idx = tl.reshape(right_idx, x.shape)
    if rnumel is None:
        left_valid_mask = tl.full(x.shape, True, tl.int1)
        right_valid_mask = tl.full(x.shape, True, tl.int1)
    else:
        left_valid_mask = left_idx < rnumel
        right_valid_mask = right_idx < rnumel
    ix = x.to(idtype, bitcast=True)
    left_isnan = left != left
    right_isnan = right != right
    if descending:
        cond = left < right
        if is_floating(left):
            if not stable:
                cond = cond | right_isnan
            else:
                cond = cond | (right_isnan & (~left_isnan))
    else:
        cond = left > right
        if is_floating(left):
            if not stable:
                cond = cond | left_isnan
            else:
                cond = cond | (left_isnan & (~right_isnan))
    if stable:
        eq = left == right
        if is_floating(left):
            eq = eq | (left_isnan & right_isnan)
        cond = cond | (eq & (left_idx > right_idx))
    cond = (right_valid_mask > left_valid_mask) | ((right_valid_mask == left_valid_mask) & cond)
    cond = (cond ^ flip).to(tl.int1)
    ret = ix ^ tl.where(cond, ileft ^ iright, tl.zeros_like(ix))
    new_idxs = idxs ^ tl.where(cond, left_idx ^ right_idx, tl.zeros_like(idxs))
    return ret.to(x.dtype, bitcast=True), new_idxs


@tiles.jit
def _bitonic_merge_with_index(x, idxs, rnumel, stage: tl.constexpr, alternating: tl.constexpr,
                              n_dims: tl.constexpr, stable: tl.constexpr, descending: tl.constexpr):
    n_outer: tl.constexpr = x.numel >> n_dims
    tl.static_assert(stage <= n_dims)
    if alternating:
        shape: tl.constexpr = [n_outer * 2 ** (n_dims - 1 - stage), 2, 2**stage]
        flip = tl.reshape(tl.broadcast_to(tl.arange(0, 2)[None, :, None], shape), x.shape)
    else:
        flip = False
    for i in tl.static_range(stage):
        x, idxs = _compare_and_swap_with_index(x, idxs, rnumel, flip, i + (n_dims - stage), n_dims, stable,
                                               descending)
    return x, idxs


@tiles.jit
def sort_with_index(x, idxs, rnumel, dim: tl.constexpr = None,
                    stable: tl.constexpr = tl.constexpr(False),  # noqa: B008  (Inductor's spelling)
                    descending: tl.constexpr = tl.constexpr(False)):  # noqa: B008
    x, idxs = tl.broadcast(x, idxs)
    _dim: tl.constexpr = len(x.shape) - 1 if dim is None else dim
    tl.static_assert(_dim == len(x.shape) - 1, "only minor dimension is currently supported")
    n_dims: tl.constexpr = _log2(x.shape[_dim])
    for i in tl.static_range(1, n_dims + 1):
        x, idxs = _bitonic_merge_with_index(x, idxs, rnumel, i, alternating=i < n_dims, n_dims=n_dims,
                                            stable=stable, descending=descending)
    return x, idxs


@tiles.jit
def triton_per_fused_sort_0(in_ptr0, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK: tl.constexpr,
                            R0_BLOCK: tl.constexpr, STABLE: tl.constexpr, DESCENDING: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + r0_numel * x0), r0_mask & xmask, other=0.0)
    tmp1 = r0_1.to(tl.int16)
    tmp2 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp3 = tl.broadcast_to(tmp1, [XBLOCK, R0_BLOCK])
    tmp4, tmp5 = sort_with_index(tmp2, tmp3, r0_numel, 1, stable=STABLE, descending=DESCENDING)
    tl.store(out_ptr0 + (r0_1 + r0_numel * x0), tmp4, r0_mask & xmask)
    tl.store(out_ptr1 + (r0_1 + r0_numel * x0), tmp5.to(tl.int64), r0_mask & xmask)


def check(rng):
    rows, cols = 5, 27
    x = rng.integers(-4, 5, (rows, cols)).astype(np.float32)  # many ties
    x[0, :4] = [np.nan, -np.inf, np.inf, -0.0]
    x[1, 3] = x[1, 9] = np.nan
    for stable, descending in ((True, False), (True, True), (False, False)):
        vals = np.full((rows, cols), 99.0, np.float32)
        idx = np.full((rows, cols), -1, np.int64)
        triton_per_fused_sort_0[(tiles.cdiv(rows, 2),)](x, vals, idx, rows, cols, XBLOCK=2, R0_BLOCK=32,
                                                        STABLE=stable, DESCENDING=descending)
        key = np.where(np.isnan(x), np.inf, x)
        nan_rank = np.isnan(x).astype(np.int8)
        if descending:
            order = np.lexsort((np.arange(cols)[None, :].repeat(rows, 0), -key, -nan_rank), axis=1)
        else:
            order = np.lexsort((np.arange(cols)[None, :].repeat(rows, 0), key, nan_rank), axis=1)
        expected_vals = np.take_along_axis(x, order, 1)
        close(vals, expected_vals, rtol=0, atol=0)
        if stable:
            close(idx, order.astype(np.int64))
        else:
            close(np.take_along_axis(x, idx, 1), expected_vals, rtol=0, atol=0)
            assert (np.sort(idx, 1) == np.arange(cols)).all()
