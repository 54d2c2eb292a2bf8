"""float8 (e4m3fn, e5m2) on OpenCL: held as float, stored as bytes through the prelude's
encoder/decoder (backends/opencl/ctext.py).  Every result is compared bit for bit with the
interpreter: all 256 byte patterns decoded, float32 and float64 values encoded to nearest even
and toward zero (ties, subnormals, the saturation thresholds, +-0, +-inf, NaN), fp8 arithmetic
rounded after each op, bitcasts to and from uint8, and vector (4-wide) accesses.  Encoding
saturates as Triton on CUDA does: ml_dtypes of the value clipped to the format's range."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry

OPENCL, OPENCL_WHY = registry.status("opencl")
pytestmark = pytest.mark.skipif(not OPENCL, reason=str(OPENCL_WHY))
FORMATS = [(tl.float8e4nv, ml_dtypes.float8_e4m3fn), (tl.float8e5, ml_dtypes.float8_e5m2)]


@tiles.jit
def _encode(x_ptr, out_ptr, n, DST: tl.constexpr, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x.to(DST, fp_downcast_rounding=ROUNDING).to(tl.uint8, bitcast=True), mask=mask)


@tiles.jit
def _decode(bits_ptr, out_ptr, n, SRC: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(bits_ptr + offs, mask=mask).to(SRC, bitcast=True).to(tl.float32), mask=mask)


@tiles.jit
def _arith(a_ptr, b_ptr, sum_ptr, prod_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(sum_ptr + offs, a + b, mask=mask)
    tl.store(prod_ptr + offs, (a * b).to(tl.float32), mask=mask)


@tiles.jit
def _constants(x_ptr, out_ptr, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x * 0.3 + tl.full([BLOCK], 3.3, DST))


def _on(backend, kernel, grid, *args, **meta):
    outs = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    kernel[grid](*outs, backend=backend, **meta)
    return outs


def _edge_values(rng, np_fp8) -> np.ndarray:
    info = ml_dtypes.finfo(np_fp8)
    grid = np.arange(256, dtype=np.uint8).view(np_fp8).astype(np.float64)
    grid = grid[np.isfinite(grid)]
    ups = np.nextafter(grid, np.inf)
    mids = (np.sort(grid)[:-1] + np.sort(grid)[1:]) / 2  # ties between neighbours
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, float(info.max), float(info.max) * 1.03, 464.0, 465.0, 472.0, -464.0,
               61440.0, 61439.0, 57344.0, 59392.0, 59393.0, 1e30, -1e30, float(info.smallest_subnormal) / 2,
               float(info.smallest_subnormal) * 1.5]
    spread = rng.standard_normal(300) * 10.0 ** rng.uniform(-8, 5, 300)
    return np.concatenate([grid, ups, mids, mids * (1 + 1e-7), special, spread])


@pytest.mark.parametrize("dst,np_fp8", FORMATS)
def test_decode_every_byte_like_the_interpreter(dst, np_fp8):
    bits = np.arange(256, dtype=np.uint8)
    out = np.empty(256, np.float32)
    got = _on("opencl", _decode, (4,), bits, out, 256, SRC=dst, BLOCK=64)[1]
    want = _on("interpreter", _decode, (4,), bits, out, 256, SRC=dst, BLOCK=64)[1]
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("source", [np.float32, np.float64])
@pytest.mark.parametrize("rounding", ["rtne", "rtz"])
@pytest.mark.parametrize("dst,np_fp8", FORMATS)
def test_encode_like_the_interpreter(rng, dst, np_fp8, rounding, source):
    x = _edge_values(rng, np_fp8).astype(source)
    n = x.size
    out = np.empty(n, np.uint8)
    grid = (tiles.cdiv(n, 128),)
    got = _on("opencl", _encode, grid, x, out, n, DST=dst, ROUNDING=rounding, BLOCK=128)[1]
    want = _on("interpreter", _encode, grid, x, out, n, DST=dst, ROUNDING=rounding, BLOCK=128)[1]
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(x[i]), int(got[i]), int(want[i])) for i in bad[:8]]
    if rounding == "rtne" and source is np.float32:
        big = float(ml_dtypes.finfo(np_fp8).max)
        np.testing.assert_array_equal(want, np.clip(x, -big, big).astype(np_fp8).view(np.uint8))


@pytest.mark.parametrize("dst,np_fp8", FORMATS)
def test_arithmetic_rounds_each_result(rng, dst, np_fp8):
    n = 203  # odd: vector accesses with a masked tail
    a = (rng.standard_normal(n) * 4).astype(np_fp8)
    b = (rng.standard_normal(n) * 4).astype(np_fp8)
    sums = np.empty(n, np_fp8)
    prods = np.empty(n, np.float32)
    grid = (tiles.cdiv(n, 64),)
    got = _on("opencl", _arith, grid, a, b, sums, prods, n, BLOCK=64)
    want = _on("interpreter", _arith, grid, a, b, sums, prods, n, BLOCK=64)
    np.testing.assert_array_equal(got[2].view(np.uint8), want[2].view(np.uint8))
    np.testing.assert_array_equal(got[3], want[3])
    np.testing.assert_array_equal(want[2].view(np.uint8),
                                  (a.astype(np.float32) + b.astype(np.float32)).astype(np_fp8).view(np.uint8))


@pytest.mark.parametrize("dst,np_fp8", FORMATS)
def test_constants_are_rounded_to_the_format(rng, dst, np_fp8):
    x = (rng.standard_normal(16) * 3).astype(np_fp8)
    out = np.empty(16, np_fp8)
    got = _on("opencl", _constants, (1,), x, out, DST=dst, BLOCK=16)[1]
    want = _on("interpreter", _constants, (1,), x, out, DST=dst, BLOCK=16)[1]
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
