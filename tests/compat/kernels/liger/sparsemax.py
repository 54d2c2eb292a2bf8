"""Liger-Kernel style sparsemax: the host sorts each row descending, the forward kernel finds the
support size from a running ``tl.cumsum`` of the sorted row and projects; the backward loops over
column tiles with ``tl.range`` accumulating into ``tl.zeros((), ...)`` scalars.  Both kernels take
``num_warps`` as a ``tl.constexpr`` parameter of their own, as Liger's do."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _sparsemax_fwd(x_ptr, x_stride, sorted_ptr, sorted_stride, out_ptr, out_stride, n_cols,
                   BLOCK_SIZE: tl.constexpr, num_warps: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    z_sorted = tl.load(sorted_ptr + row * sorted_stride + offs, mask=mask, other=-float("inf")).to(tl.float32)
    running = tl.cumsum(tl.where(mask, z_sorted, 0.0), 0)
    k = (offs + 1).to(tl.float32)
    in_support = (1 + k * z_sorted > running) & mask
    support = tl.sum(in_support.to(tl.int32), 0)
    support_sum = tl.sum(tl.where(in_support, z_sorted, 0.0), 0)
    tau = (support_sum - 1) / support.to(tl.float32)
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=0.0).to(tl.float32)
    y = tl.maximum(x - tau, 0.0)
    tl.store(out_ptr + row * out_stride + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@tiles.jit
def _sparsemax_bwd(o_ptr, go_ptr, gi_ptr, stride, n_cols, BLOCK_SIZE: tl.constexpr, num_warps: tl.constexpr):
    row = tl.program_id(0)
    o_row = o_ptr + row * stride
    go_row = go_ptr + row * stride
    gi_row = gi_ptr + row * stride
    offs = tl.arange(0, BLOCK_SIZE)
    count = tl.zeros((), tl.float32)
    total = tl.zeros((), tl.float32)
    for i in tl.range(0, tl.cdiv(n_cols, BLOCK_SIZE)):
        cols = i * BLOCK_SIZE + offs
        m = cols < n_cols
        o = tl.load(o_row + cols, mask=m, other=0.0).to(tl.float32)
        go = tl.load(go_row + cols, mask=m, other=0.0).to(tl.float32)
        live = o > 0
        count += tl.sum(live.to(tl.float32), 0)
        total += tl.sum(tl.where(live, go, 0.0), 0)
    mean = total / tl.maximum(count, 1.0)
    for i in tl.range(0, tl.cdiv(n_cols, BLOCK_SIZE)):
        cols = i * BLOCK_SIZE + offs
        m = cols < n_cols
        o = tl.load(o_row + cols, mask=m, other=0.0)
        go = tl.load(go_row + cols, mask=m, other=0.0).to(tl.float32)
        gi = tl.where(o > 0, go - mean, 0.0)
        tl.store(gi_row + cols, gi.to(gi_row.dtype.element_ty), mask=m)


def _sparsemax(x):
    z = -np.sort(-x, axis=1)
    k = np.arange(1, x.shape[1] + 1)
    running = np.cumsum(z, axis=1)
    support = (1 + k * z > running).sum(1)
    tau = (np.take_along_axis(running, support[:, None] - 1, 1)[:, 0] - 1) / support
    return np.maximum(x - tau[:, None], 0)


def check(rng):
    rows, cols = 6, 37
    x = (rng.standard_normal((rows, cols)) * 2).astype(np.float32)
    x[1] = 0.25
    x[2, :5] = 8.0
    x_sorted = -np.sort(-x, axis=1)
    out = np.empty_like(x)
    _sparsemax_fwd[(rows,)](x, cols, x_sorted, cols, out, cols, cols, BLOCK_SIZE=64, num_warps=4)
    expected = _sparsemax(x.astype(np.float64))
    close(out, expected, rtol=1e-5, atol=1e-6)
    assert np.allclose(out.sum(1), 1, atol=1e-5)
    go = rng.standard_normal((rows, cols)).astype(np.float32)
    gi = np.empty_like(go)
    _sparsemax_bwd[(rows,)](out, go, gi, cols, cols, BLOCK_SIZE=16, num_warps=2)
    live = expected > 0
    mean = (go * live).sum(1) / live.sum(1)
    close(gi, np.where(live, go - mean[:, None], 0), rtol=1e-5, atol=1e-6)
