"""Elementwise math functions against NumPy, including edge values."""

import math

import numpy as np
import pytest
from lang_reference import random_values

import tiles
import tiles.language as tl
from tiles.core.ops import Op


@tiles.jit
def math_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    if FN == "exp":
        y = tl.exp(x)
    elif FN == "exp2":
        y = tl.exp2(x)
    elif FN == "log":
        y = tl.log(x)
    elif FN == "log2":
        y = tl.log2(x)
    elif FN == "sqrt":
        y = tl.sqrt(x)
    elif FN == "rsqrt":
        y = tl.rsqrt(x)
    elif FN == "sin":
        y = tl.sin(x)
    elif FN == "cos":
        y = tl.cos(x)
    elif FN == "erf":
        y = tl.erf(x)
    elif FN == "floor":
        y = tl.floor(x)
    elif FN == "ceil":
        y = tl.ceil(x)
    elif FN == "abs":
        y = tl.abs(x)
    elif FN == "sigmoid":
        y = tl.sigmoid(x)
    else:
        y = tl.math.sqrt_rn(x)
    tl.store(out_ptr + offs, y, mask=offs < n)


REFERENCES = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x), "sin": np.sin, "cos": np.cos,
    "erf": np.vectorize(math.erf, otypes=[np.float64]), "floor": np.floor, "ceil": np.ceil,
    "abs": np.abs, "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "sqrt_rn": np.sqrt,
}


@pytest.mark.parametrize("fn", sorted(REFERENCES))
@pytest.mark.parametrize("dtype,np_dtype,rtol", [(tl.float32, np.float32, 2e-6),
                                                 (tl.float64, np.float64, 1e-13),
                                                 (tl.float16, np.float16, 2e-3)])
def test_math_function(rng, fn, dtype, np_dtype, rtol, backend):
    atol = rtol * 1e-3
    if dtype == tl.float32:  # a float32 op the backend computes by a declared approximation keeps its bound
        declared = {op: (r, a) for op, r, a in tiles.backends.registry.get(backend).target().approximate}
        op = getattr(Op, fn.upper(), None)
        if op in declared:
            rtol, atol = max(rtol, declared[op][0]), max(atol, declared[op][1])
    x = random_values(rng, dtype, 45)
    x[-8:] = (rng.random(8) * 3).astype(np_dtype)  # some values inside every function's domain
    x[x.size // 2] = np_dtype(0.5)
    out = np.empty_like(x)
    math_kernel[(1,)](x, out, x.size, FN=fn, BLOCK=64)
    with np.errstate(all="ignore"):
        want = REFERENCES[fn](x.astype(np.float64)).astype(np_dtype)
        if fn == "sigmoid":  # tl.sigmoid is 1 / (1 + exp(-x)) in the input's dtype: exp may overflow
            e = np.exp(-x.astype(np.float64)).astype(np_dtype).astype(np.float64)
            want = (1 / (1 + e)).astype(np_dtype)
    assert out.dtype == np_dtype
    np.testing.assert_allclose(out.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=True)


@tiles.jit
def misc_kernel(x_ptr, y_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.load(z_ptr + offs)
    tl.store(out_ptr + offs, tl.fma(x, y, z))
    tl.store(out_ptr + BLOCK + offs, tl.clamp(x, -0.5, 0.5))
    tl.store(out_ptr + 2 * BLOCK + offs, tl.math.div_rn(x, y))
    tl.store(out_ptr + 3 * BLOCK + offs, tl.fdiv(x, y))
    tl.store(out_ptr + 4 * BLOCK + offs, tl.where(tl.isnan(x), 1.0, 0.0))


def test_fma_clamp_div_isnan(rng):
    x, y, z = (random_values(rng, tl.float32, 32) for _ in range(3))
    out = np.empty(5 * 32, np.float32)
    misc_kernel[(1,)](x, y, z, out, BLOCK=32)
    with np.errstate(all="ignore"):
        fma = (x.astype(np.float64) * y + z).astype(np.float32)  # exact product, one rounding
        np.testing.assert_array_equal(out[:32], fma)
        # without propagate_nan a NaN loses to the bounds, like max.f32/min.f32 do
        np.testing.assert_array_equal(out[32:64], np.where(np.isnan(x), -0.5, np.clip(x, -0.5, 0.5)))
        np.testing.assert_array_equal(out[64:96], x / y)  # div_rn: IEEE on every backend
        # fdiv without ieee_rounding is ``/``: within the bound a backend declares for it (cuda: div.full.f32)
        rtol, atol = next(((r, a) for o, r, a in tiles.backends.registry.default().target().approximate
                           if o is Op.DIV), (0.0, 0.0))
        np.testing.assert_allclose(out[96:128], x / y, rtol=rtol, atol=atol, equal_nan=True)
    np.testing.assert_array_equal(out[128:], np.isnan(x).astype(np.float32))


@tiles.jit
def umulhi_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.umulhi(tl.load(x_ptr + offs), tl.load(y_ptr + offs)))


@pytest.mark.parametrize("dtype,bits", [(np.uint32, 32), (np.int32, 32), (np.uint64, 64), (np.int64, 64)])
def test_umulhi(rng, dtype, bits):
    """Unsigned on every type, as Triton's (verified on its interpreter and its TTIR, tt.mulhiui):
    the high half of the product of the operands' bit patterns, read back in the operand type."""
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 16, dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, 16, dtype=dtype, endpoint=True)
    x[0], y[0] = info.max, info.max
    x[1], y[1] = info.min, -1 if info.min < 0 else info.max
    out = np.empty(16, dtype)
    umulhi_kernel[(1,)](x, y, out, BLOCK=16)
    mask = (1 << bits) - 1
    want = [((int(a) & mask) * (int(b) & mask)) >> bits for a, b in zip(x, y)]
    want = [w - (1 << bits) if info.min < 0 and w >= 1 << (bits - 1) else w for w in want]
    np.testing.assert_array_equal(out, np.array(want, dtype=dtype))


