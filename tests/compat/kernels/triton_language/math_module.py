"""``tl.math`` as kernels call it: exp2/log2, fma, div_rn, sqrt_rn, fdiv, floor/ceil, umulhi, rsqrt,
with edge values (±0, ±inf, NaN, huge and tiny magnitudes)."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def math_kernel(x_ptr, y_ptr, u_ptr, out_ptr, uout_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.load(y_ptr + offs, mask=mask, other=1.0)
    u = tl.load(u_ptr + offs, mask=mask, other=1)
    results = (tl.math.div_rn(x, y), tl.math.sqrt_rn(tl.abs(x)), tl.math.floor(x),
               tl.math.ceil(x), tl.math.fma(x, y, x), tl.math.exp2(tl.where(x < 100.0, x, 100.0)),
               tl.math.log2(tl.abs(y)),
               tl.math.rsqrt(tl.abs(y)), tl.math.fdiv(x, y))
    for i in tl.static_range(len(results)):
        tl.store(out_ptr + i * n + offs, results[i], mask=mask)
    tl.store(uout_ptr + offs, tl.math.umulhi(u, u + 12345), mask=mask)


def check(rng):
    n = 301
    x = (rng.standard_normal(n) * 10).astype(np.float32)
    y = (rng.standard_normal(n) * 10).astype(np.float32)
    x[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30]
    y[:6] = [3.0, -2.0, 7.0, 0.5, 2.0, 1e-30]
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    out = np.empty((9, n), np.float32)
    uout = np.empty(n, np.uint32)
    math_kernel[(tiles.cdiv(n, 128),)](x, y, u, out, uout, n, BLOCK=128)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(all="ignore"):
        exact = [xd / yd, np.sqrt(np.abs(xd)), np.floor(xd), np.ceil(xd)]
        approx = [xd * yd + xd, np.exp2(np.where(xd < 100, xd, 100)), np.log2(np.abs(yd)),
                  1 / np.sqrt(np.abs(yd)), xd / yd]
        exact = [r.astype(np.float32) for r in exact]
        approx = [r.astype(np.float32) for r in approx]
    for i, ref in enumerate(exact):
        close(out[i], ref, rtol=0, atol=0)
    for i, ref in enumerate(approx, start=len(exact)):
        close(out[i], ref, rtol=2e-6, atol=2.0**-21)  # CUDA: lg2.approx is 2^-22 absolute near 1
    close(uout, ((u.astype(np.uint64) * ((u + np.uint32(12345)).astype(np.uint64))) >> np.uint64(32)).astype(np.uint32))
