"""The elementwise math functions of ``libdevice`` / ``tl.math``: one row per function.

Each row says what every layer shares: operand kinds and result type (the type rule), the
NumPy reference (the interpreter), the documented accuracy of the vendor libraries, and the
interval the tests draw inputs from.  Adding a function is adding a row; the backends spell it
in their own tables (a row without a spelling there is unsupported on that backend, with an
error naming it): ``backends/opencl/mathfns.py`` (OpenCL C), ``backends/llvm/mathfn.py`` (an
LLVM spelling that needs no math library, used on every LLVM target) and
``backends/llvm/libdevice.py`` (NVIDIA libdevice's symbols).  Functions that already have their
own IR op (exp, log, sqrt, floor, fma, fmod, ...) are not rows: ``tl.math`` / ``libdevice`` call
those ops.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .dtypes import DType, ScalarType, float32, float64, int1, int32, int64

Ref = Callable[..., np.ndarray]


@dataclass(frozen=True)
class MathFunction:
    """One function.  ``sig`` is ``operands>result``: ``f`` a float32/float64 operand, ``i`` an
    int32 (``fi``: the second operand converted to int32), ``n`` a 32/64-bit integer; result
    ``f`` (the float operand's type), ``n`` (the integer operand's type), ``b`` int1, ``i32``
    or ``i64``."""

    name: str
    sig: str
    ref: Ref                       # NumPy on float64 (or integer) arrays; rounded to the result type
    doc: str
    ulp: float = 0.0               # documented bound of the OpenCL / libdevice versions, in ulp
    atol: float = 0.0              # extra absolute bound in units of the dtype's epsilon
    domain: tuple[float, float] = (-10.0, 10.0)
    f32_only: bool = False         # float32 operands only (libdevice has no float64 version)
    native: bool = False           # the reference runs in the operand's own type (not float64)
    # Error of the SciPy reference itself in float64 (ulp, atol in eps), measured against mpmath at
    # 160 bits on ``domain``; float64 checks add it to the bound.
    ref_error64: tuple[float, float] = (0.0, 0.0)

    @property
    def operands(self) -> str:
        return self.sig.split(">")[0]

    @property
    def result(self) -> str:
        return self.sig.split(">")[1]

    @property
    def exact(self) -> bool:
        return self.ulp == 0 and self.atol == 0

    def result_dtype(self, operand: DType) -> DType:
        return {"f": operand, "n": operand, "b": int1, "i32": int32, "i64": int64}[self.result]


def _scipy(name: str, fallback: Callable[[float], float] | None = None) -> Ref:
    """scipy.special.<name> when SciPy is installed, else Python's math function element by element
    (a pole or domain error gives NaN there)."""
    def ref(*xs: np.ndarray) -> np.ndarray:
        try:
            import scipy.special as sp  # type: ignore[import-untyped]
        except ImportError:
            if fallback is None:
                raise RuntimeError(f"the interpreter computes {name} with SciPy: "
                                   "pip install scipy (or tiles[math])") from None
            return np.frompyfunc(_or_nan(fallback), len(xs), 1)(*xs).astype(np.float64)
        return np.asarray(getattr(sp, name)(*xs), dtype=np.float64)
    return ref


def _bessel(name: str, at_inf: Callable[[np.ndarray], np.ndarray]) -> Ref:
    """scipy's Bessel function with C's (and CUDA's) values at +-inf: j0 -> 0, j1 -> +-0,
    y0 / y1 -> 0 at +inf and NaN at -inf (SciPy gives NaN at both)."""
    ref = _scipy(name)

    def bessel(x: np.ndarray) -> np.ndarray:
        x = np.asarray(x)
        with np.errstate(invalid="ignore"):
            return np.where(np.isinf(x), at_inf(x), ref(x))
    return bessel


def _or_nan(fn: Callable[..., float]) -> Callable[..., float]:
    def safe(*x: float) -> float:
        try:
            return fn(*x)
        except (ValueError, OverflowError):
            return math.nan
    return safe


def _ilogb(x: np.ndarray) -> np.ndarray:
    """Unbiased exponent; 0 and NaN give INT_MIN, +-inf INT_MAX (CUDA's choice)."""
    _, e = np.frexp(x)
    out = (e.astype(np.int64) - 1).astype(np.int32)
    out = np.where(np.isinf(x), np.int32(2**31 - 1), out)
    return np.where((x == 0) | np.isnan(x), np.int32(-(2**31)), out).astype(np.int32)


def _logb(x: np.ndarray) -> np.ndarray:
    _, e = np.frexp(x)
    r = (e - 1).astype(np.float64)
    r = np.where(np.isinf(x), np.inf, r)
    r = np.where(x == 0, -np.inf, r)
    return np.where(np.isnan(x), np.nan, r)


def _saturating_int64(x: np.ndarray) -> np.ndarray:
    """float64 -> int64, saturating, NaN -> 0 (PTX cvt and OpenCL convert_long_sat)."""
    big = 2.0 ** 63
    out = np.where(np.isnan(x), 0.0, np.clip(x, -big, big))
    r = np.where(out >= big, 0, out).astype(np.int64)
    return np.where(out >= big, np.int64(2**63 - 1), r)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    t = np.trunc(x)
    return t + np.copysign((np.abs(x - t) >= 0.5).astype(x.dtype), x)


def _sinpi(x: np.ndarray, quarter_shift: int = 0) -> np.ndarray:
    """sin(pi x) (cos with ``quarter_shift`` 1): exact reduction to |f| <= 1/4, then one rounding."""
    r = np.remainder(x, 2.0)
    n = np.rint(2 * r)
    f = r - n / 2
    s, c = np.sin(np.pi * f), np.cos(np.pi * f)
    k = (n.astype(np.int64) + quarter_shift) % 4
    out = np.choose(np.where(np.isfinite(x), k, 0), [s, c, -s, -c])
    return np.where(np.isfinite(x), out, np.nan)


def _lgamma(x: np.ndarray) -> np.ndarray:
    """C's lgamma: +inf at +-inf; -ln|x| near 0 (where SciPy overflows to inf for subnormals)."""
    tiny = (np.abs(x) < 1e-300) & (x != 0)
    r = np.where(np.isinf(x), np.inf, _scipy("gammaln", math.lgamma)(np.where(tiny, 1.0, x)))
    return np.where(tiny, -np.log(np.abs(np.where(tiny, x, 1.0))), r)


def _div_rz(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """float32 x / y rounded toward zero: the float64 quotient of two float32 values is never
    within 2^-48 of a float32 it is not equal to, so truncating it is exact."""
    q = x / y
    r = q.astype(np.float32)
    over = np.abs(r.astype(np.float64)) > np.abs(q)
    return np.where(over, (r.view(np.int32) - 1).view(np.float32), r)


def _div_directed(up: bool) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """float32 x / y rounded toward +inf (``up``) or -inf: exact for the reason _div_rz is."""
    def f(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        q = x / y
        r = q.astype(np.float32)
        with np.errstate(invalid="ignore"):
            wrong = r.astype(np.float64) < q if up else r.astype(np.float64) > q
        return np.where(wrong, np.nextafter(r, np.float32(np.inf if up else -np.inf)), r)
    return f


def _remainder(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.frompyfunc(_or_nan(math.remainder), 2, 1)(x, y).astype(np.float64)


def _unsigned(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint32 if x.dtype.itemsize == 4 else np.uint64)


def _clz(x: np.ndarray) -> np.ndarray:
    u = _unsigned(x)
    bits = u.dtype.itemsize * 8
    n = np.zeros(u.shape, np.int32)
    shift = bits // 2
    while shift:
        empty = (u >> np.array(bits - shift, u.dtype)) == 0
        n += np.where(empty, shift, 0).astype(np.int32)
        u = np.where(empty, u << np.array(shift, u.dtype), u)
        shift //= 2
    return np.where(_unsigned(x) == 0, np.int32(bits), n).astype(np.int32)


def _ffs(x: np.ndarray) -> np.ndarray:
    u = _unsigned(x)
    low = u & (~u + np.array(1, u.dtype))
    return np.where(u == 0, 0, np.bitwise_count(low - np.array(1, u.dtype)).astype(np.int32) + 1).astype(np.int32)


def _brev(x: np.ndarray) -> np.ndarray:
    u = _unsigned(x)
    bits = u.dtype.itemsize * 8
    out = np.zeros_like(u)
    for i in range(bits):
        out |= ((u >> np.array(i, u.dtype)) & np.array(1, u.dtype)) << np.array(bits - 1 - i, u.dtype)
    return out.view(x.dtype)


def _saturate(x: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x), 0.0, np.clip(x, 0.0, 1.0)) + 0.0  # -0.0 becomes +0.0


def _fdim(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0.0))


_POS = (1e-3, 1e3)

ROWS: tuple[MathFunction, ...] = (
    # hyperbolic and inverse trigonometric
    MathFunction("tanh", "f>f", np.tanh, "hyperbolic tangent", ulp=5),
    MathFunction("sinh", "f>f", np.sinh, "hyperbolic sine", ulp=4),
    MathFunction("cosh", "f>f", np.cosh, "hyperbolic cosine", ulp=4),
    MathFunction("asinh", "f>f", np.arcsinh, "inverse hyperbolic sine", ulp=4),
    MathFunction("acosh", "f>f", np.arccosh, "inverse hyperbolic cosine", ulp=4, domain=(1.0, 1e3)),
    MathFunction("atanh", "f>f", np.arctanh, "inverse hyperbolic tangent", ulp=5, domain=(-0.999, 0.999)),
    MathFunction("tan", "f>f", np.tan, "tangent", ulp=5, domain=(-1.5, 1.5)),
    MathFunction("asin", "f>f", np.arcsin, "arc sine", ulp=4, domain=(-1.0, 1.0)),
    MathFunction("acos", "f>f", np.arccos, "arc cosine", ulp=4, domain=(-1.0, 1.0)),
    MathFunction("atan", "f>f", np.arctan, "arc tangent", ulp=5),
    MathFunction("atan2", "ff>f", np.arctan2, "arc tangent of y / x in the right quadrant", ulp=6),
    MathFunction("sinpi", "f>f", _sinpi, "sin(pi x)", ulp=4, domain=(-4.0, 4.0)),
    MathFunction("cospi", "f>f", lambda x: _sinpi(x, 1), "cos(pi x)", ulp=4, domain=(-4.0, 4.0)),
    # exponentials, logarithms, powers
    MathFunction("exp10", "f>f", lambda x: np.power(10.0, x), "10 ** x", ulp=3, domain=(-30.0, 30.0)),
    MathFunction("expm1", "f>f", np.expm1, "e ** x - 1, accurate near 0", ulp=3),
    MathFunction("log10", "f>f", np.log10, "base-10 logarithm", ulp=3, domain=_POS),
    MathFunction("log1p", "f>f", np.log1p, "ln(1 + x), accurate near 0", ulp=2, domain=(-0.9, 1e3)),
    MathFunction("logb", "f>f", _logb, "unbiased exponent as a float", domain=(-1e6, 1e6)),
    MathFunction("ilogb", "f>i32", _ilogb, "unbiased exponent (0 and NaN: INT_MIN, inf: INT_MAX)",
                 domain=(-1e6, 1e6)),
    MathFunction("cbrt", "f>f", np.cbrt, "cube root", ulp=2, domain=(-1e3, 1e3)),
    MathFunction("rcbrt", "f>f", lambda x: 1.0 / np.cbrt(x), "1 / cube root", ulp=3, domain=(-1e3, 1e3)),
    MathFunction("pow", "ff>f", np.power, "x ** y", ulp=16, domain=(0.1, 10.0)),
    MathFunction("hypot", "ff>f", np.hypot, "sqrt(x*x + y*y) without overflow", ulp=4, domain=(-1e3, 1e3)),
    MathFunction("ldexp", "fi>f", lambda x, n: np.ldexp(x, n.astype(np.int32)), "x * 2 ** n",
                 domain=(-1e3, 1e3)),
    MathFunction("scalbn", "fi>f", lambda x, n: np.ldexp(x, n.astype(np.int32)), "x * 2 ** n",
                 domain=(-1e3, 1e3)),
    # special functions
    MathFunction("erfc", "f>f", _scipy("erfc", math.erfc), "1 - erf(x), accurate for large x", ulp=16,
                 domain=(-5.0, 9.0), ref_error64=(64, 0)),
    MathFunction("erfcx", "f>f", _scipy("erfcx"), "exp(x * x) * erfc(x) without overflow",
                 ulp=5, domain=(-3.0, 30.0), ref_error64=(9, 0)),  # SciPy's: 8.1 ulp worst of 8000 points
    MathFunction("erfinv", "f>f", _scipy("erfinv"), "inverse of erf", ulp=5, atol=1, domain=(-0.999, 0.999)),
    MathFunction("lgamma", "f>f", _lgamma, "ln |gamma(x)|", ulp=16, atol=8,
                 domain=(0.05, 40.0), ref_error64=(64, 160)),
    MathFunction("tgamma", "f>f", _scipy("gamma", math.gamma), "gamma function", ulp=16,
                 domain=(0.05, 30.0), ref_error64=(8, 0)),
    MathFunction("j0", "f>f", _bessel("j0", lambda x: np.zeros_like(x)),
                 "Bessel function of the first kind, order 0",
                 ulp=9, atol=8, domain=(-8.0, 8.0), ref_error64=(48, 0)),
    MathFunction("j1", "f>f", _bessel("j1", lambda x: np.copysign(0.0, x)),
                 "Bessel function of the first kind, order 1",
                 ulp=9, atol=8, domain=(-8.0, 8.0), ref_error64=(160, 0)),
    MathFunction("y0", "f>f", _bessel("y0", lambda x: np.where(x > 0, 0.0, np.nan)),
                 "Bessel function of the second kind, order 0",
                 ulp=9, atol=8, domain=(0.1, 8.0), ref_error64=(1024, 8)),
    MathFunction("y1", "f>f", _bessel("y1", lambda x: np.where(x > 0, 0.0, np.nan)),
                 "Bessel function of the second kind, order 1",
                 ulp=9, atol=8, domain=(0.1, 8.0), ref_error64=(96, 8)),
    # rounding and exact operations
    MathFunction("trunc", "f>f", np.trunc, "round toward zero", domain=(-1e4, 1e4)),
    MathFunction("round", "f>f", _round_half_away, "round to nearest, halves away from zero",
                 domain=(-1e4, 1e4)),
    MathFunction("rint", "f>f", np.rint, "round to nearest, halves to even", domain=(-1e4, 1e4)),
    MathFunction("nearbyint", "f>f", np.rint, "round to nearest, halves to even", domain=(-1e4, 1e4)),
    MathFunction("llrint", "f>i64", lambda x: _saturating_int64(np.rint(x)),
                 "round half to even to int64 (saturating, NaN: 0)", domain=(-1e4, 1e4)),
    MathFunction("llround", "f>i64", lambda x: _saturating_int64(_round_half_away(x)),
                 "round half away from zero to int64 (saturating, NaN: 0)", domain=(-1e4, 1e4)),
    MathFunction("copysign", "ff>f", np.copysign, "|x| with the sign of y"),
    MathFunction("fdim", "ff>f", _fdim, "x - y if x > y else +0"),
    MathFunction("nextafter", "ff>f", np.nextafter, "next representable value after x toward y",
                 native=True),
    MathFunction("remainder", "ff>f", _remainder, "x - n y with n = x / y rounded half to even"),
    MathFunction("div_rz", "ff>f", _div_rz, "x / y rounded toward zero (float32)",
                 f32_only=True, domain=(-1e3, 1e3)),
    MathFunction("div_rd", "ff>f", _div_directed(False), "x / y rounded toward -inf (float32)",
                 f32_only=True, domain=(-1e3, 1e3)),
    MathFunction("div_ru", "ff>f", _div_directed(True), "x / y rounded toward +inf (float32)",
                 f32_only=True, domain=(-1e3, 1e3)),
    MathFunction("saturatef", "f>f", _saturate, "clamp to [0, 1] (NaN and -0.0: +0.0)",
                 f32_only=True, domain=(-2.0, 2.0)),
    # classification
    MathFunction("isinf", "f>b", np.isinf, "x is +-inf"),
    MathFunction("isfinited", "f>b", np.isfinite, "x is neither inf nor NaN"),
    MathFunction("finitef", "f>b", np.isfinite, "x is neither inf nor NaN"),
    MathFunction("signbit", "f>i32", lambda x: np.signbit(x).astype(np.int32), "1 if the sign bit is set"),
    # approximate float32 versions (accurate on backends that do not declare them approximate)
    MathFunction("fast_expf", "f>f", np.exp, "e ** x (fast)", ulp=4, f32_only=True, domain=(-20.0, 20.0)),
    MathFunction("fast_exp10f", "f>f", lambda x: np.power(10.0, x), "10 ** x (fast)",
                 ulp=4, f32_only=True, domain=(-8.0, 8.0)),
    MathFunction("fast_logf", "f>f", np.log, "ln x (fast)", ulp=4, f32_only=True, domain=_POS),
    MathFunction("fast_log2f", "f>f", np.log2, "log2 x (fast)", ulp=4, f32_only=True, domain=_POS),
    MathFunction("fast_log10f", "f>f", np.log10, "log10 x (fast)", ulp=4, f32_only=True, domain=_POS),
    MathFunction("fast_sinf", "f>f", np.sin, "sin x (fast)", ulp=4, f32_only=True, domain=(-3.14, 3.14)),
    MathFunction("fast_cosf", "f>f", np.cos, "cos x (fast)", ulp=4, f32_only=True, domain=(-3.14, 3.14)),
    MathFunction("fast_tanf", "f>f", np.tan, "tan x (fast)", ulp=5, f32_only=True, domain=(-1.2, 1.2)),
    MathFunction("fast_powf", "ff>f", np.power, "x ** y (fast)", ulp=16, f32_only=True, domain=(0.1, 10.0)),
    MathFunction("fast_dividef", "ff>f", np.divide, "x / y (fast)", ulp=3, f32_only=True,
                 domain=(-1e3, 1e3)),
    # integer bit functions
    MathFunction("clz", "n>i32", _clz, "number of leading zero bits"),
    MathFunction("popc", "n>i32", lambda x: np.bitwise_count(_unsigned(x)).astype(np.int32),
                 "number of set bits"),
    MathFunction("ffs", "n>i32", _ffs, "1 + index of the lowest set bit (0 for 0)"),
    MathFunction("brev", "n>n", _brev, "the bits in reverse order"),
)

FUNCTIONS: dict[str, MathFunction] = {f.name: f for f in ROWS}

# libdevice functions not provided, and why (calling one is a CompilationError naming the line).
NOT_SUPPORTED: dict[str, str] = {
    **{f"{op}_{r}": "directed rounding (rd/ru/rz) has no portable spelling; use the default "
       "round-to-nearest operator" for op in ("add", "sub", "mul", "div", "fma", "sqrt", "rcp")
       for r in ("rd", "ru", "rz")},
    "rcp64h": "a CUDA-specific partial reciprocal; use 1.0 / x",
    "byte_perm": "a CUDA-specific byte permutation; build it from shifts and masks",
    "sad": "sum of absolute differences: use tl.abs(x - y) + z",
    "hadd": "use (x + y) >> 1 on a wider integer type",
    "rhadd": "use (x + y + 1) >> 1 on a wider integer type",
    "mul24": "24-bit multiply is a CUDA speed trick: use x * y",
    "erfcinv": "no OpenCL builtin yet; use erfinv(1 - x)",
    "normcdf": "use 0.5 * erfc(-x * 0.7071067811865476)",
    "normcdfinv": "use -1.4142135623730951 * erfinv(1 - 2 * x) style formulas",
    "jn": "Bessel of integer order n: only j0/j1 are provided",
    "yn": "Bessel of integer order n: only y0/y1 are provided",
    "cyl_bessel_i0": "no OpenCL builtin yet", "cyl_bessel_i1": "no OpenCL builtin yet",
    "norm3d": "use tl.sqrt(x*x + y*y + z*z)", "norm4d": "use tl.sqrt(x*x + y*y + z*z + w*w)",
    "rnorm3d": "use tl.rsqrt(x*x + y*y + z*z)", "rnorm4d": "use tl.rsqrt(x*x + y*y + z*z + w*w)",
    "rhypot": "use 1.0 / hypot(x, y)",
    **{f"{a}2{b}_{r}": "conversions with a rounding mode: use x.to(dtype) (round to nearest even, "
       "float -> int truncates)" for a in ("float", "double", "int", "uint", "ll", "ull")
       for b in ("float", "double", "int", "uint", "ll", "ull") for r in ("rd", "rn", "ru", "rz")
       if a != b},
    "double2hiint": "use x.to(tl.int64, bitcast=True) >> 32", "double2loint": "use a bitcast and a mask",
    "hiloint2double": "use shifts and x.to(tl.float64, bitcast=True)",
    "float_as_int": "use x.to(tl.int32, bitcast=True)", "int_as_float": "use x.to(tl.float32, bitcast=True)",
    "float_as_uint": "use x.to(tl.uint32, bitcast=True)", "uint_as_float": "use x.to(tl.float32, bitcast=True)",
    "double_as_longlong": "use x.to(tl.int64, bitcast=True)",
    "longlong_as_double": "use x.to(tl.float64, bitcast=True)",
}


def result_type(name: str, operands: list[ScalarType]) -> ScalarType:
    """The result element type of ``name`` on operands of these types; TypeError when they do not fit."""
    fn = FUNCTIONS[name]
    kinds = fn.operands
    if len(kinds) != len(operands):
        raise TypeError(f"{name} takes {len(kinds)} operands, got {len(operands)}")
    first = operands[0]
    for kind, t in zip(kinds, operands):
        if not _fits(kind, t, first, fn.f32_only):
            raise TypeError(f"{name} needs {describe_operands(fn)}, got {', '.join(map(str, operands))}")
    assert isinstance(first, DType)
    return fn.result_dtype(first)


def _fits(kind: str, t: ScalarType, first: ScalarType, f32_only: bool) -> bool:
    if not isinstance(t, DType):
        return False
    if kind == "f":
        return t == first and (t == float32 or t == float64 and not f32_only)
    if kind == "i":
        return t == int32
    return t == first and t.is_int and not t.is_bool and t.bits in (32, 64)


def describe_operands(fn: MathFunction) -> str:
    floats = "float32" if fn.f32_only else "float32 or float64"
    words = {"f": f"{floats}", "i": "int32", "n": "32- or 64-bit integers"}
    if fn.operands == "fi":
        return f"a {floats} value and an int32 exponent"
    return " and ".join(dict.fromkeys(words[k] for k in fn.operands)) + (
        " operands of one type" if len(fn.operands) > 1 else " operands")
