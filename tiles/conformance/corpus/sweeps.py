"""Exhaustive and dense sweeps (thorough profile only), as a conformance test suite does them.

Conversions: every pair of element types, both rounding modes where a float narrows.  A source
of 16 bits or fewer is swept over every bit pattern; a 32/64-bit source over its special values
(NaN, +-inf, +-0.0, extremes, subnormals), every destination's limits and the values half a step
around them, fractions and halves, the exact midpoints between neighbouring values of a narrower
float destination (ties) and one source step either side of each, powers of two +-1 (the ties of
int -> float), and random bit patterns.  Compared bit for bit.

Math: every float32 math op over every bit pattern of float16 and bfloat16, and over a dense
stratified sweep of float32 and float64 (every exponent, both signs, spread mantissas), checked
against its ULP bound (``compare.OP_RULES``), loosened for float32 by the approximations the
backend declares (``Target.approximate``), as every math case is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import ml_dtypes
import numpy as np

import tiles
from tiles.core import dtypes as D
from tiles.core.dtypes import DType

from ..case import Case, case
from ..compare import EXACT, rule_for_ops
from ..profiles import Profile
from .casts import cast_kernel
from .math_fns import FUNCTIONS, math_kernel

FAMILY = "sweeps"
BLOCK = 1024
NARROW_FLOATS = (D.float16, D.bfloat16, D.float8e4nv, D.float8e5)
SWEPT_MATH = ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "erf")


def every_pattern(d: DType) -> np.ndarray:
    """Every value of a type of at most 16 bits, by bit pattern."""
    if d.is_bool:
        return np.array([False, True])
    bits = np.arange(2 ** d.bits, dtype=np.uint64).astype(f"u{d.itemsize}")
    return bits.view(d.np)


def _finite_sorted(d: DType) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        values = every_pattern(d).astype(np.float64)
    return np.unique(values[np.isfinite(values)])


def _ties(d: DType, src: DType) -> list[float]:
    """Midpoints between neighbouring finite values of the narrow float ``d``, one ``src`` step
    either side of each, and the midpoint past the largest value (overflow's rounding edge)."""
    v = _finite_sorted(d)
    mids = (v[:-1] + v[1:]) / 2
    top = v[-1] + (v[-1] - v[-2]) / 2
    mids = np.concatenate([mids, [top, -top]]).astype(src.np)
    up = np.nextafter(mids, np.array(np.inf, src.np))
    down = np.nextafter(mids, np.array(-np.inf, src.np))
    return np.concatenate([mids, up, down]).astype(np.float64).tolist()


def _limits(dst: DType) -> list[float]:
    if dst.is_bool:
        return [0.0, -0.0, 1.0, 0.5, -0.5]
    if dst.is_int:
        lo, hi = float(dst.min()), float(dst.max())
        return [lo - 1, lo - 0.5, lo, lo + 0.5, lo + 1, hi - 1, hi - 0.5, hi, hi + 0.5, hi + 1, 2 * hi + 2]
    info = ml_dtypes.finfo(dst.np)
    big, tiny, sub = float(info.max), float(info.tiny), float(info.smallest_subnormal)
    return [big, big * (1 + 2.0 ** -(info.nmant + 2)), big * 2, tiny, tiny / 2, sub, sub / 2, sub * 0.75]


def wide_source_values(src: DType, rng: np.random.Generator) -> np.ndarray:
    """The dense input set of a 32/64-bit source (every destination's hard values)."""
    values: list[float] = []
    if src.is_floating:
        info = ml_dtypes.finfo(src.np)
        values += [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, float(info.max), float(info.tiny),
                   float(info.smallest_subnormal)]
        values += [k / 4 for k in range(-100, 101)]
        for dst in D.ALL_DTYPES:
            if dst == D.float8e4b15:  # no ml_dtypes type (tests/language/test_fp8e4b15.py sweeps it)
                continue
            values += _limits(dst) + (_ties(dst, src) if dst in NARROW_FLOATS else [])
        values += [-v for v in values]
        wide = np.array(values, dtype=np.float64)
        with np.errstate(all="ignore"):
            out = wide.astype(src.np)
        if src == D.float64:  # float32 neighbours and the float64 values between them
            with np.errstate(invalid="ignore"):
                f = rng.integers(0, 2**32, 8192, dtype=np.uint64).astype(np.uint32).view(np.float32).astype(np.float64)
            f = np.where(np.isfinite(f), f, 1.0)
            step = np.abs(np.nextafter(f.astype(np.float32), np.float32(np.inf)).astype(np.float64) - f)
            out = np.concatenate([out, f + step / 2, f + step / 2 + np.spacing(f + step / 2), f + step / 4])
    else:
        lo, hi = int(src.min()), int(src.max())
        ints = {lo, lo + 1, hi, hi - 1, 0, 1, -1 if lo < 0 else 2}
        for k in range(src.bits - (1 if src.is_signed else 0)):
            ints |= {2**k - 1, 2**k, 2**k + 1, 3 * 2**k // 2}
            if src.is_signed:
                ints |= {-(2**k) - 1, -(2**k), -(2**k) + 1}
        for shift in range(src.bits - 24 if src.bits > 24 else 0):  # ties of float32 and float16 roundings
            ints |= {(1 << 24) + 1 << shift, (1 << 11) + 1 << shift}
        out = np.array(sorted(i for i in ints if lo <= i <= hi), dtype=object).astype(src.np)
    noise = rng.integers(0, 2**64, 16384, dtype=np.uint64).astype(f"u{src.itemsize}").view(src.np)
    return np.concatenate([out, noise])


def conversion_inputs(src: DType, rng: np.random.Generator) -> np.ndarray:
    return every_pattern(src) if src.bits <= 16 else wide_source_values(src, rng)


@functools.cache
def _size(inputs: Callable[[DType, np.random.Generator], np.ndarray], d: DType) -> int:
    """How many inputs ``inputs`` makes for ``d`` (the same for every seed): sizes the grid."""
    return inputs(d, np.random.default_rng(0)).size


def _conversion_case(src: DType, dst: DType, mode: str) -> Case:
    def make(rng: np.random.Generator) -> list:
        x = conversion_inputs(src, rng)
        return [x, np.zeros(x.size, dst.np), x.size]
    size = _size(conversion_inputs, src)
    return case(FAMILY, f"{mode}[{src}->{dst}]", cast_kernel, make, (tiles.cdiv(size, BLOCK),), {1: EXACT},
                constexprs={"DST": dst, "MODE": mode, "BLOCK": BLOCK})


def dense_floats(d: DType, rng: np.random.Generator) -> np.ndarray:
    """float16/bfloat16: every pattern; float32/float64: per exponent and sign, 128 mantissas (the
    smallest, the largest, the rest random)."""
    if d.bits <= 16:
        return every_pattern(d)
    frac_bits = 23 if d == D.float32 else 52
    exponents = np.arange(0, 256 if d == D.float32 else 2048)
    if d == D.float64:
        exponents = exponents[(exponents < 40) | ((exponents > 800) & (exponents < 1250)) | (exponents > 2008)]
    mant = rng.integers(0, 2**frac_bits, (exponents.size, 128), dtype=np.uint64)
    mant[:, 0], mant[:, 1] = 0, 2**frac_bits - 1
    bits = (exponents.astype(np.uint64)[:, None] << np.uint64(frac_bits)) | mant
    bits = np.concatenate([bits.reshape(-1), bits.reshape(-1) | (np.uint64(1) << np.uint64(d.bits - 1))])
    return bits.astype(f"u{d.itemsize}").view(d.np)


def _math_case(fn: str, d: DType) -> Case:
    op, _ = FUNCTIONS[fn]

    def make(rng: np.random.Generator) -> list:
        x = dense_floats(d, rng)
        return [x, np.zeros(x.size, d.np), x.size]
    size = _size(dense_floats, d)
    return case(FAMILY, f"{fn}[{d}]", math_kernel, make, (tiles.cdiv(size, BLOCK),), {1: rule_for_ops([op])},
                constexprs={"FN": fn, "BLOCK": BLOCK})


def cases(profile: Profile) -> list[Case]:
    if profile.name == "ci":
        return []
    dtypes = profile.dtypes
    out = [_conversion_case(s, t, "convert") for s in dtypes for t in dtypes if s != t]
    out += [_conversion_case(s, t, "rtz") for s in profile.sweep((D.float32, D.float64))
            for t in profile.sweep(NARROW_FLOATS + ((D.float32,) if s == D.float64 else ()))]
    out += [_math_case(fn, d) for fn in SWEPT_MATH
            for d in profile.sweep((D.float16, D.bfloat16, D.float32, D.float64))]
    return out
