"""The libdevice functions real kernels import (tanh, erf, log1p, expm1, pow, fmod, isnan, isinf,
signbit, rint, trunc, round, asinh, atan2), through ``tl.extra.libdevice`` and through the
CUDA-specific module path some libraries import, float32 and float64."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra import libdevice
from tiles.language.extra.cuda import libdevice as cuda_libdevice


@tiles.jit
def libdevice_kernel(x_ptr, y_ptr, out_ptr, flags_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.load(y_ptr + offs, mask=mask, other=1.0)
    results = (libdevice.tanh(x), libdevice.erf(x), libdevice.log1p(tl.abs(x)), libdevice.expm1(x / 8),
               libdevice.pow(tl.abs(x), y / 4), libdevice.fmod(x, y), libdevice.rint(x), libdevice.trunc(x),
               libdevice.round(x), cuda_libdevice.asinh(x), libdevice.atan2(x, y))
    for i in tl.static_range(len(results)):
        tl.store(out_ptr + i * n + offs, results[i], mask=mask)
    flags = libdevice.isnan(x).to(tl.int32) + 2 * libdevice.isinf(x).to(tl.int32)
    flags += 4 * libdevice.signbit(x).to(tl.int32)
    tl.store(flags_ptr + offs, flags, mask=mask)


def _round_half_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def check(rng):
    n = 257
    for dtype, tol in ((np.float32, 4e-6), (np.float64, 1e-13)):
        x = (rng.standard_normal(n) * 6).astype(dtype)
        y = (rng.standard_normal(n) * 3).astype(dtype)
        x[:8] = [0.0, -0.0, np.inf, -np.inf, np.nan, 2.5, -2.5, 0.5]
        out = np.empty((11, n), dtype)
        flags = np.empty(n, np.int32)
        libdevice_kernel[(tiles.cdiv(n, 128),)](x, y, out, flags, n, BLOCK=128)
        from math import erf  # noqa: PLC0415

        with np.errstate(all="ignore"):
            refs = [np.tanh(x), np.vectorize(erf, otypes=[np.float64])(x), np.log1p(np.abs(x)), np.expm1(x / 8),
                    np.power(np.abs(x), y / 4), np.fmod(x, y), np.rint(x), np.trunc(x), _round_half_away(x),
                    np.arcsinh(x), np.arctan2(x, y)]
        for i, ref in enumerate(refs):
            close(out[i], ref, rtol=tol, atol=tol)
        close(flags, np.isnan(x) + 2 * np.isinf(x) + 4 * np.signbit(x))
