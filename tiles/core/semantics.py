"""The elementwise semantics of the tile IR, written once as NumPy functions.

``apply(op, attrs, arrays, result_type)`` evaluates one elementwise op on arrays of
any (broadcast-compatible) shape; the interpreter calls it with a leading program
axis, constant folding with plain arrays.  Pointers are int64 addresses here.

Rules (docs/interpreter.md lists them as text):

* integers wrap around; int1 arithmetic is arithmetic on one bit (add = xor).
* IDIV/MOD are C's: the quotient truncates toward zero, the remainder takes the
  dividend's sign.  Division by zero is undefined on GPUs; here it is
  deterministic: IDIV gives -1 (all ones), MOD gives the dividend.
  ``INT_MIN // -1`` gives ``INT_MIN``; ``INT_MIN % -1`` gives 0.
* SHL/SHR by a negative amount or >= the bit width (undefined on GPUs): 0, and
  sign fill for SHR of a negative signed value.  SHR is arithmetic on signed types and
  logical on unsigned ones; Triton's choice by the left operand's type is the tracer's
  (``language/semantic.py`` reinterprets the operands).
* UMULHI is unsigned on every integer type: the high half of the product of the operands'
  bit patterns, read back in the operand type (Triton's ``tt.mulhiui``).
* float16/bfloat16/fp8 arithmetic computes in float32 and rounds back once; math
  functions (exp, log, sin, ...) compute in float64 and round to float32, so
  16-bit math is float32 math rounded again.
* MAXIMUM/MINIMUM: a NaN operand loses (fmax/fmin); the *_NAN variants propagate it.
* CAST: floats round to nearest even (or toward zero for fp_downcast_rounding
  "rtz"); float -> int truncates toward zero and saturates, NaN -> 0; to int1 is
  ``!= 0``.
* fp8 saturates (``floats.narrow``): a cast to nearest as Triton's ``cvt.rn.satfinite`` (past the
  largest finite value, and +-inf, give +-max; NaN stays NaN); other roundings into fp8 (toward
  zero, arithmetic results, constants) saturate finite values but keep float8e5's infinities.
* float8e4b15 (raw bytes, ``dtypes.FP8E4B15_STORAGE``) is decoded exactly to float32 by ``widen``
  and rounded back by ``floats.e4b15_encode`` (to nearest, ties away from zero, as Triton; or toward
  zero; saturating to +-1.875, NaN included: the format has no infinity or NaN).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from . import dtypes, floats, mathfns
from .dtypes import DType, PointerType
from .ir import TileType
from .ops import Op

Impl = Callable[[Any, list[np.ndarray], TileType], np.ndarray]
ELEMENTWISE_IMPL: dict[Op, Impl] = {}

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_NATIVE_FLOATS = (_F32, _F64)


def apply(op: Op, attrs: Any, args: Sequence[Any], result_type: TileType) -> np.ndarray:
    """Evaluate the elementwise ``op`` on NumPy arrays (any shape, broadcasting).

    The arrays must already have the operand types' NumPy dtypes (``DType.np``; pointers
    are int64 addresses); the result has the result type's dtype."""
    with np.errstate(all="ignore"):
        return np.asarray(ELEMENTWISE_IMPL[op](attrs, [np.asarray(a) for a in args], result_type))


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """``np.broadcast_shapes(a, b)`` (which builds arrays to find it: it costs more than most small
    ops) for two shapes of one rank, the interpreter's usual case; other ranks and errors are NumPy's."""
    if a == b:
        return a
    if len(a) != len(b):
        return np.broadcast_shapes(a, b)
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            return np.broadcast_shapes(a, b)  # (raises: the shapes do not broadcast)
    return tuple(out)


def trunc_div(a: int, b: int) -> int:
    """IDIV on Python ints (b != 0): the quotient truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def trunc_mod(a: int, b: int) -> int:
    """MOD on Python ints (b != 0): the remainder with the sign of ``a``."""
    return a - b * trunc_div(a, b)


def dtype_of(a: np.ndarray) -> DType:
    return dtypes.from_numpy(a.dtype)


def _impl(*ops: Op) -> Callable[[Impl], Impl]:
    def register(fn: Impl) -> Impl:
        for op in ops:
            ELEMENTWISE_IMPL[op] = fn
        return fn
    return register


def _is_float(a: np.ndarray) -> bool:
    kind = a.dtype.kind
    return kind == "f" or (kind == "V" and dtype_of(a).is_floating)  # "V": ml_dtypes floats


# every float16 as float32, by bit pattern: a table lookup costs less than NumPy's float16
# conversion (the table is that conversion's own output, so the results are the same bits)
_F16 = np.dtype(np.float16)
_F16_AS_F32 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(_F32)
_F16_AS_F32.flags.writeable = False


_E4B15 = dtypes.FP8E4B15_STORAGE


def widen(a: np.ndarray) -> np.ndarray:
    """Floats narrower than float32 as float32 (exact); float8e4b15's bytes decoded."""
    dt = a.dtype
    if dt in _NATIVE_FLOATS:
        return a
    if dt == _F16 and a.ndim:
        return _F16_AS_F32.take(a.view(np.uint16))
    if dt == _E4B15:
        return floats.e4b15_decode(a)
    return a.astype(_F32)


