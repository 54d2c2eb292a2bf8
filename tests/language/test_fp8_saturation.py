"""Conversions to fp8 saturate as Triton's do on CUDA (``cvt.rn.satfinite``): a value past the
format's largest finite one, or +-inf, gives +-that value; NaN stays NaN.  Checked on every
backend against expectations built from ml_dtypes alone (clip, then convert; or, toward zero, the
nearest format value below in magnitude from the table of all 256 bytes)."""

import ml_dtypes
import numpy as np
import pytest

import tiles
import tiles.language as tl

FP8 = [(tl.float8e4nv, ml_dtypes.float8_e4m3fn), (tl.float8e5, ml_dtypes.float8_e5m2)]
# measured with Triton 3.6 on an H200, float32 and float16 sources alike
TRITON_ON_H200 = {
    "float8e4nv": [(470.0, 448.0), (1e6, 448.0), (np.inf, 448.0), (-np.inf, -448.0), (np.nan, np.nan)],
    "float8e5": [(60000.0, 57344.0), (61440.0, 57344.0), (70000.0, 57344.0), (np.inf, 57344.0),
                 (-np.inf, -57344.0), (np.nan, np.nan)],
}
# around each maximum: e4m3's 464 is the tie between 448 and 480 (which e4m3fn lacks), e5m2's
# 59392 the tie between 57344 and 61440 (its infinity); ml_dtypes gives NaN past 464, inf from 61440
EDGES = [0.0, -0.0, 416.0, 432.0, 440.0, 447.0, 448.0, 449.0, 463.0, 464.0, 465.0, 472.0, 480.0, -500.0,
         53248.0, 57344.0, 57345.0, 59391.0, 59392.0, 59393.0, 61439.0, -65504.0, 1e30, -1e30,
         2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 2.0 ** -14, 2.0 ** -16, 2.0 ** -17, -(2.0 ** -17), 1.0625, -1.1875, 3.3]


@tiles.jit
def convert_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x.to(DST, fp_downcast_rounding=ROUNDING), mask=offs < n)


@tiles.jit
def value_kernel(a_ptr, sum_ptr, abs_ptr, const_ptr, DST: tl.constexpr, BIG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs)
    tl.store(sum_ptr + offs, a + a)
    tl.store(abs_ptr + offs, tl.abs(a))
    tl.store(const_ptr + offs, tl.full([BLOCK], BIG, DST))


def _convert(x, dst, np_dst, rounding=None):
    out = np.zeros(x.size, np_dst)
    convert_kernel[(1,)](x, out, x.size, DST=dst, ROUNDING=rounding, BLOCK=128)
    return out


def _saturated(x, np_dst):
    big = float(ml_dtypes.finfo(np_dst).max)
    return np.clip(x.astype(np.float64), -big, big).astype(np.float32).astype(np_dst)


def _toward_zero(x, np_dst, keeps_inf):
    values = np.arange(256, dtype=np.uint8).view(np_dst).astype(np.float64)
    grid = np.unique(values[np.isfinite(values) & (values >= 0)])
    mag = np.abs(x.astype(np.float64))
    below = grid[np.clip(np.searchsorted(grid, mag, side="right") - 1, 0, None)]
    out = np.where(np.isinf(mag) & keeps_inf, np.inf, below)
    out = np.where(np.isnan(mag), np.nan, np.copysign(out, x.astype(np.float64)))
    return out.astype(np.float32).astype(np_dst)


def _same_fp8(got, want, x):
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    real = ~np.isnan(w)
    bad = np.nonzero(got.view(np.uint8)[real] != want.view(np.uint8)[real])[0]
    assert bad.size == 0, [(float(x[real][i]), float(g[real][i]), float(w[real][i])) for i in bad[:8]]


@pytest.mark.parametrize("src", [np.float32, np.float16])
@pytest.mark.parametrize("dst,np_dst", FP8, ids=["e4m3", "e5m2"])
def test_conversion_saturates(rng, src, dst, np_dst):
    measured = TRITON_ON_H200[dst.name]
    with np.errstate(over="ignore"):
        x = np.concatenate([np.array([v for v, _ in measured] + EDGES), rng.standard_normal(40) * 2e4]).astype(src)
    got = _convert(x, dst, np_dst)
    _same_fp8(got, _saturated(x, np_dst), x)
    got_measured = got[:len(measured)].astype(np.float64)
    np.testing.assert_array_equal(got_measured, [w for _, w in measured])


@pytest.mark.parametrize("dst,np_dst", FP8, ids=["e4m3", "e5m2"])
def test_rounding_boundaries(dst, np_dst):
    x = np.array([447.0, 463.0, 464.0, 465.0, 472.0, 57345.0, 59392.0, 59393.0, 61439.0], np.float32)
    want = [448.0] * 9 if dst == tl.float8e4nv else [448.0] * 5 + [57344.0] * 4
    assert _convert(x, dst, np_dst).astype(np.float64).tolist() == want


@pytest.mark.parametrize("dst,np_dst", [
    pytest.param(*FP8[0], id="e4m3", marks=[pytest.mark.unsupported_on("cuda", "only float8e5"),
                                           pytest.mark.unsupported_on("cuda-ptx", "only float8e5")]),
    pytest.param(*FP8[1], id="e5m2")])
def test_round_toward_zero(rng, dst, np_dst):
    """Finite overflow gives the largest finite value; +-inf stays infinite in e5m2 (Triton's rtz
    path, float32 -> float16 rtz then the high byte, keeps it) and saturates in e4m3, which has none."""
    x = np.concatenate([np.array([np.inf, -np.inf, np.nan] + EDGES), rng.standard_normal(40) * 2e4])
    x = x.astype(np.float32)
    got = _convert(x, dst, np_dst, rounding="rtz")
    _same_fp8(got, _toward_zero(x, np_dst, keeps_inf=dst == tl.float8e5), x)


@pytest.mark.parametrize("const", [1e6, -1e6, np.inf, -np.inf])
@pytest.mark.parametrize("dst,np_dst", FP8, ids=["e4m3", "e5m2"])
def test_arithmetic_and_constants_saturate_finite_values(dst, np_dst, const):
    """Arithmetic results and constants saturate past the largest finite value, but an infinity is a
    float8e5 value (Triton's abs and its folded tl.full keep it): only a cast to nearest clips it."""
    big = float(ml_dtypes.finfo(np_dst).max)
    a = np.array([big, -big, 1.0, -0.0, np.nan, np.inf, -np.inf, 2.0]).astype(np_dst)  # e4m3: inf -> NaN
    sums, absolute, consts = (np.zeros(8, np_dst) for _ in range(3))
    value_kernel[(1,)](a, sums, absolute, consts, DST=dst, BIG=const, BLOCK=8)
    a64 = a.astype(np.float64)
    np.testing.assert_array_equal(sums.astype(np.float64), np.where(np.isinf(a64), a64, np.clip(a64 * 2, -big, big)))
    np.testing.assert_array_equal(absolute.astype(np.float64), np.abs(a64))
    want = const if dst == tl.float8e5 and np.isinf(const) else np.copysign(big, const)
    assert consts.astype(np.float64).tolist() == [want] * 8
