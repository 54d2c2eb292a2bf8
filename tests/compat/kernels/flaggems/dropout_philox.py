"""FlagGems style dropout: ``tl.philox`` on (offset, 0, 0, 0) gives four uniforms per counter, so each
program covers four blocks; seed and offset are 64-bit launch arguments split into halves."""

import numpy as np
from compat_harness import close
from compat_random import philox, uniform

import tiles
import tiles.language as tl


@tiles.jit
def uint_to_uniform_float(x):
    x = x.to(tl.int32, bitcast=True)
    scale = 4.6566127342e-10
    x = tl.where(x < 0, -x - 1, x)
    return x * scale


@tiles.jit(do_not_specialize=["p", "philox_seed", "philox_offset"])
def dropout_forward_kernel(X, Y, N, p, philox_seed, philox_offset, BLOCK: tl.constexpr):
    UNROLL: tl.constexpr = 4
    philox_seed = philox_seed.to(tl.int64)
    philox_offset = philox_offset.to(tl.int64)
    c0 = (philox_offset & 0xFFFFFFFF).to(tl.uint32)
    c1 = ((philox_offset >> 32) & 0xFFFFFFFF).to(tl.uint32)
    i4 = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c0 += i4
    _O = c0 * 0
    r0, r1, r2, r3 = tl.philox(philox_seed, c0, c1, _O, _O)
    r0 = uint_to_uniform_float(r0)
    r1 = uint_to_uniform_float(r1)
    r2 = uint_to_uniform_float(r2)
    r3 = uint_to_uniform_float(r3)
    mask0 = r0 > p
    mask1 = r1 > p
    mask2 = r2 > p
    mask3 = r3 > p
    p = 1.0 / (1.0 - p)
    off_0 = tl.program_id(0) * BLOCK * UNROLL + tl.arange(0, BLOCK)
    off_1 = off_0 + BLOCK
    off_2 = off_1 + BLOCK
    off_3 = off_2 + BLOCK
    x0 = tl.load(X + off_0, mask=off_0 < N, other=0.0)
    x1 = tl.load(X + off_1, mask=off_1 < N, other=0.0)
    x2 = tl.load(X + off_2, mask=off_2 < N, other=0.0)
    x3 = tl.load(X + off_3, mask=off_3 < N, other=0.0)
    tl.store(Y + off_0, tl.where(mask0, x0 * p, 0.0), mask=off_0 < N)
    tl.store(Y + off_1, tl.where(mask1, x1 * p, 0.0), mask=off_1 < N)
    tl.store(Y + off_2, tl.where(mask2, x2 * p, 0.0), mask=off_2 < N)
    tl.store(Y + off_3, tl.where(mask3, x3 * p, 0.0), mask=off_3 < N)


def check(rng):
    N, BLOCK, p, seed, offset = 1000, 64, 0.4, 0x1234_5678_9ABC, 2**32 + 5
    x = rng.standard_normal(N).astype(np.float32)
    y = np.empty_like(x)
    programs = tiles.cdiv(N, BLOCK * 4)
    dropout_forward_kernel[(programs,)](x, y, N, p, seed, offset, BLOCK=BLOCK)
    i4 = np.arange(programs * BLOCK, dtype=np.uint64)
    c0 = ((offset & 0xFFFFFFFF) + i4).astype(np.uint32)
    streams = [uniform(r) for r in philox(seed, c0, offset >> 32, 0, 0)]
    keep = np.empty(programs * BLOCK * 4, bool)
    for pid in range(programs):
        for j in range(4):
            block = slice((pid * 4 + j) * BLOCK, (pid * 4 + j + 1) * BLOCK)
            keep[block] = streams[j][pid * BLOCK:(pid + 1) * BLOCK] > np.float32(p)
    scale = np.float32(1.0 / (1.0 - p))
    close(y, np.where(keep[:N], x * scale, np.float32(0)), rtol=1e-6, atol=0)
