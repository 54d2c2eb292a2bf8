"""Exact floating-point rounding on NumPy arrays.

NumPy rounds float64 -> float32 and float64 -> float16 correctly, but ml_dtypes
converts float64 -> bfloat16/fp8 through float32 (rounding twice), and NumPy has
no fused multiply-add.  The tools here make every conversion and FMA round once:

* ``round_to_odd_f32``: float64 -> float32 rounding *to odd*; rounding that result
  again to any format with <= 22 mantissa bits equals one correct rounding.
* ``narrow``: float64 -> any tiles float type, round-to-nearest-even or toward zero;
  fp8 saturates as Triton on CUDA does (``saturate_fp8``).
* ``fma``: ``a * b + c`` with a single rounding (Boldo & Melquiond's emulation).
* ``round_tf32``: fp32 -> tf32 (10 mantissa bits), nearest-even, kept in fp32.
* ``e4b15_decode`` / ``e4b15_encode``: Triton's float8e4b15 (no NumPy type: its arrays hold
  raw bytes as ``dtypes.FP8E4B15_STORAGE``) to float32 exactly, and float64 to it, rounded once.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from . import dtypes
from .dtypes import DType

_F64, _F32, _U64, _U32 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.uint64), np.dtype(np.uint32)
_UINT_OF_SIZE: dict[int, np.dtype[Any]] = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: _U32, 8: _U64}


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s + e == a + b exactly, s = fl(a + b) (Knuth)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = a * 134217729.0  # 2**27 + 1 (Veltkamp)
    hi = c - (c - a)
    return hi, a - hi


def two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p + e == a * b exactly (Dekker), barring overflow/underflow."""
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _toward(bits: np.ndarray, value_mag_up: np.ndarray, cond: np.ndarray) -> np.ndarray:
    """Move float bit patterns one ulp in magnitude (up where value_mag_up) where cond."""
    one = bits.dtype.type(1)
    return np.where(cond, np.where(value_mag_up, bits + one, bits - one), bits)