_wide = widen


def _back(r: np.ndarray, like: np.dtype) -> np.ndarray:
    """Round a float32/float64 result back to the operand's float type."""
    if r.dtype == like:
        return r
    d = dtypes.from_numpy(like)
    return floats.narrow(r, d) if r.dtype == _F64 or d.is_fp8 else r.astype(like)


def round_back(r: np.ndarray, like: np.dtype) -> np.ndarray:
    """``r`` (float32/float64 values computed from operands of NumPy dtype ``like``) rounded once
    back to that float type (fp8 saturating, float8e4b15 encoded)."""
    return _back(r, like)


# ---------------------------------------------------------------- arithmetic

_FLOAT_BINARY: dict[Op, Callable[..., np.ndarray]] = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.true_divide,
    Op.MOD: np.fmod, Op.MAXIMUM: lambda a, b: np.fmax(floats.quiet_nans(a), floats.quiet_nans(b)),
    Op.MINIMUM: lambda a, b: np.fmin(floats.quiet_nans(a), floats.quiet_nans(b)),
    Op.MAXIMUM_NAN: np.maximum, Op.MINIMUM_NAN: np.minimum,
}
_INT_BINARY: dict[Op, Callable[..., np.ndarray]] = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply,
    Op.AND: np.bitwise_and, Op.OR: np.bitwise_or, Op.XOR: np.bitwise_xor,
    Op.MAXIMUM: np.maximum, Op.MINIMUM: np.minimum,
    Op.MAXIMUM_NAN: np.maximum, Op.MINIMUM_NAN: np.minimum,
}
_BOOL_NATIVE = {Op.AND, Op.OR, Op.XOR, Op.MAXIMUM, Op.MINIMUM, Op.MAXIMUM_NAN, Op.MINIMUM_NAN}


def _positive(x: np.ndarray, strict: bool) -> bool:
    low = x.min() if x.size else 1
    return bool(low > 0 if strict else low >= 0)


def _idiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if _positive(b, True) and (a.dtype.kind == "u" or _positive(a, False)):
        return np.floor_divide(a, b)  # no zero divisor, no negative operand: floor is trunc
    zero = b == 0
    bs = np.where(zero, b.dtype.type(1), b)
    q = np.floor_divide(a, bs)
    if a.dtype.kind == "i":
        r = a - q * bs
        q = np.where((r != 0) & ((a < 0) != (bs < 0)), q + a.dtype.type(1), q)
    return np.where(zero, a.dtype.type(-1) if a.dtype.kind == "i" else ~a.dtype.type(0), q)


def _imod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if _positive(b, True) and (a.dtype.kind == "u" or _positive(a, False)):
        return np.remainder(a, b)
    zero = b == 0
    bs = np.where(zero, b.dtype.type(1), b)
    r = a - _idiv(a, bs) * bs
    return np.where(zero, a, r)


