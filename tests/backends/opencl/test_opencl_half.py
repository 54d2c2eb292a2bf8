"""The OpenCL prelude's float16 helpers (integer arithmetic, no vstore_half) against NumPy, bit for
bit: every half pattern decoded, and float32 patterns (edges, around every rounding boundary, random)
encoded to nearest-even and toward zero; plus the loop-with-a-barrier shape pocl miscompiled."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")

KERNELS = """
__kernel void encode(__global const float* x, __global ushort* rte, __global ushort* rtz) {
  size_t i = get_global_id(0);
  rte[i] = tiles_f16_bits_mode(x[i], false);
  rtz[i] = tiles_f16_bits_mode(x[i], true);
}
__kernel void decode(__global const ushort* h, __global float* out) {
  size_t i = get_global_id(0);
  out[i] = tiles_f16_from_bits(h[i]);
}
"""


def _program():
    import pyopencl as cl

    from tiles.backends.opencl import ctext, runtime

    ctx, queue, _ = runtime.device()
    return cl, ctx, queue, runtime.build(ctext.PRELUDE + KERNELS)


def _toward_zero(x: np.ndarray) -> np.ndarray:
    """float32 -> float16 bits rounded toward zero (finite overflow gives the largest half)."""
    with np.errstate(over="ignore", invalid="ignore"):
        near = x.astype(np.float16)
        away = np.abs(near.astype(np.float32)) > np.abs(x)
        near = np.where(away & np.isfinite(x), np.nextafter(near, np.float16(0)), near)
        big = np.isfinite(x) & (np.abs(x) >= 65504)
        near = np.where(big, np.copysign(np.float16(65504), x).astype(np.float16), near)
    return near.view(np.uint16)


def _floats(rng: np.random.Generator) -> np.ndarray:
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    bits = halves.view(np.uint32)
    around = np.concatenate([bits + np.uint32(d) for d in (0xffffffff, 1, 0x0fff, 0x1000, 0x1001)])  # ties, near
    edges = np.array([0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffbfffff, 0x1,
                      0x38800000, 0x387fffff, 0x33000000, 0x33000001, 0x477fe000, 0x477ff000, 0x477fefff,
                      0x47800000, 0x7f7fffff], dtype=np.uint32)
    rand = rng.integers(0, 1 << 32, size=1 << 18, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([around, edges, rand]).view(np.float32)


def test_half_helpers_match_numpy_bit_for_bit(rng):
    cl, ctx, queue, prog = _program()
    mf = cl.mem_flags
    x = _floats(rng)
    rte, rtz = np.empty(x.size, np.uint16), np.empty(x.size, np.uint16)
    bx = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    brte, brtz = cl.Buffer(ctx, mf.WRITE_ONLY, rte.nbytes), cl.Buffer(ctx, mf.WRITE_ONLY, rtz.nbytes)
    prog.encode(queue, (x.size,), None, bx, brte, brtz)
    cl.enqueue_copy(queue, rte, brte)
    cl.enqueue_copy(queue, rtz, brtz)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    bad = np.nonzero(rte != want)[0]
    assert bad.size == 0, [(hex(x.view(np.uint32)[i]), hex(rte[i]), hex(want[i])) for i in bad[:8]]
    finite = ~np.isnan(x)  # NaN payloads are checked by the nearest-even row above
    want_z = _toward_zero(x)
    bad = np.nonzero((rtz != want_z) & finite)[0]
    assert bad.size == 0, [(hex(x.view(np.uint32)[i]), hex(rtz[i]), hex(want_z[i])) for i in bad[:8]]

    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    out = np.empty(h.size, np.float32)
    bh = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=h)
    bout = cl.Buffer(ctx, mf.WRITE_ONLY, out.nbytes)
    prog.decode(queue, (h.size,), None, bh, bout)
    cl.enqueue_copy(queue, out, bout)
    np.testing.assert_array_equal(out.view(np.uint32), h.view(np.float16).astype(np.float32).view(np.uint32))


@tiles.jit
def _copy_rows_in_loop(x_ptr, y_ptr, s_ptr, n, BM: tl.constexpr, BN: tl.constexpr):
    for t in range(0, n):
        offs = (t * BM + tl.arange(0, BM))[:, None] * BN + tl.arange(0, BN)[None, :]
        x = tl.load(x_ptr + offs)
        tl.store(y_ptr + offs, x)
        tl.store(s_ptr + t * BM + tl.arange(0, BM), tl.sum(x.to(tl.float32), axis=1).to(tl.float16))


def test_float16_stores_in_a_loop_with_a_barrier(rng):
    """pocl gave zeros or garbage for these stores while they went through vstore_half."""
    bm, bn, n = 4, 8, 3
    x = rng.standard_normal((n * bm, bn)).astype(np.float16)
    y, s = np.zeros_like(x), np.zeros(n * bm, np.float16)
    _copy_rows_in_loop[(1,)](x, y, s, n, BM=bm, BN=bn, backend="opencl")
    np.testing.assert_array_equal(y, x)
    np.testing.assert_allclose(s.astype(np.float32), x.astype(np.float32).sum(1), rtol=2e-3, atol=2e-3)


@tiles.jit
def _narrow_atomics(add_ptr, max_ptr, min_ptr, x_ptr, N: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, N)
    tl.atomic_add(add_ptr + offs, 0.25, mask=offs < N - 1)
    x = tl.load(x_ptr + pid * N + offs)
    tl.atomic_max(max_ptr + offs, x)
    tl.atomic_min(min_ptr + offs, x)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_float_atomics_share_their_word(rng, dtype):
    """Neighbouring 16- and 8-bit elements live in one 32-bit word: every program updates all of
    them at once, so a lost update or a clobbered neighbour shows."""
    import ml_dtypes

    np_dt = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16}[dtype]
    programs, n = 48, 8
    start = (rng.integers(-16, 17, n) / 4).astype(np_dt)  # quarters: every partial sum is exact
    x = rng.uniform(-8, 8, (programs, n)).astype(np_dt)
    add, mx, mn = start.copy(), start.copy(), start.copy()
    _narrow_atomics[(programs,)](add, mx, mn, x, N=n, backend="opencl")
    want = start.astype(np.float32) + np.where(np.arange(n) < n - 1, 0.25 * programs, 0.0)
    np.testing.assert_array_equal(add.astype(np.float32), want.astype(np_dt).astype(np.float32))
    np.testing.assert_array_equal(mx.astype(np.float32), np.maximum(start, x.max(0)).astype(np.float32))
    np.testing.assert_array_equal(mn.astype(np.float32), np.minimum(start, x.min(0)).astype(np.float32))