@tiles.jit
def int_math_kernel(x_ptr, out_ptr):
    tl.exp(tl.load(x_ptr + tl.arange(0, 4)))


def test_math_on_ints_is_rejected():
    with pytest.raises(tiles.CompilationError, match="floating-point"):
        int_math_kernel[(1,)](np.ones(4, np.int32), np.ones(4, np.int32))


@tiles.jit
def directed_division_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    from tiles.language.extra.cuda import libdevice
    o = tl.arange(0, BLOCK)
    m = o < n
    x = tl.load(x_ptr + o, mask=m)
    y = tl.load(y_ptr + o, mask=m)
    tl.store(out_ptr + o, libdevice.div_rd(x, y), mask=m)
    tl.store(out_ptr + n + o, libdevice.div_ru(x, y), mask=m)
    tl.store(out_ptr + 2 * n + o, libdevice.div_rz(x, y), mask=m)


def test_directed_division_is_the_exact_quotient_rounded():
    """libdevice.div_rd/div_ru/div_rz (FlagGems' floor and trunc division) against exact rational
    arithmetic: ties to a float32, overflow, subnormal quotients, signed zeros, inf and NaN."""
    from fractions import Fraction
    rng = np.random.default_rng(5)
    n = 200
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(np.float32)
    y = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(np.float32)
    edges = [(1, 3), (-1, 3), (6, 3), (1e-45, 3), (-1e-45, 3), (3e38, 1e-10), (-3e38, 1e-10), (1e-30, -1e30),
             (-0.0, 5), (0.0, -5), (np.inf, 2), (-7, np.inf), (np.nan, 1), (1, 0), (-1, 0)]
    x[:len(edges)], y[:len(edges)] = zip(*edges)
    out = np.zeros(3 * n, np.float32)
    directed_division_kernel[(1,)](x, y, out, n, BLOCK=256)
    top = Fraction(float(np.finfo(np.float32).max))
    for i, (a, b) in enumerate(zip(x.tolist(), y.tolist())):
        got = out[i::n].tolist()
        if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
            with np.errstate(all="ignore"):
                want = float(np.float32(a) / np.float32(b))
            assert all(g == want or (math.isnan(g) and math.isnan(want)) for g in got), (a, b, got)
            continue
        q = Fraction(a) / Fraction(b)
        if abs(q) > top:
            big, inf = np.float32(math.copysign(top, q)), np.float32(math.copysign(math.inf, q))
            lower, upper = (big, inf) if q > 0 else (inf, big)
        else:
            near = np.float32(float(q))
            lower = near if Fraction(float(near)) <= q else np.nextafter(near, np.float32(-np.inf))
            upper = near if Fraction(float(near)) >= q else np.nextafter(near, np.float32(np.inf))
        toward_zero = upper if q < 0 else lower
        if q == 0:
            lower = upper = toward_zero = np.float32(math.copysign(0.0, a) * math.copysign(1.0, b))
        assert got == [float(lower), float(upper), float(toward_zero)], (a, b, got)
        assert [math.copysign(1, g) for g in got] == [math.copysign(1, float(v)) for v in (lower, upper, toward_zero)]
