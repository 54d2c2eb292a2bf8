"""Casts (.to / tl.cast), bitcasts, bfloat16 and fp8 conversions, rounding modes."""

import ml_dtypes
import numpy as np
import pytest
from lang_reference import NUMPY, random_values, wrap_int

import tiles
import tiles.language as tl


@tiles.jit
def cast_kernel(x_ptr, out_ptr, n, DST: tl.constexpr, BITCAST: tl.constexpr, ROUNDING: tl.constexpr,
                BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x.to(DST, bitcast=BITCAST, fp_downcast_rounding=ROUNDING), mask=offs < n)


def run_cast(x, dst, bitcast=False, rounding=None, out_np=None):
    out = np.empty(x.size, dtype=out_np or NUMPY.get(dst, None) or dst.np)
    cast_kernel[(1,)](x, out, x.size, DST=dst, BITCAST=bitcast, ROUNDING=rounding, BLOCK=64)
    return out


def same(got, want):
    assert got.dtype == want.dtype
    if want.dtype.kind in "fV":
        got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dst", [tl.float16, tl.bfloat16, tl.float64])
def test_float32_to_other_floats_rounds_to_nearest_even(rng, dst):
    x = random_values(rng, tl.float32, 50)
    x[:4] = [65520.0, 1e-8, 3.0000001, np.float32(1) + np.float32(2**-11)]  # fp16 overflow, subnormal, ties
    same(run_cast(x, dst), x.astype(NUMPY[dst]))


@pytest.mark.parametrize("dst,np_dst", [(tl.float8e5, ml_dtypes.float8_e5m2),
                                        (tl.float8e4nv, ml_dtypes.float8_e4m3fn)])
def test_fp8_round_trip(rng, dst, np_dst):
    x = (rng.standard_normal(50) * 8).astype(np.float32)
    x[:3] = [0.0, -0.0, np.nan]
    down = run_cast(x, dst, out_np=np_dst)
    same(down, x.astype(np_dst))
    up = np.empty(50, np.float32)
    cast_kernel[(1,)](down, up, 50, DST=tl.float32, BITCAST=False, ROUNDING=None, BLOCK=64)
    same(up, down.astype(np.float32))


def test_round_toward_zero_downcast(rng):
    x = random_values(rng, tl.float32, 50)
    got = run_cast(x, tl.bfloat16, rounding="rtz")
    truncated = (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    finite = np.isfinite(x)
    same(got[finite], truncated[finite].astype(ml_dtypes.bfloat16))
    assert np.isnan(got[np.isnan(x)].astype(np.float32)).all()


@pytest.mark.parametrize("src,dst", [(tl.float32, tl.float16), (tl.float32, tl.bfloat16), (tl.float64, tl.float32),
                                     (tl.float64, tl.float16), (tl.float64, tl.bfloat16)])
def test_round_toward_zero_downcasts_match_the_reference(rng, src, dst):
    """Every rtz downcast against floats.narrow: overflow gives the largest finite value, halfway
    and just-below-a-step values truncate, subnormals of both formats, infinities and NaN stay."""
    from tiles.core.floats import narrow
    big = float(dst.max())
    tiny = float(np.finfo(NUMPY[dst]).smallest_subnormal) if dst != tl.bfloat16 else 2.0 ** -133
    edges = [big * 1.5, -big * 1.5, big, np.nextafter(big, np.inf), 1 + 2.0 ** -11, 1 - 2.0 ** -30,
             -(1 + 2.0 ** -8 + 2.0 ** -9), tiny, -tiny * 1.5, tiny * 0.75, np.inf, -np.inf, np.nan, -0.0]
    x = np.concatenate([random_values(rng, src, 50), np.array(edges)]).astype(NUMPY[src])
    got = run_cast(x, dst, rounding="rtz")
    same(got, narrow(x.astype(np.float64), dst, "rtz").astype(got.dtype))


@pytest.mark.parametrize("dst", [tl.int8, tl.int32, tl.uint8, tl.int64])
def test_float_to_int_truncates_and_saturates(dst):
    info = np.iinfo(NUMPY[dst])
    x = np.array([1.9, -1.9, 0.5, -0.5, 1e20, -1e20, np.nan, np.inf, -np.inf, 100.7, -0.0, 3.0],
                 dtype=np.float32)
    want = np.array([1, -1 if info.min < 0 else 0, 0, 0, info.max, info.min, 0, info.max, info.min,
                     100, 0, 3], dtype=NUMPY[dst])
    same(run_cast(x, dst), want)


@pytest.mark.parametrize("src,dst", [(tl.int32, tl.int8), (tl.int8, tl.uint32), (tl.uint16, tl.int16),
                                     (tl.int64, tl.int32), (tl.uint8, tl.int64), (tl.int32, tl.float32),
                                     (tl.int64, tl.float16), (tl.uint32, tl.float64), (tl.int16, tl.int1)])
def test_int_conversions(rng, src, dst):
    x = random_values(rng, src, 40)
    if dst == tl.int1:
        want = x != 0
    elif dst in (tl.float16, tl.float32, tl.float64):
        want = x.astype(NUMPY[dst])
    else:
        want = np.array([wrap_int(int(v), dst) for v in x], dtype=NUMPY[dst])
    same(run_cast(x, dst), want)


@pytest.mark.parametrize("src,dst", [(tl.float32, tl.int32), (tl.float32, tl.uint32), (tl.int32, tl.float32),
                                     (tl.float16, tl.int16), (tl.bfloat16, tl.uint16), (tl.float64, tl.int64),
                                     (tl.uint8, tl.int8)])
def test_bitcast_keeps_bits(rng, src, dst):
    x = random_values(rng, src, 40)
    same(run_cast(x, dst, bitcast=True), x.view(NUMPY[dst]))


def test_bitcast_needs_equal_widths():
    with pytest.raises(tiles.CompilationError, match="equal widths"):
        run_cast(np.ones(4, np.float32), tl.int16, bitcast=True)


def test_bool_to_float_and_back():
    x = np.array([True, False, True, True], dtype=np.bool_)
    same(run_cast(x, tl.float32), x.astype(np.float32))
    f = np.array([0.0, -0.0, 2.5, np.nan], dtype=np.float32)
    same(run_cast(f, tl.int1), np.array([False, False, True, True]))
