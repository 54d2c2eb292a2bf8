"""Triton's rule for a Python number assigned to a plain (un-annotated) name inside a kernel: the
code generator's ``visit_Assign`` turns it into a *scalar tensor* (``semantic.to_tensor``: int32
for ints that fit, uint32 for ``2**31 <= v < 2**32``, fp32 for floats), while a number written
inline stays a weakly typed literal and a ``name: tl.constexpr = ...`` stays a constant.  Library
code relies on it: Inductor's ``x_grid_barrier`` does ``one_i32 = 1; one_u32 = one_i32.to(tl.uint32)``;
a hash seeded ``h = 0x811C9DC5`` multiplies in uint32 and wraps; a constant assigned in the body
(``third = 0.3333``) promotes an fp16 tile to fp32 where the same literal inline keeps fp16, and
``acc = 0`` has ``acc.dtype == tl.int32``.  Each is checked by value (and by ``tl.static_assert`` on
the dtype), against what Triton computes."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def assigned_scalars_kernel(x_ptr, b_ptr, promoted_ptr, literal_ptr, hash_ptr, misc_ptr, N: tl.constexpr,
                            NBYTES: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    third = 0.3333
    y = x * third
    tl.static_assert(y.dtype == tl.float32)
    tl.store(promoted_ptr + offs, y)
    z = x * 0.3333
    tl.static_assert(z.dtype == tl.float16)
    tl.store(literal_ptr + offs, z)
    # FNV-1a over NBYTES bytes per lane
    h = 0x811C9DC5
    for i in tl.static_range(NBYTES):
        byte = tl.load(b_ptr + offs * NBYTES + i).to(tl.uint32)
        h = (h ^ byte) * 16777619
    tl.store(hash_ptr + offs, h)
    one_i32 = 1
    one_u32 = one_i32.to(tl.uint32)
    acc = 0
    tl.static_assert(acc.dtype == tl.int32)
    tl.store(misc_ptr, (0x80000000 - (tl.num_programs(0).to(tl.uint32) + 2 - one_u32)).to(tl.int64))


def check(rng):
    N, NBYTES = 16, 5
    x = (rng.standard_normal(N) * 300).astype(np.float16)
    x[:3] = [1, 3, 7]
    data = rng.integers(0, 256, (N, NBYTES)).astype(np.uint8)
    promoted, literal = np.zeros(N, np.float32), np.zeros(N, np.float32)
    hashes = np.zeros(N, np.uint32)
    misc = np.zeros(1, np.int64)
    assigned_scalars_kernel[(1,)](x, data, promoted, literal, hashes, misc, N=N, NBYTES=NBYTES)
    close(promoted, x.astype(np.float32) * np.float32(0.3333), rtol=0, atol=0)
    close(literal, (x * np.float16(0.3333)).astype(np.float32), rtol=0, atol=0)
    expected = np.full(N, 0x811C9DC5, np.uint64)
    for i in range(NBYTES):
        expected = ((expected ^ data[:, i]) * 16777619) & 0xFFFFFFFF
    close(hashes, expected.astype(np.uint32))
    assert misc[0] == 0x80000000 - 2
