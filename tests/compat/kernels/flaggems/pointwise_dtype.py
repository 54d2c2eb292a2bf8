"""FlagGems style pointwise kernels: output dtype as a ``tl.constexpr`` dtype argument, branches on
``x.dtype`` at trace time, computation in fp32 for half inputs, and a 2-D strided view."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def gelu_none_kernel(x_ptr, out_ptr, n, OUT_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    if x.dtype == tl.float16 or x.dtype == tl.bfloat16:
        x = x.to(tl.float32)
    y = 0.5 * x * (1 + tl.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offsets, y.to(OUT_DTYPE), mask=mask)


@tiles.jit
def add_strided_kernel(x_ptr, y_ptr, out_ptr, rows, cols, sx0, sx1, sy0, sy1, alpha, BLOCK_R: tl.constexpr,
                       BLOCK_C: tl.constexpr):
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)[:, None]
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)[None, :]
    mask = (r < rows) & (c < cols)
    x = tl.load(x_ptr + r * sx0 + c * sx1, mask=mask)
    y = tl.load(y_ptr + r * sy0 + c * sy1, mask=mask)
    tl.store(out_ptr + r * cols + c, x + alpha * y, mask=mask)


def check(rng):
    from math import erf  # noqa: PLC0415

    n = 777
    x = (rng.standard_normal(n) * 2).astype(np.float16)
    out = np.empty(n, np.float32)
    gelu_none_kernel[(tiles.cdiv(n, 256),)](x, out, n, OUT_DTYPE=tl.float32, BLOCK=256)
    xf = x.astype(np.float64)
    ref = 0.5 * xf * (1 + np.vectorize(erf)(xf / np.sqrt(2)))
    close(out, ref, rtol=1e-5, atol=1e-6)
    base = rng.standard_normal((40, 30)).astype(np.float32)
    xt = base.T
    y = rng.standard_normal((30, 40)).astype(np.float32)
    o = np.empty((30, 40), np.float32)
    add_strided_kernel[(tiles.cdiv(30, 16), tiles.cdiv(40, 16))](
        xt, y, o, 30, 40, xt.strides[0] // 4, xt.strides[1] // 4, 40, 1, 0.5, BLOCK_R=16, BLOCK_C=16)
    close(o, xt + np.float32(0.5) * y, rtol=1e-6, atol=1e-6)
