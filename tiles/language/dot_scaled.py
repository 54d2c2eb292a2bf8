"""``tl.dot_scaled``: the matrix product of microscaled (OCP MX) operands, as tl ops.

Each operand is decoded to float32 exactly (e2m1 values packed two to a byte, low nibble first;
fp8 as its dtype; fp16/bf16 as they are), multiplied by its e8m0 scale (one byte per 32 values
along K: 2**(byte - 127); byte 255 is NaN), and the two are multiplied as ``tl.dot`` in IEEE
float32, the way Triton's interpreter computes it.  Every backend runs it (it is tl ops).
"""

from __future__ import annotations

from typing import Any

from ..core import dtypes as D
from . import semantic as S
from .core import join, permute, reshape, where
from .reduction import dot as _dot
from .tensor import tensor

_FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")
_FP8 = {"e4m3": D.float8e4nv, "e5m2": D.float8e5}
GROUP = 32  # values per e8m0 scale along K


def _e2m1_values(nibbles: tensor) -> tensor:
    """float32 values of e2m1 codes (0..15): sign bit 3, exponent bits 2..1, mantissa bit 0."""
    n = S.cast(nibbles, D.int32)
    mag = n & 7
    exp = mag >> 1
    half = S.cast(mag & 1, D.float32) * 0.5
    # exponent 0 is subnormal (0 or 0.5); otherwise (1 + m/2) * 2**(e - 1)
    pow2 = where(exp == 3, 4.0, where(exp == 2, 2.0, 1.0))
    value = where(exp == 0, half, (half + 1.0) * pow2)
    return where((n & 8) != 0, -value, value)


def _unpack_e2m1(packed: tensor, axis: int) -> tensor:
    """Two e2m1 values per byte along ``axis`` (0 or 1), low nibble first, as float32."""
    if packed.dtype not in (D.uint8, D.int8):
        raise S.error(f"tl.dot_scaled: e2m1 operands are packed in uint8, got {packed.dtype}")
    byte = S.cast(S.cast(packed, D.uint8, bitcast=True), D.int32)
    low = _e2m1_values(byte & 15)
    high = _e2m1_values(byte >> 4)
    pair = join(low, high)  # [a, b, 2]
    a, b = packed.shape
    if axis == 1:
        return reshape(pair, a, 2 * b)
    return reshape(permute(pair, 0, 2, 1), 2 * a, b)


def _decode(x: tensor, fmt: str, packed_axis: int) -> tensor:
    if fmt == "e2m1":
        return _unpack_e2m1(x, packed_axis)
    if fmt in _FP8:
        want = _FP8[fmt]
        if x.dtype in (D.uint8, D.int8):
            x = S.cast(x, want, bitcast=True)
        elif x.dtype != want:
            raise S.error(f"tl.dot_scaled: a {fmt} operand must be {want} or uint8, got {x.dtype}")
        return S.cast(x, D.float32)
    want = D.bfloat16 if fmt == "bf16" else D.float16
    if x.dtype != want:
        raise S.error(f"tl.dot_scaled: a {fmt} operand must be {want}, got {x.dtype}")
    return S.cast(x, D.float32)


def _scale_values(scale: tensor, zero_is_tiny: bool) -> tensor:
    """float32 2**(byte - 127) of e8m0 bytes; byte 255 is NaN.  With a bf16 computation type
    byte 0 is 2**-127 (Triton's interpreter), with fp16 it is 0 (2**-127 underflows there)."""
    if not scale.dtype.is_int:
        raise S.error(f"tl.dot_scaled: scales are e8m0 bytes (uint8), got {scale.dtype}")
    bits = S.cast(S.cast(scale, D.uint8, bitcast=True), D.int32)
    f = S.cast(bits << 23, D.float32, bitcast=True)
    if zero_is_tiny:
        f = where(bits == 0, 2.0 ** -127, f)
    return where(bits == 255, float("nan"), f)


def _apply_scale(values: tensor, scale: Any, k_axis: int, zero_is_tiny: bool) -> tensor:
    """``values`` ([M, K] for lhs, [K, N] for rhs) times scales given as [M or N, K // 32]."""
    if scale is None:
        return values
    s = S.to_tensor(scale)
    k = values.shape[k_axis]
    other = values.shape[1 - k_axis]
    if s.ndim != 2 or s.shape[0] != other or s.shape[1] * GROUP != k:
        raise S.error(f"tl.dot_scaled: a scale for an operand of shape {list(values.shape)} must have shape "
                      f"[{other}, {k // GROUP}], got {list(s.shape)}")
    f = _scale_values(s, zero_is_tiny)  # [other, K/32]
    f = reshape(S.broadcast_to(S.expand_dims(f, 2), (other, k // GROUP, GROUP)), other, k)  # [other, K]
    if k_axis == 0:
        f = permute(f, 1, 0)
    return values * f


def dot_scaled(lhs: Any, lhs_scale: Any, lhs_format: Any, rhs: Any, rhs_scale: Any, rhs_format: Any,
               acc: Any = None, fast_math: Any = False, lhs_k_pack: Any = True, rhs_k_pack: Any = True,
               out_dtype: Any = D.float32) -> tensor:
    """``lhs @ rhs`` of microscaled operands (formats ``e2m1``, ``e4m3``, ``e5m2``, ``bf16``,
    ``fp16``; scales ``[M, K // 32]`` and ``[N, K // 32]`` of e8m0 bytes, or None), plus ``acc``."""
    lf, rf = S.unwrap(lhs_format), S.unwrap(rhs_format)
    for fmt in (lf, rf):
        if fmt not in _FORMATS:
            raise S.error(f"tl.dot_scaled: format must be one of {', '.join(_FORMATS)}, got {fmt!r}")
    if S.as_dtype(out_dtype) != D.float32:
        raise S.error("tl.dot_scaled computes in float32 (out_dtype=tl.float32)")
    a, b = S.to_tensor(lhs), S.to_tensor(rhs)
    if a.ndim != 2 or b.ndim != 2:
        raise S.error(f"tl.dot_scaled needs 2D operands, got {list(a.shape)} and {list(b.shape)}")
    tiny = "fp16" not in (lf, rf)
    x = _apply_scale(_decode(a, lf, 1 if S.unwrap(lhs_k_pack) else 0), lhs_scale, 1, tiny)
    y = _apply_scale(_decode(b, rf, 0 if S.unwrap(rhs_k_pack) else 1), rhs_scale, 0, tiny)
    return _dot(x, y, acc, "ieee", None, None, D.float32)
