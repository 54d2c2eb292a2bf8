"""float64 FMA in the interpreter is a*b+c rounded once, also where the product overflows,
underflows or mixes huge and tiny factors (checked against exact rational arithmetic)."""

import itertools
import math
from fractions import Fraction

import numpy as np

from tiles.core import dtypes as D
from tiles.core import floats

EDGES = [0.0, -0.0, 1.0, -1.0, 3.0, 0.1, 1e308, -1e308, 1.7976931348623157e308, 5e-324,
         2.2250738585072014e-308, 1e200, -1e200, 1e-200, 1e300, 1e-300, 1.5e154,
         math.inf, -math.inf, math.nan]


def exact_fma(a: float, b: float, c: float) -> float:
    if any(math.isnan(v) for v in (a, b, c)):
        return math.nan
    if math.isinf(a) or math.isinf(b):
        p = a * b
        if math.isnan(p) or (math.isinf(c) and (p > 0) != (c > 0)):
            return math.nan
        return p
    if math.isinf(c):
        return c
    v = Fraction(a) * Fraction(b) + Fraction(c)
    if v == 0:  # the sign of an exact zero follows IEEE's rule for x + y
        p = a * b
        return (p + c) if p != 0 else (0.0 if (math.copysign(1, p) != math.copysign(1, c)) else c)
    try:
        return float(v)
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return (np.isnan(got) & np.isnan(want)) | ((got == want) & (np.signbit(got) == np.signbit(want)))


def test_edge_values():
    a, b, c = (np.array(v) for v in zip(*itertools.product(EDGES, repeat=3)))
    got = floats.fma(a, b, c, D.float64)
    want = np.array([exact_fma(*t) for t in zip(a, b, c)])
    bad = ~_same(got, want)
    assert not bad.any(), list(zip(a[bad], b[bad], c[bad], got[bad], want[bad]))[:5]


def test_random_magnitudes(rng):
    a, b, c = rng.standard_normal((3, 5000)) * 10.0 ** rng.integers(-300, 300, (3, 5000))
    got = floats.fma(a, b, c, D.float64)
    want = np.array([exact_fma(*t) for t in zip(a, b, c)])
    assert _same(got, want).all()


def test_near_underflow(rng):
    # products and sums whose low parts fall under the smallest subnormal: an fma of
    # 0.895 * 5e-324 - 5e-324 is -0.47 * 5e-324, so -0.0 (Triton's interpreter and CUDA agree)
    n = 4000
    a = rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)
    b = np.ldexp(rng.uniform(1.0, 2.0, n), rng.integers(-1076, -960, n)) * rng.choice([-1.0, 1.0], n)
    c = -(a * b) * (1.0 + rng.standard_normal(n) * 2.0 ** -rng.integers(1, 55, n).astype(float))
    c[::7] = np.ldexp(rng.uniform(-4.0, 4.0, n // 7 + 1), -1074)[: len(c[::7])]  # a few subnormal multiples
    a[::11], b[::11] = b[::11], a[::11]  # the tiny factor first too
    got = floats.fma(a, b, c, D.float64)
    want = np.array([exact_fma(*t) for t in zip(a, b, c)])
    bad = ~_same(got, want)
    assert not bad.any(), list(zip(a[bad], b[bad], c[bad], got[bad], want[bad]))[:5]
    assert floats.fma(np.array(0.8954548101470481), np.array(5e-324), np.array(-5e-324), D.float64) == 0.0
    assert np.signbit(floats.fma(np.array(0.8954548101470481), np.array(5e-324), np.array(-5e-324), D.float64))
