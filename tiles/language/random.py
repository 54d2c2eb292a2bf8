"""Counter-based random numbers: Philox-4x32 with 10 rounds (Triton's stream).

Built from ordinary tile ops (umulhi, multiply, xor), so every backend gets it
for free and the interpreter reproduces it bit for bit.
"""

from __future__ import annotations

import math as _math
from typing import Any

from ..core import dtypes as D
from . import semantic as S
from .core import cos, log, maximum, sin, sqrt, umulhi
from .tensor import tensor

N_ROUNDS_DEFAULT = 10
_ROUND_A = 0xD2511F53
_ROUND_B = 0xCD9E8D57
_KEY_A = 0x9E3779B9
_KEY_B = 0xBB67AE85


def _u32(x: Any) -> tensor:
    t = S.to_tensor(x)
    if t.dtype == D.uint32:
        return t
    if t.dtype.bits == 32:
        return S.cast(t, D.uint32, bitcast=True)
    return S.cast(t, D.uint32)


def philox(seed: Any, c0: Any, c1: Any, c2: Any, c3: Any, n_rounds: int = N_ROUNDS_DEFAULT):
    seed64 = S.cast(S.to_tensor(seed), D.uint64)
    k0 = S.cast(S.bitwise("and", seed64, 0xFFFFFFFF), D.uint32)
    k1 = S.cast(S.bitwise("and", S.shift("shr", seed64, 32), 0xFFFFFFFF), D.uint32)
    x0, x1, x2, x3 = _u32(c0), _u32(c1), _u32(c2), _u32(c3)
    a = S.const(_ROUND_A, D.uint32)
    b = S.const(_ROUND_B, D.uint32)
    for _ in range(int(S.unwrap(n_rounds))):
        p0, p2 = x0, x2
        x0 = umulhi(b, p2) ^ x1 ^ k0
        x2 = umulhi(a, p0) ^ x3 ^ k1
        x1 = b * p2
        x3 = a * p0
        k0 = k0 + _KEY_A
        k1 = k1 + _KEY_B
    return x0, x1, x2, x3


def randint4x(seed: Any, offset: Any, n_rounds: int = N_ROUNDS_DEFAULT):
    off = S.to_tensor(offset)
    if off.dtype.bits > 32:
        raise S.error("random offsets must be 32-bit integers in tiles (64-bit Philox is not implemented)")
    zero = off * 0
    return philox(seed, off, zero, zero, zero, n_rounds)


def randint(seed: Any, offset: Any, n_rounds: int = N_ROUNDS_DEFAULT) -> tensor:
    return randint4x(seed, offset, n_rounds)[0]


def uint_to_uniform_float(x: tensor) -> tensor:
    """Map 32 random bits to a float32 in [0, 1)."""
    s = S.cast(x, D.int32, bitcast=True) if x.dtype != D.int32 else x
    s = S.where(s < 0, -s - 1, s)
    return S.mul(s, S.const(4.6566127342e-10, D.float32))


def rand(seed: Any, offset: Any, n_rounds: int = N_ROUNDS_DEFAULT) -> tensor:
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


def pair_uniform_to_normal(u1: tensor, u2: tensor) -> tuple[tensor, tensor]:
    """Box-Muller transform of two uniforms into two standard normals."""
    u1 = maximum(1.0e-7, u1)
    th = 2 * _math.pi * u2
    r = sqrt(-2.0 * log(u1))
    return r * cos(th), r * sin(th)


def randn(seed: Any, offset: Any, n_rounds: int = N_ROUNDS_DEFAULT) -> tensor:
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    n1, _ = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    return n1


def randn4x(seed: Any, offset: Any, n_rounds: int = N_ROUNDS_DEFAULT):
    i1, i2, i3, i4 = randint4x(seed, offset, n_rounds)
    u = [uint_to_uniform_float(i) for i in (i1, i2, i3, i4)]
    n1, n2 = pair_uniform_to_normal(u[0], u[1])
    n3, n4 = pair_uniform_to_normal(u[2], u[3])
    return n1, n2, n3, n4


def rand4x(seed: Any, offset: Any, n_rounds: int = N_ROUNDS_DEFAULT):
    return tuple(uint_to_uniform_float(i) for i in randint4x(seed, offset, n_rounds))
