"""vLLM / SGLang style fused residual-add + RMSNorm over long rows: in place on both tensors
(``residual += x`` stored, then ``x = rms_norm(residual) * w``), two passes over the row in
column chunks, the second reading back what the first stored in the same program, fp16 storage
with fp32 statistics, ``eps`` a float argument and ``tl.program_id(0).to(tl.int64)`` rows."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _fused_add_rms_norm(x_ptr, residual_ptr, w_ptr, stride_x, stride_r, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    r_row = residual_ptr + row * stride_r
    sq = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        r = tl.load(r_row + cols, mask=mask, other=0.0)
        s = (x.to(tl.float32) + r.to(tl.float32)).to(residual_ptr.dtype.element_ty)
        tl.store(r_row + cols, s, mask=mask)
        s32 = s.to(tl.float32)
        sq += s32 * s32
    rrms = 1 / tl.sqrt(tl.sum(sq, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        s = tl.load(r_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(x_row + cols, (s * rrms * w).to(x_ptr.dtype.element_ty), mask=mask)


def check(rng):
    rows, cols = 7, 333
    x = rng.standard_normal((rows, cols)).astype(np.float16)
    residual = (rng.standard_normal((rows, cols)) * 2).astype(np.float16)
    w = rng.uniform(0.5, 1.5, cols).astype(np.float16)
    x[2, :5] = np.float16(0)
    residual[2, :5] = np.float16(0)
    summed = (x.astype(np.float32) + residual.astype(np.float32)).astype(np.float16)
    s32 = summed.astype(np.float32)
    expected = (s32 / np.sqrt((s32 * s32).mean(1, keepdims=True) + 1e-6) * w.astype(np.float32)).astype(np.float16)
    xs, rs = x.copy(), residual.copy()
    _fused_add_rms_norm[(rows,)](xs, rs, w, cols, cols, cols, 1e-6, BLOCK=128)
    close(rs, summed, rtol=0, atol=0)
    close(xs, expected, rtol=2e-3, atol=2e-3)
