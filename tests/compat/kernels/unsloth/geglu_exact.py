"""Unsloth style exact GEGLU (erf form) forward and backward through ``tl.math.erf``; the backward
overwrites its inputs with (h, df, de) as Unsloth does."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _exact_forward_kernel(e, g, h, n_elements, BLOCK_SIZE: tl.constexpr):
    block_idx = tl.program_id(0)
    offsets = block_idx * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    e_row = tl.load(e + offsets, mask=mask, other=0).to(tl.float32)
    g_row = tl.load(g + offsets, mask=mask, other=0)
    f_row = 0.5 * e_row * (tl.math.erf(tl.math.rsqrt(2.0) * e_row) + 1.0)
    f_row = f_row.to(g_row.dtype)
    h_row = f_row * g_row
    tl.store(h + offsets, h_row, mask=mask)


@tiles.jit
def _exact_backward_kernel(DW, e, g, n_elements, BLOCK_SIZE: tl.constexpr):
    block_idx = tl.program_id(0)
    offsets = block_idx * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    DW_row = tl.load(DW + offsets, mask=mask, other=0)
    e_row = tl.load(e + offsets, mask=mask, other=0).to(tl.float32)
    g_row = tl.load(g + offsets, mask=mask, other=0)
    f_partial_row = 0.5 * (tl.math.erf(tl.math.rsqrt(2.0) * e_row) + 1.0)
    f_row = f_partial_row * e_row
    f_row = f_row.to(DW_row.dtype)
    h_row = f_row * g_row
    df_row = DW_row * f_row
    dg_row = DW_row * g_row
    t = 0.3989422804014327
    df_de = f_partial_row + t * e_row * tl.exp(-0.5 * e_row * e_row)
    de_row = dg_row.to(tl.float32) * df_de
    de_row = de_row.to(DW_row.dtype)
    tl.store(DW + offsets, h_row, mask=mask)
    tl.store(e + offsets, df_row, mask=mask)
    tl.store(g + offsets, de_row, mask=mask)


def check(rng):
    from math import erf  # noqa: PLC0415

    n = 1030
    e = (rng.standard_normal(n) * 2).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    dw = rng.standard_normal(n).astype(np.float32)
    h = np.empty_like(e)
    _exact_forward_kernel[(tiles.cdiv(n, 256),)](e, g, h, n, BLOCK_SIZE=256)
    ed = e.astype(np.float64)
    phi = 0.5 * (1 + np.vectorize(erf)(ed / np.sqrt(2)))
    close(h, ed * phi * g, rtol=1e-5, atol=1e-6)
    DW, E, G = dw.copy(), e.copy(), g.copy()
    _exact_backward_kernel[(tiles.cdiv(n, 256),)](DW, E, G, n, BLOCK_SIZE=256)
    close(DW, ed * phi * g, rtol=1e-5, atol=1e-6)
    close(E, dw * ed * phi, rtol=1e-5, atol=1e-6)
    close(G, dw * g * (phi + ed * np.exp(-0.5 * ed * ed) / np.sqrt(2 * np.pi)), rtol=1e-4, atol=1e-5)
