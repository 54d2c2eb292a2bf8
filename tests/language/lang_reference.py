"""Pure-Python references the language tests compare against: Triton's promotion table,
C integer division, two's-complement wrapping."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import tiles.language as tl

NUMPY = {
    tl.int1: np.bool_, tl.int8: np.int8, tl.int16: np.int16, tl.int32: np.int32, tl.int64: np.int64,
    tl.uint8: np.uint8, tl.uint16: np.uint16, tl.uint32: np.uint32, tl.uint64: np.uint64,
    tl.float16: np.float16, tl.bfloat16: ml_dtypes.bfloat16, tl.float32: np.float32,
    tl.float64: np.float64,
}
INTS = [tl.int8, tl.int16, tl.int32, tl.int64, tl.uint8, tl.uint16, tl.uint32, tl.uint64]
FLOATS = [tl.float16, tl.bfloat16, tl.float32, tl.float64]


def _kind(d) -> int:
    return 0 if d == tl.int1 else 2 if d in FLOATS else 1


def _signed(d) -> bool:
    return d in (tl.int8, tl.int16, tl.int32, tl.int64)


def _bits(d) -> int:
    return 1 if d == tl.int1 else np.dtype(NUMPY[d]).itemsize * 8


def literal_dtype(value):
    if isinstance(value, bool):
        return tl.int1
    if isinstance(value, float):
        return tl.float32
    for lo, hi, d in ((-(2**31), 2**31, tl.int32), (2**31, 2**32, tl.uint32),
                      (-(2**63), 2**63, tl.int64), (2**63, 2**64, tl.uint64)):
        if lo <= value < hi:
            return d
    raise OverflowError(value)


def promote(a, a_literal: bool, b, b_literal: bool, div_or_mod: bool = False):
    """The type Triton computes ``a op b`` in (None where Triton raises)."""
    if a_literal != b_literal:
        lit, tile = (a, b) if a_literal else (b, a)
        if _kind(lit) <= _kind(tile):
            if div_or_mod and tile in (tl.float16, tl.bfloat16):
                return tl.float32
            return tile
    for wide in (tl.float64, tl.float32):
        if wide in (a, b):
            return wide
    if tl.float16 in (a, b):
        return tl.float32 if div_or_mod else tl.float16
    if a == b == tl.bfloat16:
        return tl.float32 if div_or_mod else tl.bfloat16
    if tl.bfloat16 in (a, b):
        return tl.float32
    # C's usual arithmetic conversions (int1 counts as unsigned, as in Triton)
    a_signed, b_signed = _signed(a), _signed(b)
    if div_or_mod and a_signed != b_signed:
        return None
    if a_signed == b_signed:
        return a if _bits(a) > _bits(b) else b
    unsigned, signed = (a, b) if not a_signed else (b, a)
    return unsigned if _bits(unsigned) >= _bits(signed) else signed


def wrap_int(value: int, dtype) -> int:
    bits = _bits(dtype)
    value &= (1 << bits) - 1
    if _signed(dtype) and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def literal_fits(value, dtype) -> bool:
    """Whether a Python int literal meeting a tile of integer type ``dtype`` is one of its values:
    Triton 3.9 raises otherwise ('Cannot perform a binary operation between an unsigned tensor and
    a negative scalar', 'Scalar N is out of range for type T') instead of wrapping."""
    if dtype == tl.int1 or isinstance(value, (bool, float)):
        return True
    bits = _bits(dtype)
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if _signed(dtype) else (0, (1 << bits) - 1)
    return lo <= value <= hi


def c_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def c_mod(x: int, y: int) -> int:
    return x - y * c_div(x, y)


def int_elementwise(fn, x: np.ndarray, y: np.ndarray, dtype) -> np.ndarray:
    """fn on exact Python ints, wrapped to ``dtype``."""
    out = [wrap_int(fn(int(a), int(b)), dtype) for a, b in zip(x.ravel(), y.ravel())]
    return np.array(out, dtype=NUMPY[dtype]).reshape(x.shape)


def random_values(rng: np.random.Generator, dtype, n: int) -> np.ndarray:
    """Random values of ``dtype`` that include its edge values (NaN, ±inf, -0.0, min, max)."""
    np_dtype = NUMPY[dtype]
    if dtype == tl.int1:
        return rng.integers(0, 2, n).astype(np.bool_)
    if dtype in FLOATS:
        x = (rng.standard_normal(n) * 100).astype(np_dtype)
        edges = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.5], dtype=np_dtype)
    else:
        info = np.iinfo(np_dtype)
        x = rng.integers(info.min, info.max, n, dtype=np_dtype, endpoint=True)
        edges = np.array([info.min, info.max, 0, 1, info.max // 2], dtype=np_dtype)
        if info.min < 0:
            edges = np.concatenate([edges, np.array([-1, info.min + 1], dtype=np_dtype)])
    k = min(len(edges), n)
    x[rng.choice(n, k, replace=False)] = edges[:k]
    return x
