"""The random-number API beyond tl.rand: ``tl.randint``, ``tl.randint4x``, ``tl.randn``, ``tl.randn4x``
and ``tl.philox`` with per-element offsets, bit for bit against Philox in NumPy (uniform and normal
transforms as Triton defines them)."""

import numpy as np
from compat_harness import close
from compat_random import philox, uniform

import tiles
import tiles.language as tl


@tiles.jit
def random_streams_kernel(ints_ptr, ints4_ptr, normal_ptr, normal4_ptr, seed, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ints_ptr + offs, tl.randint(seed, offs), mask=mask)
    a, b, c, d = tl.randint4x(seed, offs)
    tl.store(ints4_ptr + 4 * offs, a, mask=mask)
    tl.store(ints4_ptr + 4 * offs + 1, b, mask=mask)
    tl.store(ints4_ptr + 4 * offs + 2, c, mask=mask)
    tl.store(ints4_ptr + 4 * offs + 3, d, mask=mask)
    tl.store(normal_ptr + offs, tl.randn(seed, offs), mask=mask)
    n0, n1, n2, n3 = tl.randn4x(seed, offs)
    tl.store(normal4_ptr + 4 * offs, n0, mask=mask)
    tl.store(normal4_ptr + 4 * offs + 1, n1, mask=mask)
    tl.store(normal4_ptr + 4 * offs + 2, n2, mask=mask)
    tl.store(normal4_ptr + 4 * offs + 3, n3, mask=mask)


def _normal(u1, u2):
    u1 = np.maximum(np.float32(1.0e-7), u1)
    th = np.float32(6.283185307179586) * u2
    r = np.sqrt(np.float32(-2.0) * np.log(u1))
    return r * np.cos(th), r * np.sin(th)


def check(rng):
    n, seed = 300, int(rng.integers(1, 2**40))
    ints = np.empty(n, np.uint32)
    ints4 = np.empty(4 * n, np.uint32)
    normal = np.empty(n, np.float32)
    normal4 = np.empty(4 * n, np.float32)
    random_streams_kernel[(tiles.cdiv(n, 128),)](ints, ints4, normal, normal4, seed, n, BLOCK=128)
    streams = philox(seed, np.arange(n, dtype=np.uint32))
    close(ints, streams[0])
    close(ints4, np.stack(streams, 1).reshape(-1))
    u = [uniform(s) for s in streams]
    n0, n1 = _normal(u[0], u[1])
    n2, n3 = _normal(u[2], u[3])
    close(normal, n0, rtol=1e-5, atol=1e-5)
    close(normal4, np.stack([n0, n1, n2, n3], 1).reshape(-1), rtol=1e-5, atol=1e-5)
