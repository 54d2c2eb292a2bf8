"""PyTorch Inductor's random kernels: the seed is an int64 *loaded from a seeds tensor*
(``tl.load(in_ptr0 + load_seed_offset)``), not a scalar argument, and may be negative or wider
than 32 bits; ``tl.rand(seed, x0.to(tl.uint32))`` drives native_dropout (mask and scaled output),
``triton_helpers.randint64`` builds a 64-bit draw from two ``tl.randint4x`` words
(``r0.to(tl.uint64) | (r1.to(tl.uint64) << 32)``, an unsigned ``%`` by ``high - low``) and
``tl.randn`` gives normals.  Checked against a NumPy Philox-4x32-10."""

import numpy as np
from compat_harness import close
from compat_random import philox, uniform

import tiles
import tiles.language as tl


@tiles.jit
def randint64(seed, offset, low, high):
    r0, r1, r2, r3 = tl.randint4x(seed, offset)
    r0 = r0.to(tl.uint64)
    r1 = r1.to(tl.uint64)
    result = r0 | (r1 << 32)
    size = high - low
    result = result % size.to(tl.uint64)
    return result.to(tl.int64) + low


@tiles.jit
def triton_poi_fused_native_dropout_randint_randn_0(in_ptr0, in_ptr1, out_ptr0, out_ptr1, out_ptr2, out_ptr3,
                                                    load_seed_offset, low, high, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + load_seed_offset)
    tmp2 = tl.rand(tmp0, (x0).to(tl.uint32))
    tmp3 = 0.2
    tmp4 = tmp2 > tmp3
    tmp6 = tl.load(in_ptr1 + (x0), xmask)
    tmp7 = tmp4.to(tl.float32) * tmp6 * 1.25
    tl.store(out_ptr0 + (x0), tmp4, xmask)
    tl.store(out_ptr1 + (x0), tmp7, xmask)
    tmp8 = tl.load(in_ptr0 + load_seed_offset + 1)
    tl.store(out_ptr2 + (x0), randint64(tmp8, (x0).to(tl.uint32), low, high), xmask)
    tl.store(out_ptr3 + (x0), tl.randn(tmp8, (x0).to(tl.uint32)), xmask)


def _normal(seed, offsets):
    c = philox(seed, offsets)
    u1 = np.maximum(np.float32(1e-7), uniform(c[0]))
    u2 = uniform(c[1])
    r = np.sqrt(np.float32(-2.0) * np.log(u1))
    return r * np.cos(np.float32(6.283185307179586) * u2)


def check(rng):
    n = 1000
    seeds = np.array([rng.integers(2**40, 2**50), -rng.integers(1, 2**62), rng.integers(0, 2**31), 7],
                     np.int64)
    x = rng.standard_normal(n).astype(np.float32)
    keep = np.empty(n, bool)
    y = np.empty(n, np.float32)
    draws = np.empty(n, np.int64)
    normals = np.empty(n, np.float32)
    low, high = -5, 1_000_003
    for offset in (0, 1):
        triton_poi_fused_native_dropout_randint_randn_0[(tiles.cdiv(n, 256),)](
            seeds, x, keep, y, draws, normals, offset, low, high, n, XBLOCK=256)
        s, s2 = int(seeds[offset]), int(seeds[offset + 1])
        ref_keep = uniform(philox(s, np.arange(n))[0]) > np.float32(0.2)
        close(keep, ref_keep)
        close(y, np.where(ref_keep, x * np.float32(1.25), 0.0).astype(np.float32), rtol=1e-6, atol=0)
        c = philox(s2, np.arange(n))
        wide = c[0].astype(np.uint64) | (c[1].astype(np.uint64) << np.uint64(32))
        close(draws, (wide % np.uint64(high - low)).astype(np.int64) + low)
        close(normals, _normal(s2, np.arange(n)), rtol=1e-4, atol=1e-5)
        assert 0.7 < ref_keep.mean() < 0.9 and draws.min() >= low and draws.max() < high
