"""Triton's arithmetic corners that ported kernels rely on without saying so: mixed-signedness
integer promotion (int8 + uint8 is uint8, int16 + uint32 is uint32, int32 + uint8 is int32),
Python ints staying weak next to narrow tiles, ``//`` and ``%`` truncating toward zero on signed
ints (C, not Python), float ``%`` keeping the dividend's sign, ``/`` of ints giving fp32,
arithmetic vs logical ``>>``, signed-vs-unsigned comparison, fp16 + bf16 giving fp16 (the bf16
side converted) while fp16 / fp16 gives fp32, fp32 -> fp16 overflow to inf and float -> int
truncation.  Result dtypes are checked with ``tl.static_assert``."""

import ml_dtypes
import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _int_corners(a8_ptr, b8u_ptr, c16_ptr, d32u_ptr, e32_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    a = tl.load(a8_ptr + offs)
    b = tl.load(b8u_ptr + offs)
    c = tl.load(c16_ptr + offs)
    d = tl.load(d32u_ptr + offs)
    e = tl.load(e32_ptr + offs)
    ab = a + b
    tl.static_assert(ab.dtype == tl.uint8)
    cd = c + d
    tl.static_assert(cd.dtype == tl.uint32)
    eb = e + b
    tl.static_assert(eb.dtype == tl.int32)
    a1 = a + 1
    tl.static_assert(a1.dtype == tl.int8)
    q = e // 7
    r = e % 7
    shift_s = e >> 3
    shift_u = d >> 3
    less = e < d
    ratio = e / 3
    tl.static_assert(ratio.dtype == tl.float32)
    rows = (ab.to(tl.int64), cd.to(tl.int64), eb.to(tl.int64), a1.to(tl.int64), q.to(tl.int64), r.to(tl.int64),
            shift_s.to(tl.int64), shift_u.to(tl.int64), less.to(tl.int64), (a * 3).to(tl.int64))
    for i in tl.static_range(len(rows)):
        tl.store(out_ptr + i * N + offs, rows[i])


@tiles.jit
def _float_corners(x_ptr, h_ptr, g_ptr, fmod_ptr, mixed_ptr, narrow_ptr, trunc_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    h = tl.load(h_ptr + offs)
    g = tl.load(g_ptr + offs)
    hg = h + g
    tl.static_assert(hg.dtype == tl.float16)
    tl.static_assert((h / h).dtype == tl.float32)
    h2 = h * 2
    tl.static_assert(h2.dtype == tl.float16)
    tl.store(fmod_ptr + offs, x % 1.5)
    tl.store(mixed_ptr + offs, hg)
    tl.store(narrow_ptr + offs, (x * 1e4).to(tl.float16))
    tl.store(trunc_ptr + offs, x.to(tl.int32))


def check(rng):
    N = 64
    a = rng.integers(-128, 128, N).astype(np.int8)
    b = rng.integers(0, 256, N).astype(np.uint8)
    c = rng.integers(-2000, 2000, N).astype(np.int16)
    d = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    e = rng.integers(-10**6, 10**6, N).astype(np.int32)
    a[:3] = [-128, 127, -1]
    b[:3] = [255, 1, 0]
    e[:4] = [-7, -8, np.iinfo(np.int32).min, np.iinfo(np.int32).max]
    d[:2] = [0, 2**32 - 1]
    out = np.empty((10, N), np.int64)
    _int_corners[(1,)](a, b, c, d, e, out, N=N)
    with np.errstate(over="ignore"):
        close(out[0], (a.view(np.uint8) + b).astype(np.int64))
        close(out[1], (c.astype(np.int32).view(np.uint32) + d).astype(np.int64))
        close(out[2], (e + b.astype(np.int32)).astype(np.int64))
        close(out[3], (a + np.int8(1)).astype(np.int64))
        close(out[4], np.trunc(e / 7).astype(np.int64))
        close(out[5], np.fmod(e, 7).astype(np.int64))
        close(out[6], (e >> 3).astype(np.int64))
        close(out[7], (d >> np.uint32(3)).astype(np.int64))
        close(out[8], (e.view(np.uint32) < d).astype(np.int64))
        close(out[9], (a * np.int8(3)).astype(np.int64))
    x = (rng.standard_normal(N) * 5).astype(np.float32)
    x[:4] = [-0.75, 7.0, -4.5, 3.0]
    h = rng.standard_normal(N).astype(np.float16)
    g = rng.standard_normal(N).astype(ml_dtypes.bfloat16)
    fmod = np.empty(N, np.float32)
    mixed = np.empty(N, np.float32)
    narrow = np.empty(N, np.float16)
    trunc = np.empty(N, np.int32)
    _float_corners[(1,)](x, h, g, fmod, mixed, narrow, trunc, N=N)
    close(fmod, np.fmod(x, np.float32(1.5)), rtol=1e-6, atol=1e-6)
    close(mixed, (h + g.astype(np.float16)).astype(np.float32), rtol=0, atol=0)
    with np.errstate(over="ignore"):
        close(narrow, (x * np.float32(1e4)).astype(np.float16), rtol=1e-3, atol=0)
    close(trunc, np.trunc(x).astype(np.int32))
