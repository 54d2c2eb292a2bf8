"""Launch keywords a Triton user passes (``num_warps``, ``num_stages``, ``num_ctas``, ``maxnreg``,
``enable_fp_fusion``), ``kernel.warmup(..., grid=)`` ahead of the launch and ``kernel.run(..., grid=)``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def check(rng):
    n = 999
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    grid = (tiles.cdiv(n, 128),)
    axpy_kernel.warmup(x, y, out, 2.0, n, BLOCK=128, grid=grid)
    axpy_kernel[grid](x, y, out, 2.0, n, BLOCK=128, num_warps=2, num_stages=1, num_ctas=1, maxnreg=128,
                      enable_fp_fusion=False)
    close(out, np.float32(2.0) * x + y, rtol=0, atol=0)
    out2 = np.empty_like(x)
    axpy_kernel.run(x, y, out2, 2.0, n, BLOCK=128, grid=grid, warmup=False)
    close(out2, out, rtol=0, atol=0)
