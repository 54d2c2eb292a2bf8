"""The elementwise rules of tiles.core.semantics, checked against exact Python."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from tiles.core import attrs as at
from tiles.core import dtypes as dt
from tiles.core import semantics
from tiles.core.ir import TileType
from tiles.core.ops import ELEMENTWISE, Op
from tiles.core.semantics import apply, convert
from tiles.interp import INTERP_RULES

INTS = [dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8, dt.uint16, dt.uint32, dt.uint64]


def tt(d, n=1):
    return TileType(d, (n,))


def wrap(v: int, d) -> int:
    v &= (1 << d.bits) - 1
    return v - (1 << d.bits) if d.is_signed and v >= 1 << (d.bits - 1) else v


def int_samples(d, rng, n=200):
    lo, hi = d.min(), d.max()
    edge = [lo, lo + 1, -1, 0, 1, 2, hi - 1, hi, 7, -7]
    edge = [e for e in edge if lo <= e <= hi]
    rand = rng.integers(lo, hi, size=n, endpoint=True, dtype=d.np).tolist()
    a = np.array(edge * len(edge) + rand, d.np)
    b = np.array([e for e in edge for _ in edge] + rng.permutation(rand).tolist(), d.np)
    return a, b


def c_div(x, y):
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


@pytest.mark.parametrize("d", INTS, ids=str)
def test_integer_ops_match_c(d):
    rng = np.random.default_rng(1)
    a, b = int_samples(d, rng)
    ref = {
        Op.ADD: lambda x, y: x + y, Op.SUB: lambda x, y: x - y, Op.MUL: lambda x, y: x * y,
        Op.AND: lambda x, y: x & y, Op.OR: lambda x, y: x | y, Op.XOR: lambda x, y: x ^ y,
        Op.MAXIMUM: max, Op.MINIMUM: min,
        Op.IDIV: lambda x, y: -1 if y == 0 else c_div(x, y),
        Op.MOD: lambda x, y: x if y == 0 else x - y * c_div(x, y),
        Op.UMULHI: lambda x, y: ((x % (1 << d.bits)) * (y % (1 << d.bits))) >> d.bits,  # unsigned, as Triton's
    }
    for op, fn in ref.items():
        if op is Op.UMULHI and d.bits < 32:
            continue
        got = apply(op, None, [a, b], tt(d, len(a)))
        assert got.dtype == d.np
        want = [wrap(fn(int(x), int(y)), d) for x, y in zip(a, b)]
        assert got.tolist() == want, op


@pytest.mark.parametrize("d", INTS, ids=str)
def test_shifts_out_of_range(d):
    a = np.array([-5 if d.is_signed else 5, 6, 1, 3], d.np)
    b = np.array([d.bits, d.bits + 3, 0, d.bits - 1], d.np)
    shl = apply(Op.SHL, None, [a, b], tt(d, 4)).tolist()
    shr = apply(Op.SHR, None, [a, b], tt(d, 4)).tolist()
    assert shl == [0, 0, 1, wrap(3 << (d.bits - 1), d)]
    assert shr == [-1 if d.is_signed else 0, 0, 1, 0]
    if d.is_signed:
        neg = apply(Op.SHL, None, [np.array([1], d.np), np.array([-1], d.np)], tt(d))
        assert neg.tolist() == [0]


def test_int1_arithmetic_is_one_bit():
    t, f = np.array([True, True, False, False]), np.array([True, False, True, False])
    assert apply(Op.ADD, None, [t, f], tt(dt.int1, 4)).tolist() == [False, True, True, False]
    assert apply(Op.MUL, None, [t, f], tt(dt.int1, 4)).tolist() == [True, False, False, False]
    assert apply(Op.NOT, None, [t], tt(dt.int1, 4)).tolist() == [False, False, True, True]


def test_float_min_max_nan_rules():
    a = np.array([np.nan, 1.0, np.nan, -0.0], np.float32)
    b = np.array([2.0, np.nan, np.nan, 3.0], np.float32)
    mx = apply(Op.MAXIMUM, None, [a, b], tt(dt.float32, 4))
    assert mx[:2].tolist() == [2.0, 1.0] and np.isnan(mx[2]) and mx[3] == 3.0
    mxn = apply(Op.MAXIMUM_NAN, None, [a, b], tt(dt.float32, 4))
    assert np.isnan(mxn[:3]).all() and mxn[3] == 3.0
    mn = apply(Op.MINIMUM, None, [a, b], tt(dt.float32, 4))
    assert mn[:2].tolist() == [2.0, 1.0]


SIGNALING = {np.float16: (0x7D01, np.uint16), np.float32: (0xFF8CD21C, np.uint32),
             np.float64: (0x7FF0000000000001, np.uint64)}


@pytest.mark.parametrize("np_dtype", list(SIGNALING), ids=lambda d: d.__name__)
@pytest.mark.parametrize("n", [1, 4, 15, 16, 64])
def test_signaling_nan_loses_min_max_at_any_length(np_dtype, n):
    # NumPy's fmin/fmax keep a signaling NaN on short arrays (C's fmin) and drop it on long ones
    # (SIMD); PTX min/max (compiled Triton) drop any NaN: the interpreter must not depend on n
    bits, uint = SIGNALING[np_dtype]
    a = np.full(n, 2.5, np_dtype)
    a[::3] = np.array([bits], uint).view(np_dtype)[0]
    b = np.linspace(-3, 3, n).astype(np_dtype)
    d = {np.float16: dt.float16, np.float32: dt.float32, np.float64: dt.float64}[np_dtype]
    for op, ref in ((Op.MINIMUM, np.minimum), (Op.MAXIMUM, np.maximum)):
        for x, y in ((a, b), (b, a)):
            got = apply(op, None, [x, y], tt(d, n))
            want = np.where(np.isnan(x), y, np.where(np.isnan(y), x, ref(x, y)))
            np.testing.assert_array_equal(got, want)


def test_signaling_nan_loses_in_max_reductions():
    from tiles.core.kinds import ReduceKind
    from tiles.interp.reductions import _builtin
    for n in (4, 64):
        x = np.linspace(-1, 1, 2 * n).astype(np.float32).reshape(2, n)
        x[:, 0] = np.array([0x7FA00000], np.uint32).view(np.float32)[0]
        # (np.nanmax itself goes through fmax.reduce: a signaling NaN first spoils its answer)
        for kind, want in ((ReduceKind.MAX, np.where(np.isnan(x), -np.inf, x).max(1)),
                           (ReduceKind.MIN, np.where(np.isnan(x), np.inf, x).min(1))):
            np.testing.assert_array_equal(_builtin(kind, x, 1, scan=False), want)
            np.testing.assert_array_equal(_builtin(kind, x, 1, scan=True)[:, -1], want)


def test_float_division_mod_and_comparisons():
    a = np.array([1.0, -1.0, 0.0, 5.5, -5.5, np.nan], np.float32)
    b = np.array([0.0, 0.0, 0.0, 2.0, 2.0, 1.0], np.float32)
    q = apply(Op.DIV, None, [a, b], tt(dt.float32, 6))
    assert q[0] == np.inf and q[1] == -np.inf and np.isnan(q[2])
    r = apply(Op.MOD, None, [a, b], tt(dt.float32, 6))
    assert r[3] == 1.5 and r[4] == -1.5  # C fmod: the dividend's sign
    assert apply(Op.EQ, None, [a, a], tt(dt.int1, 6)).tolist() == [True] * 5 + [False]
    assert apply(Op.NE, None, [a, a], tt(dt.int1, 6)).tolist() == [False] * 5 + [True]


@pytest.mark.parametrize("d", [dt.float16, dt.bfloat16], ids=str)
def test_half_arithmetic_rounds_once(d):
    rng = np.random.default_rng(2)
    a = rng.standard_normal(1000).astype(d.np)
    b = rng.standard_normal(1000).astype(d.np)
    for op, fn in ((Op.ADD, np.add), (Op.MUL, np.multiply), (Op.DIV, np.divide)):
        got = apply(op, None, [a, b], tt(d, 1000))
        want = fn(a.astype(np.float64), b.astype(np.float64)).astype(np.float32).astype(d.np)
        assert got.dtype == d.np
        np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


def test_math_is_float64_rounded():
    x = np.linspace(0.01, 20, 500).astype(np.float32)
    for op, fn in ((Op.EXP, np.exp), (Op.LOG, np.log), (Op.SQRT, np.sqrt), (Op.SIN, np.sin),
                   (Op.RSQRT, lambda v: 1 / np.sqrt(v)), (Op.LOG2, np.log2), (Op.EXP2, np.exp2)):
        got = apply(op, None, [x], tt(dt.float32, 500))
        np.testing.assert_array_equal(got, fn(x.astype(np.float64)).astype(np.float32))
    got = apply(Op.ERF, None, [x], tt(dt.float32, 500))
    np.testing.assert_array_equal(got, np.array([math.erf(float(v)) for v in x], np.float32))
    h = x.astype(np.float16)
    assert apply(Op.EXP, None, [h], tt(dt.float16, 500)).dtype == np.float16


def test_abs_floor_ceil_isnan():
    i = np.array([-(2**31), -3, 4], np.int32)
    assert apply(Op.ABS, None, [i], tt(dt.int32, 3)).tolist() == [-(2**31), 3, 4]
    f = np.array([-1.5, 1.5, -0.0, np.nan], np.float32)
    assert apply(Op.FLOOR, None, [f], tt(dt.float32, 4))[:3].tolist() == [-2.0, 1.0, 0.0]
    assert apply(Op.CEIL, None, [f], tt(dt.float32, 4))[:2].tolist() == [-1.0, 2.0]
    assert apply(Op.ISNAN, None, [f], tt(dt.int1, 4)).tolist() == [False, False, False, True]


def test_cast_float_to_int_truncates_and_saturates():
    f = np.array([np.nan, np.inf, -np.inf, 1e20, -1e20, 2.9, -2.9, -0.5, 2147483647.0], np.float64)
    assert convert(f, dt.int32).tolist() == [0, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 2, -2, 0,
                                            2**31 - 1]
    assert convert(f, dt.uint8).tolist() == [0, 255, 0, 255, 0, 2, 0, 0, 255]
    assert convert(f, dt.int64)[3] == 2**63 - 1
    assert convert(f, dt.uint64)[3] == 2**64 - 1
    assert convert(f, dt.int1).tolist() == [True, True, True, True, True, True, True, True, True]


def test_cast_int_to_float_and_int_wrap():
    big = np.array([2**24 + 1, 2**53 + 1, -(2**63)], np.int64)
    assert convert(big, dt.float32).tolist() == [float(np.float32(2**24)), float(np.float32(2**53)),
                                                -(2.0**63)]
    assert convert(np.array([300, -1], np.int32), dt.uint8).tolist() == [44, 255]
    assert convert(np.array([True, False]), dt.float32).tolist() == [1.0, 0.0]


def test_cast_rounds_once_to_bfloat16_and_fp8():
    x = np.array([1 + 2**-8 + 2**-30, -(1 + 2**-8 + 2**-30)], np.float64)  # just above a tie
    got = convert(x, dt.bfloat16).astype(np.float64)
    assert got.tolist() == [1 + 2**-7, -(1 + 2**-7)]
    y = np.array([1 + 2**-4 + 2**-40], np.float64)
    assert convert(y, dt.float8e4nv).astype(np.float64).tolist() == [1 + 2**-3]
    # saturating as Triton on CUDA (cvt.rn.satfinite), not as ml_dtypes (NaN / inf)
    assert convert(np.array([1000.0], np.float32), dt.float8e4nv).astype(np.float32).tolist() == [448.0]
    assert convert(np.array([-1e6], np.float32), dt.float8e5).astype(np.float32).tolist() == [-57344.0]


def test_cast_round_toward_zero():
    x = np.array([1.9, -1.9, 70000.0, -np.inf, 1e-30], np.float32)
    got = convert(x, dt.float16, "rtz").astype(np.float64)
    assert got[0] < 1.9 and got[0] == float(np.nextafter(np.float16(1.9), np.float16(0)))
    assert got[1] == -got[0]
    assert got[2] == 65504.0 and got[3] == -np.inf and got[4] == 0.0
    e4 = convert(np.array([1000.0, -1000.0], np.float32), dt.float8e4nv, "rtz").astype(np.float32)
    assert e4.tolist() == [448.0, -448.0]


def test_cast_widening_is_exact():
    h = np.array([1.5, np.inf, np.nan, 65504], np.float16)
    w = convert(h, dt.float32)
    assert w.dtype == np.float32 and w[0] == 1.5 and w[1] == np.inf and np.isnan(w[2])
    b = np.array([3.0], ml_dtypes.bfloat16)
    assert convert(b, dt.float64).tolist() == [3.0]


def test_bitcast_and_where():
    f = np.array([1.0, -0.0], np.float32)
    bits = apply(Op.BITCAST, at.Cast(dt.int32), [f], tt(dt.int32, 2))
    assert bits.tolist() == [0x3F800000, -(2**31)]
    c = np.array([True, False])
    assert apply(Op.WHERE, None, [c, f, f * 0 + 7], tt(dt.float32, 2)).tolist() == [1.0, 7.0]


def exact_fma_f32(a, b, c):
    v = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    f = np.float32(float(v))
    cands = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    return min(cands, key=lambda x: (abs(Fraction(float(x)) - v), int(np.array(x).view(np.uint32)) & 1))


def test_fma_rounds_once():
    rng = np.random.default_rng(3)
    a = rng.standard_normal(400).astype(np.float32)
    b = rng.standard_normal(400).astype(np.float32)
    c = (-a.astype(np.float64) * b).astype(np.float32)  # heavy cancellation
    got = apply(Op.FMA, None, [a, b, c], tt(dt.float32, 400))
    want = [exact_fma_f32(x, y, z) for x, y, z in zip(a, b, c)]
    assert got.tolist() == [float(w) for w in want]
    a64, b64 = rng.standard_normal(300), rng.standard_normal(300)
    c64 = -(a64 * b64) * (1 + 2**-40)
    got64 = apply(Op.FMA, None, [a64, b64, c64], tt(dt.float64, 300))
    assert got64.tolist() == [float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in
                              zip(a64, b64, c64)]


def test_addptr_scales_by_element_size():
    p = np.array([1 << 44], np.int64)
    i = np.array([0, 1, -1], np.int32)
    got = apply(Op.ADDPTR, None, [p, i], TileType(dt.PointerType(dt.float64), (3,)))
    assert (got - (1 << 44)).tolist() == [0, 8, -8]


def test_every_op_has_a_rule():
    from tiles.core.ops import CONTROL
    missing = [op for op in Op if op not in CONTROL and op not in INTERP_RULES]
    assert not missing
    assert set(ELEMENTWISE) <= set(semantics.ELEMENTWISE_IMPL)
