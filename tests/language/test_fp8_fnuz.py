"""AMD's "fnuz" fp8 formats, ``tl.float8e4b8`` (e4m3, bias 8) and ``tl.float8e5b16`` (e5m2, bias 16):
no infinities, no negative zero, NaN is the byte 0x80.  Conversions round to nearest even, as
ml_dtypes' float8_e4m3fnuz / float8_e5m2fnuz do, and saturate as tiles' other fp8 casts do (a
value past the largest finite one, or +-inf, gives +-that value; NaN stays NaN).  Only the
interpreter runs them: the GPU lowerings have no conversions for these formats and refuse them."""

import ml_dtypes
import numpy as np
import pytest

import tiles
import tiles.language as tl

FNUZ = [(tl.float8e4b8, ml_dtypes.float8_e4m3fnuz), (tl.float8e5b16, ml_dtypes.float8_e5m2fnuz)]
IDS = ["e4b8", "e5b16"]
REFUSED = "dtype float8e(4b8|5b16) is not supported on"
pytestmark = [pytest.mark.unsupported_on(name, REFUSED) for name in ("opencl", "cuda", "cuda-ptx", "cuda-sim")]
# around each format's largest finite value (e4b8: 240, e5b16: 57344) and smallest subnormal
# (e4b8: 2**-10, e5b16: 2**-17), ties included
EDGES = [0.0, -0.0, 1.0, 1.0625, 1.1875, -1.1875, 232.0, 239.0, 240.0, 247.0, 248.0, 249.0, 256.0,
         53248.0, 57344.0, 59392.0, 61440.0, 1e6, -1e6, np.inf, -np.inf, np.nan,
         2.0 ** -10, 2.0 ** -11, 1.5 * 2.0 ** -11, 2.0 ** -17, 2.0 ** -18, 1.5 * 2.0 ** -18, -(2.0 ** -19)]


@tiles.jit
def roundtrip_kernel(x_ptr, out_ptr, bits_ptr, n, DST: tl.constexpr, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask).to(DST, fp_downcast_rounding=ROUNDING)
    tl.store(out_ptr + offs, v.to(tl.float32), mask=mask)
    tl.store(bits_ptr + offs, v.to(tl.uint8, bitcast=True), mask=mask)


@tiles.jit
def widen_kernel(bits_ptr, f32_ptr, f16_ptr, sum_ptr, SRC: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(bits_ptr + offs).to(SRC, bitcast=True)
    tl.store(f32_ptr + offs, v.to(tl.float32))
    tl.store(f16_ptr + offs, v.to(tl.float16))
    tl.store(sum_ptr + offs, v + v)


def _saturated(x, np_dst):
    """The reference cast: clip to the largest finite value (NaN kept), then ml_dtypes' rounding."""
    big = float(ml_dtypes.finfo(np_dst).max)
    with np.errstate(invalid="ignore"):
        return np.clip(x.astype(np.float64), -big, big).astype(np.float32).astype(np_dst)


def _same_bytes(got, want, x):
    bad = np.nonzero(got.view(np.uint8) != want.view(np.uint8))[0]
    assert bad.size == 0, [(float(x[i]), int(got.view(np.uint8)[i]), int(want.view(np.uint8)[i])) for i in bad[:8]]


@pytest.mark.parametrize("src", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("dst,np_dst", FNUZ, ids=IDS)
def test_cast_rounds_to_nearest_even_and_saturates(rng, src, dst, np_dst):
    with np.errstate(over="ignore"):
        x = np.concatenate([np.array(EDGES), rng.standard_normal(60) * 50, rng.standard_normal(40) * 1e-3])
        x = x.astype(src)
    n = x.size
    out, bits = np.zeros(n, np.float32), np.zeros(n, np.uint8)
    roundtrip_kernel[(1,)](x, out, bits, n, DST=dst, ROUNDING=None, BLOCK=256)
    want = _saturated(x.astype(np.float64), np_dst)
    _same_bytes(bits, want, x)
    np.testing.assert_array_equal(out, want.astype(np.float32))
    assert bits[np.isnan(x)].tolist() == [0x80] * int(np.isnan(x).sum())
    assert bits[x == 0].tolist() == [0] * int((x == 0).sum())  # -0.0 becomes +0: there is no -0


@pytest.mark.parametrize("dst,np_dst", FNUZ, ids=IDS)
def test_round_toward_zero(rng, dst, np_dst):
    x = np.concatenate([np.array(EDGES), rng.standard_normal(60) * 50]).astype(np.float32)
    out, bits = np.zeros(x.size, np.float32), np.zeros(x.size, np.uint8)
    roundtrip_kernel[(1,)](x, out, bits, x.size, DST=dst, ROUNDING="rtz", BLOCK=128)
    table = np.arange(256, dtype=np.uint8).view(np_dst).astype(np.float64)
    grid = np.unique(table[np.isfinite(table) & (table >= 0)])
    mag = np.abs(x.astype(np.float64))
    below = grid[np.clip(np.searchsorted(grid, mag, side="right") - 1, 0, None)]
    want = np.where(np.isnan(x), np.nan, np.copysign(below, x)).astype(np.float32).astype(np_dst)
    _same_bytes(bits, want, x)


@pytest.mark.parametrize("src,np_src", FNUZ, ids=IDS)
def test_every_byte_widens_exactly(src, np_src):
    """All 256 encodings decode as ml_dtypes does (0x80 is NaN); a + a rounds once, saturating."""
    bits = np.arange(256, dtype=np.uint8)
    f32, f16, sums = np.zeros(256, np.float32), np.zeros(256, np.float16), np.zeros(256, np_src)
    widen_kernel[(1,)](bits, f32, f16, sums, SRC=src, BLOCK=256)
    ref = bits.view(np_src).astype(np.float64)
    np.testing.assert_array_equal(f32, ref.astype(np.float32))
    np.testing.assert_array_equal(f16, ref.astype(np.float16))
    assert np.isnan(f32[0x80]) and np.isnan(f32).sum() == 1
    _same_bytes(sums, _saturated(ref * 2, np_src), ref)


def test_numpy_and_torch_arrays_of_fnuz_types(rng):
    x = rng.standard_normal(50).astype(ml_dtypes.float8_e4m3fnuz)
    out, bits = np.zeros(50, np.float32), np.zeros(50, np.uint8)
    roundtrip_kernel[(1,)](x, out, bits, 50, DST=tl.float8e5b16, ROUNDING=None, BLOCK=64)
    _same_bytes(bits, x.astype(np.float32).astype(ml_dtypes.float8_e5m2fnuz), x)
    torch = pytest.importorskip("torch")
    t = torch.tensor(x.astype(np.float32)).to(torch.float8_e4m3fnuz)
    roundtrip_kernel[(1,)](t, out, bits, 50, DST=tl.float8e4b8, ROUNDING=None, BLOCK=64)
    np.testing.assert_array_equal(out, x.astype(np.float32))


@tiles.jit
def widen_any_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(tl.float32))


def test_one_kernel_over_fp8_arrays_of_every_format(rng):
    """NumPy gives e4m3fn, e4m3fnuz and e5m2fnuz arrays the same ``dtype.str`` ('<V1'): each
    launch must still specialize on its own format, not reuse the previous one's kernel."""
    x = rng.standard_normal(64) * 4
    for np_dtype in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e5m2fnuz,
                     ml_dtypes.float8_e4m3fn):
        src = x.astype(np_dtype)
        out = np.zeros(64, np.float32)
        widen_any_kernel[(1,)](src, out, BLOCK=64)
        np.testing.assert_array_equal(out, src.astype(np.float32))