def _shift(op: Op, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    ok = (b >= 0) & (b < bits) if b.dtype.kind == "i" else b < bits
    amount = np.where(ok, b, b.dtype.type(0))
    if op is Op.SHL:
        return np.where(ok, np.left_shift(a, amount), a.dtype.type(0))
    r = np.right_shift(a, amount)
    if a.dtype.kind == "i":
        return np.where(ok, r, np.where(a < 0, a.dtype.type(-1), a.dtype.type(0)))
    return np.where(ok, r, a.dtype.type(0))


def _umulhi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The high half of the unsigned double-width product of the operands' bits, as Triton's
    umulhi (``tt.mulhiui``) gives it for every integer type, signed ones included."""
    dt = a.dtype
    if dt.itemsize < 8:
        bits = dt.itemsize * 8
        u = np.dtype(f"u{dt.itemsize}")
        wide = (a.view(u).astype(np.uint64) * b.view(u).astype(np.uint64)) >> np.uint64(bits)
        return wide.astype(u).view(dt)
    ua, ub = a.view(np.uint64), b.view(np.uint64)
    m32, s32 = np.uint64(0xFFFFFFFF), np.uint64(32)
    a0, a1, b0, b1 = ua & m32, ua >> s32, ub & m32, ub >> s32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s32) + (p01 & m32) + (p10 & m32)
    hi = p11 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)
    return hi.view(dt)


_INT_SPECIAL: dict[Op, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    Op.IDIV: _idiv, Op.MOD: _imod, Op.UMULHI: _umulhi,
    Op.SHL: lambda a, b: _shift(Op.SHL, a, b), Op.SHR: lambda a, b: _shift(Op.SHR, a, b),
}


def _int_binary(op: Op, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    fn = _INT_BINARY.get(op)
    return fn(a, b) if fn is not None else _INT_SPECIAL[op](a, b)


def _binary(op: Op) -> Impl:
    def impl(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
        a, b = args
        if _is_float(a):
            return _back(_FLOAT_BINARY[op](_wide(a), _wide(b)), a.dtype)
        if a.dtype == np.bool_:
            if op in _BOOL_NATIVE:
                return _INT_BINARY[op](a, b)
            r = _int_binary(op, a.astype(np.uint8), b.astype(np.uint8))
            return (r & np.uint8(1)).astype(np.bool_)
        return _int_binary(op, a, b)
    return impl


for _op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.IDIV, Op.MOD, Op.AND, Op.OR, Op.XOR, Op.SHL,
            Op.SHR, Op.MAXIMUM, Op.MINIMUM, Op.MAXIMUM_NAN, Op.MINIMUM_NAN, Op.UMULHI):
    ELEMENTWISE_IMPL[_op] = _binary(_op)


@_impl(Op.NEG)
def _neg(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
    (a,) = args
    if a.dtype == np.bool_:
        return a.copy()  # -x == x on one bit
    if _is_float(a):
        return _back(np.negative(_wide(a)), a.dtype)
    return np.negative(a)


@_impl(Op.NOT)
def _not(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
    return np.invert(args[0])


@_impl(Op.FMA)
def _fma(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
    a, b, c = args
    if not _is_float(a):
        return a * b + c
    return floats.fma(a, b, c, dtype_of(a))


# ---------------------------------------------------------------- comparisons

_CMP = {Op.EQ: np.equal, Op.NE: np.not_equal, Op.LT: np.less, Op.LE: np.less_equal,
        Op.GT: np.greater, Op.GE: np.greater_equal}


def _compare(op: Op) -> Impl:
    fn = _CMP[op]

    def impl(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
        a, b = args
        if _is_float(a):
            a, b = _wide(a), _wide(b)
        return fn(a, b)
    return impl


for _op in _CMP:
    ELEMENTWISE_IMPL[_op] = _compare(_op)


# ---------------------------------------------------------------- math

_MATH64: dict[Op, Callable[[np.ndarray], np.ndarray]] = {
    Op.EXP: np.exp, Op.EXP2: np.exp2, Op.LOG: np.log, Op.LOG2: np.log2, Op.SQRT: np.sqrt,
    Op.RSQRT: lambda x: 1.0 / np.sqrt(x), Op.SIN: np.sin, Op.COS: np.cos,
}


def _erf(x: np.ndarray) -> np.ndarray:
    try:
        from scipy.special import erf  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - scipy is optional
        import math
        return np.frompyfunc(math.erf, 1, 1)(x).astype(_F64)
    return np.asarray(erf(x))


_MATH64[Op.ERF] = _erf


def _math(op: Op) -> Impl:
    fn = _MATH64[op]

    def impl(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
        (a,) = args
        if a.dtype == _F64:
            return fn(a)
        r32 = fn(_wide(a).astype(_F64)).astype(_F32)
        return r32 if a.dtype == _F32 else _back(r32, a.dtype)
    return impl


for _op in _MATH64:
    ELEMENTWISE_IMPL[_op] = _math(_op)


def _exact_unary(fn: Callable[[np.ndarray], np.ndarray], ints: Callable[[np.ndarray], np.ndarray]) -> Impl:
    def impl(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
        (a,) = args
        if _is_float(a):
            return _back(fn(_wide(a)), a.dtype)
        return ints(a)
    return impl


ELEMENTWISE_IMPL[Op.FLOOR] = _exact_unary(np.floor, np.copy)
ELEMENTWISE_IMPL[Op.CEIL] = _exact_unary(np.ceil, np.copy)
ELEMENTWISE_IMPL[Op.ABS] = _exact_unary(np.abs, lambda a: a.copy() if a.dtype.kind in "bu" else np.abs(a))


@_impl(Op.MATH_FN)
def _math_fn(attrs: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
    """A core/mathfns.py function: its NumPy reference on float64 (float operands; or in their
    own type for ``native`` functions) or the integers themselves, rounded once to the result type."""
    fn = mathfns.FUNCTIONS[attrs.name]
    wide = args if fn.native else [_wide(a).astype(_F64) if _is_float(a) else a for a in args]
    out = np.asarray(fn.ref(*wide))
    if out.dtype == rt.element.np:
        return out
    if rt.element == dtypes.float8e4b15:
        return floats.e4b15_encode(_wide(out).astype(_F64))
    return floats.saturate_fp8(out, rt.element, keep_inf=True).astype(rt.element.np)


@_impl(Op.ISNAN)
def _isnan(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
    (a,) = args
    return np.isnan(_wide(a)) if _is_float(a) else np.zeros(a.shape, np.bool_)


# ---------------------------------------------------------------- conversions


def convert(a: np.ndarray, dst: DType, rounding: str = "rtne") -> np.ndarray:
    """CAST: ``a`` converted to ``dst`` (rules in the module docstring)."""
    src = dtype_of(a)
    if src == dst:
        return a
    with np.errstate(all="ignore"):
        if dst.is_bool:
            return (_wide(a) if src.is_floating else a) != 0
        if src.is_int:  # int1 included
            if dst.is_int:
                return a.astype(dst.np)
            if dst.np in _NATIVE_FLOATS:
                return a.astype(dst.np)
            return floats.narrow(a.astype(_F64), dst)
        if dst.is_int:
            return _float_to_int(_wide(a).astype(_F64), dst)
        if dst.np in _NATIVE_FLOATS and dst.mantissa >= src.mantissa:
            return _wide(a).astype(dst.np, copy=False)  # widening: exact
        if rounding == "rtne" and a.dtype == _F32 and dst == dtypes.float16:
            return _f32_to_f16(a)
        return floats.narrow(_wide(a).astype(_F64), dst, rounding, inf_to_max=True)


def _f32_to_f16(a: np.ndarray) -> np.ndarray:
    """float32 -> float16 to nearest even: NumPy's own conversion rounds once, as the float64 route
    does, for every value but NaNs, whose payloads come out as that route gives them."""
    r = a.astype(np.float16)
    nan = np.isnan(a)
    if nan.any():
        r[nan] = a[nan].astype(_F64).astype(np.float16)
    return r


def constant(value: bool | int | float, dtype: DType) -> np.ndarray:
    """CONST: ``value`` as a one-element array of ``dtype``: an integer wraps; a float rounds once,
    into fp8 saturating but keeping float8e5's infinities (``floats.narrow``)."""
    if dtype.is_bool:
        return np.array([bool(value)])
    if dtype.is_int:
        return convert(np.array([int(value) & ((1 << dtype.bits) - 1)], np.uint64), dtype)
    return floats.narrow(np.array([float(value)], _F64), dtype)


def _float_to_int(t: np.ndarray, dst: DType) -> np.ndarray:
    t = np.trunc(t)
    upper = 2.0 ** (dst.bits - 1) if dst.is_signed else 2.0 ** dst.bits
    lower = -upper if dst.is_signed else 0.0
    inside = (t >= lower) & (t < upper)
    r = np.where(inside, t, 0.0).astype(dst.np)
    r = np.where(t >= upper, dst.np.type(dst.max()), r)
    return np.where(t < lower, dst.np.type(dst.min()), r)


@_impl(Op.CAST)
def _cast(attrs: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
    return convert(args[0], attrs.dtype, attrs.fp_downcast_rounding)


@_impl(Op.BITCAST)
def _bitcast(attrs: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
    (a,) = args
    if isinstance(attrs.dtype, PointerType):
        return a  # pointer -> pointer: same address
    return a.view(attrs.dtype.np) if a.dtype != attrs.dtype.np else a


@_impl(Op.WHERE)
def _where(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
    c, a, b = args
    return np.where(c, a, b)


@_impl(Op.ADDPTR)
def _addptr(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
    p, i = args
    size = rt.element.itemsize if isinstance(rt.dtype, PointerType) else 1
    r = np.multiply(i, np.int64(size), dtype=np.int64)  # the byte offsets, in the offsets' own shape
    if not isinstance(r, np.ndarray) or not r.ndim:
        return np.asarray(r + p)
    if broadcast_shape(r.shape, p.shape) == r.shape:
        return np.add(r, p, out=r)  # (a fresh array: updated in place)
    return np.add(r, p)  # offsets smaller than the pointers (a loop's uniform step): one pass at full size


@_impl(Op.PTR_TO_INT, Op.INT_TO_PTR)
def _addr(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
    (a,) = args
    return a if a.dtype == np.int64 else a.astype(np.int64)


@_impl(Op.HINT)
def _hint(_: Any, args: list[np.ndarray], rt: TileType) -> np.ndarray:
    return args[0]