def add_round_odd(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a + b in float64 rounded to odd (exact, or the neighbour with an odd last bit)."""
    s, e = two_sum(a, b)
    bits = np.ascontiguousarray(s).view(_U64)
    inexact = (e != 0) & np.isfinite(e) & np.isfinite(s) & ((bits & 1) == 0)
    if not inexact.any():
        return s
    up = np.signbit(e) == np.signbit(s)
    return _toward(bits, up, inexact).view(_F64)


def round_to_odd_f32(x: np.ndarray) -> np.ndarray:
    """float64 -> float32, rounding to odd (finite results only; overflow gives inf)."""
    x = np.asarray(x, _F64)
    f = x.astype(_F32)
    fx = f.astype(_F64)
    bits = np.ascontiguousarray(f).view(_U32)
    adjust = (fx != x) & np.isfinite(f) & ((bits & 1) == 0)
    if not adjust.any():
        return f
    up = np.abs(fx) < np.abs(x)
    return _toward(bits, up, adjust).view(_F32)


def _rn_from_f64(x: np.ndarray, dst: DType) -> np.ndarray:
    if dst == dtypes.float64:
        return x
    if dst in (dtypes.float32, dtypes.float16):
        return x.astype(dst.np)  # NumPy rounds these directly from float64
    return round_to_odd_f32(x).astype(dst.np)


def saturate_fp8(x: np.ndarray, dst: DType, keep_inf: bool = True) -> np.ndarray:
    """``x`` with magnitudes past fp8 ``dst``'s largest finite value clipped to it (NaN kept), so
    that rounding it saturates as Triton's ``cvt.rn.satfinite``; with ``keep_inf`` float8e5's
    infinities stay (float8e4nv has none).  Other types: ``x``."""
    if not dst.is_fp8 or dst == dtypes.float8e4b15:  # e4b15_encode saturates itself
        return x
    big = float(dst.max())
    clipped = np.clip(x, -big, big)
    if keep_inf and dst == dtypes.float8e5:
        return np.where(np.isinf(x), x, clipped)
    return clipped


# float8e4b15: sign, 4 exponent bits (bias 15), 3 mantissa bits, subnormals; all 256 bytes finite
def _e4b15_table() -> np.ndarray:
    code = np.arange(256)
    e, m = (code >> 3) & 0xF, code & 7
    mag = np.where(e == 0, m / 8.0 * 2.0 ** -14, (1 + m / 8.0) * 2.0 ** (e - 15.0))
    table = np.where(code & 0x80, -mag, mag).astype(_F32)
    table.flags.writeable = False
    return table


_E4B15_AS_F32 = _e4b15_table()
_E4B15_MAGNITUDES = _E4B15_AS_F32[:128].astype(_F64)  # ascending, from +0 to 1.875
_E4B15_MAX = float(_E4B15_MAGNITUDES[-1])


def e4b15_decode(a: np.ndarray) -> np.ndarray:
    """float8e4b15 bytes (any 1-byte dtype, any shape) as float32 values, exactly."""
    return np.asarray(_E4B15_AS_F32.take(np.asarray(a).view(np.uint8)))


def e4b15_encode(x: np.ndarray, rounding: str = "rtne") -> np.ndarray:
    """float64 values as float8e4b15 bytes (``dtypes.FP8E4B15_STORAGE``), rounded once, as Triton
    rounds into this type: "rtne" to nearest with ties away from zero (Triton's interpreter and its
    CUDA conversion both round halves up in magnitude), "rtz" toward zero.  The format has no
    infinity or NaN: magnitudes past the largest, 1.875 (byte 0x7f), infinities and NaN give
    +-1.875, keeping the sign bit."""
    x = np.asarray(x, _F64)
    with np.errstate(all="ignore"):
        sign = np.signbit(x)
        mag = np.abs(x)
        big = ~(mag <= _E4B15_MAX)  # NaN included
        mag = np.where(big, 0.0, mag)
        # the spacing of the values around mag: 2**-17 below 2**-14 (subnormals), else 2**(e - 3)
        _, exp = np.frexp(mag)
        ulp = np.ldexp(1.0, np.maximum(exp - 1, -14) - 3)
        steps = mag / ulp  # exact: a power-of-two scaling of a value below 2**17 steps
        steps = np.floor(steps) if rounding == "rtz" else np.floor(steps + 0.5)
        rounded = np.minimum(steps * ulp, _E4B15_MAX)  # exact: a value of the format, or 2.0
        code = np.searchsorted(_E4B15_MAGNITUDES, rounded).astype(np.uint8)
        code = np.where(big, np.uint8(0x7F), code) | np.where(sign, np.uint8(0x80), np.uint8(0))
    return np.asarray(code, np.uint8).view(dtypes.FP8E4B15_STORAGE)


def narrow(x: np.ndarray, dst: DType, rounding: str = "rtne", inf_to_max: bool = False) -> np.ndarray:
    """Round float64 values to the float type ``dst`` once ("rtne" or "rtz").  fp8 saturates: a
    finite value past the largest gives the largest; so does an infinity with ``inf_to_max`` when
    rounding to nearest (a cast, as Triton's ``cvt.rn.satfinite``), else it stays infinite where the
    type has infinities (float8e5).  float8e4b15 rounds as ``e4b15_encode`` says."""
    if dst == dtypes.float8e4b15:
        return e4b15_encode(x, rounding)
    with np.errstate(all="ignore"):
        x = saturate_fp8(np.asarray(x, _F64), dst, keep_inf=rounding == "rtz" or not inf_to_max)
        r = np.asarray(_rn_from_f64(x, dst))
        if rounding != "rtz" or dst == dtypes.float64:
            return r
        rv = r.astype(_F64)
        too_big = np.isfinite(x) & (np.abs(rv) > np.abs(x))  # includes finite -> inf
        if not too_big.any():
            return r
        udt = _UINT_OF_SIZE[dst.itemsize]
        bits = np.ascontiguousarray(r).view(udt)
        return np.where(too_big, bits - udt.type(1), bits).view(dst.np)


def quiet_nans(x: np.ndarray) -> np.ndarray:
    """``x`` with its NaNs quiet: NumPy's fmax/fmin run short arrays through C's fmax, which returns
    NaN for a signaling NaN, and long ones through a SIMD loop that does not (PTX max/min, compiled
    Triton, drop any NaN)."""
    if x.dtype.kind != "f":
        return x
    nan = np.isnan(x)
    return np.where(nan, x.dtype.type(np.nan), x) if nan.any() else x


def fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, dst: DType) -> np.ndarray:
    """a * b + c rounded once to ``dst`` (operands already of type ``dst``)."""
    with np.errstate(all="ignore"):
        a64, b64, c64 = (np.asarray(v).astype(_F64) if dst != dtypes.float8e4b15
                         else e4b15_decode(v).astype(_F64) for v in (a, b, c))
        if dst != dtypes.float64:
            # the float64 product of two <= 24-bit significands is exact
            return narrow(add_round_odd(a64 * b64, c64), dst)
        r, ok = _fma64(a64, b64, c64)
        product = a64 * b64
        plain = product + c64
        finite = np.isfinite(a64) & np.isfinite(b64)
        # the exact product of finite operands is finite: adding an infinite c gives c
        plain = np.where(finite & np.isinf(c64), c64, plain)
        huge = finite & np.isfinite(c64) & np.isinf(product)
        if huge.any():
            # the product overflows float64 but an exact sum may not: scale the larger factor
            # and c by 2**-600 (exact here), add exactly, scale back
            first = np.abs(a64) >= np.abs(b64)
            aa, bb = np.where(first, a64 * _DOWN, a64), np.where(first, b64, b64 * _DOWN)
            rs, scaled_ok = _fma64(aa, bb, c64 * _DOWN)
            # still overflowing after scaling: |a*b| >= 2**1624 swamps any finite c
            plain = np.where(huge, np.where(scaled_ok, rs * _UP, product), plain)
        lopsided = finite & np.isfinite(c64) & np.isfinite(product) & ~ok & ~huge
        if lopsided.any():
            # a finite product of a huge and a tiny factor: rebalance them (exactly) so that
            # two_prod's splitting does not overflow
            first = np.abs(a64) >= np.abs(b64)
            aa = np.where(first, a64 * _DOWN, a64 * _UP)
            bb = np.where(first, b64 * _UP, b64 * _DOWN)
            rb, rb_ok = _fma64(aa, bb, c64)
            plain = np.where(lopsided & rb_ok, rb, plain)
        result = np.where(ok, r, plain)
        # zeros: an exact product that underflowed keeps its sign when c is zero; otherwise
        # IEEE addition of the (then exact) product and c gives the sign
        zero = result == 0
        if zero.any():
            underflow = (c64 == 0) & (a64 != 0) & (b64 != 0)
            signed = np.where(np.signbit(a64) ^ np.signbit(b64), -0.0, 0.0)
            result = np.where(zero, np.where(underflow, signed, product + c64), result)
        return _fma64_near_underflow(a64, b64, c64, product, result)


_DOWN = 2.0 ** -600
_UP = 2.0 ** 600
_TINY = 2.0 ** -900  # a product under it may lose its low part (its factors' lowest bits under 2**-1074)
_SMALLEST_NORMAL = 2.0 ** -1022


def _fma64_near_underflow(a: np.ndarray, b: np.ndarray, c: np.ndarray, product: np.ndarray,
                          result: np.ndarray) -> np.ndarray:
    """``result`` with the elements the float64 transforms cannot round once (a subnormal factor or
    a tiny product: the product's low part underflows) summed exactly as rationals and rounded once
    by ``float(Fraction)`` (nearest-even, subnormals and the sign of a tiny result kept).  Above that
    the transforms are exact and a tiny or zero result is rounded once by their last addition."""
    a, b, c, product, result = np.broadcast_arrays(a, b, c, product, result)
    nonzero = np.isfinite(a) & np.isfinite(b) & np.isfinite(c) & (a != 0) & (b != 0)
    near = nonzero & ((np.abs(product) < _TINY) | (np.abs(a) < _SMALLEST_NORMAL) | (np.abs(b) < _SMALLEST_NORMAL))
    if not near.any():
        return result
    out = np.array(result, _F64)
    for i in map(tuple, np.argwhere(near)):
        exact = Fraction(float(a[i])) * Fraction(float(b[i])) + Fraction(float(c[i]))
        out[i] = float(exact)  # an exact zero sum of nonzero terms is +0 when rounding to nearest
    return out


def _fma64(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a * b + c rounded once, for float64 arrays; second result: where that was possible."""
    uh, ul = two_prod(a, b)
    th, tl = two_sum(c, uh)
    r = th + add_round_odd(tl, ul)
    return r, np.isfinite(r) & np.isfinite(ul) & np.isfinite(tl)


def round_tf32(x: np.ndarray) -> np.ndarray:
    """fp32 values rounded to tf32 (10 explicit mantissa bits), nearest-even, as fp32."""
    bits = np.array(x, _F32, order="C").view(_U32)
    r = np.right_shift(bits, np.uint32(13))  # in place from here: one temporary in all
    r &= np.uint32(1)
    r += np.uint32(0xFFF)
    r += bits
    r &= np.uint32(0xFFFFE000)  # inf is kept; NaN payloads could carry into the sign: restore
    nan = np.isnan(bits.view(_F32))
    if nan.any():
        np.copyto(r, bits, where=nan)
    return r.view(_F32)
