"""Liger-Kernel style multi-token-attention causal masking: the forward fills the strictly upper
triangle of each ``L x L`` score matrix with a constexpr fill value (``-1e9`` before softmax, ``0.0``
before sparsemax); the backward zeroes the gradient there.  Tiles of ``BLOCK x BLOCK`` on a 3-D
grid (row block, column block, batch).

Language features exercised: a kernel parameter literally named ``num_warps: tl.constexpr`` that
the launch also passes as ``num_warps=`` (Triton binds it to the parameter); a float constexpr
``mask_val`` used as the load's ``other`` for the masked-out future positions; load/store
``cache_modifier=".ca"``, ``".cs"`` and ``".wb"``; ``~future`` on an ``int1`` tile and
``in_bounds & ~future``; ``tl.zeros(grad_vals.shape, dtype=grad_vals.dtype)`` from a loaded tile's
``.shape``/``.dtype`` in a ``tl.where``; three strides including a non-unit column stride (scores
viewed transposed) and bf16 data passed through unchanged."""

import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl


@tiles.jit
def _mask_fwd_kernel(scores_ptr, out_ptr, stride_b, stride_m, stride_n, L, mask_val: tl.constexpr,
                     BLOCK: tl.constexpr, num_warps: tl.constexpr):
    row_block = tl.program_id(0)
    col_block = tl.program_id(1)
    batch_id = tl.program_id(2)
    row_idx = row_block * BLOCK + tl.arange(0, BLOCK)
    col_idx = col_block * BLOCK + tl.arange(0, BLOCK)
    in_bounds = (row_idx[:, None] < L) & (col_idx[None, :] < L)
    offs = row_idx[:, None] * stride_m + col_idx[None, :] * stride_n
    future = col_idx[None, :] > row_idx[:, None]
    vals = tl.load(scores_ptr + batch_id * stride_b + offs, mask=in_bounds & ~future, other=mask_val,
                   cache_modifier=".ca")
    tl.store(out_ptr + batch_id * stride_b + offs, vals, mask=in_bounds, cache_modifier=".cs")


@tiles.jit
def _mask_bwd_kernel(grad_in_ptr, out_ptr, stride_b, stride_m, stride_n, L, BLOCK: tl.constexpr,
                     num_warps: tl.constexpr):
    row_block = tl.program_id(0)
    col_block = tl.program_id(1)
    batch_id = tl.program_id(2)
    row_idx = row_block * BLOCK + tl.arange(0, BLOCK)
    col_idx = col_block * BLOCK + tl.arange(0, BLOCK)
    in_bounds = (row_idx[:, None] < L) & (col_idx[None, :] < L)
    offs = row_idx[:, None] * stride_m + col_idx[None, :] * stride_n
    grad_vals = tl.load(grad_in_ptr + batch_id * stride_b + offs, mask=in_bounds, other=0.0, cache_modifier=".ca")
    future = col_idx[None, :] > row_idx[:, None]
    zero = tl.zeros(grad_vals.shape, dtype=grad_vals.dtype)
    tl.store(out_ptr + batch_id * stride_b + offs, tl.where(future, zero, grad_vals), mask=in_bounds,
             cache_modifier=".wb")


def check(rng):
    B, L, BLOCK = 3, 21, 16
    grid = (-(-L // BLOCK), -(-L // BLOCK), B)
    # scores stored transposed: element (b, i, j) at b*L*L + j*L + i
    raw = rng.standard_normal((B, L, L)).astype(np.float32)
    raw[0, 5, 2] = np.nan
    scores = np.ascontiguousarray(raw.transpose(0, 2, 1)).transpose(0, 2, 1)
    causal = np.tril(np.ones((L, L), bool))
    for fill in (-1e9, 0.0):
        out = np.empty((B, L, L), np.float32)
        # out keeps scores' strides (the kernel uses one set of strides for both)
        out = np.ascontiguousarray(out.transpose(0, 2, 1)).transpose(0, 2, 1)
        sb, sm, sn = (s // 4 for s in scores.strides)
        _mask_fwd_kernel[grid](scores, out, sb, sm, sn, L, mask_val=fill, BLOCK=BLOCK, num_warps=4)
        close(out, np.where(causal, raw, np.float32(fill)))
    g = rng.standard_normal((B, L, L)).astype(BF16)
    g[1, 0, 3] = np.inf
    dg = np.full((B, L, L), 7.0, BF16)
    _mask_bwd_kernel[grid](g, dg, L * L, L, 1, L, BLOCK=BLOCK, num_warps=8)
    close(dg, np.where(causal, g.astype(np.float32), 0.0).astype(BF16))
