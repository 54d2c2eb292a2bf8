"""Counter-based random numbers: Philox with Triton's constants and streams.

``philox`` runs Philox-4x32 (or 4x64 when the counters are 64-bit) keyed by the
seed; ``randint4x`` puts the offset in the counter (low 32 bits in the first
word, high 32 bits of a 64-bit offset in the second).  Built from ordinary tile
ops (umulhi, multiply, xor), so every backend gets it and the interpreter gives
the same bits as Triton's for the same seed and offsets
(``tests/language/test_random_triton.py``).
"""

from __future__ import annotations

from typing import Any

from ..core import dtypes as D
from . import semantic as S
from .constexpr import constexpr
from .core import cos, log, maximum, sin, sqrt, umulhi
from .tensor import tensor

N_ROUNDS_DEFAULT = constexpr(10)

# (round multiplier A, round multiplier B, key increment A, key increment B) by word width
_CONSTANTS = {
    32: (0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85),
    64: (0xD2E7470EE14C6C93, 0xCA5A826395121157, 0x9E3779B97F4A7C15, 0xBB67AE8584CAA73B),
}


def philox_impl(c0: Any, c1: Any, c2: Any, c3: Any, k0: Any, k1: Any,
                n_rounds: Any = N_ROUNDS_DEFAULT) -> tuple[tensor, tensor, tensor, tensor]:
    """``n_rounds`` Philox rounds on counter words ``c0..c3`` (all uint32 or all uint64) with key ``k0, k1``."""
    x0, x1, x2, x3 = (S.to_tensor(c) for c in (c0, c1, c2, c3))
    dtype = x0.dtype
    if not isinstance(dtype, D.DType) or dtype not in (D.uint32, D.uint64):
        raise S.error(f"philox_impl needs uint32 or uint64 counters, got {dtype}")
    width = dtype.bits
    round_a, round_b, key_a, key_b = (S.const(c, dtype) for c in _CONSTANTS[width])
    key0, key1 = S.cast(S.to_tensor(k0), x0.dtype), S.cast(S.to_tensor(k1), x0.dtype)
    for _ in range(int(S.unwrap(n_rounds))):
        p0, p2 = x0, x2
        x0 = umulhi(round_b, p2) ^ x1 ^ key0
        x2 = umulhi(round_a, p0) ^ x3 ^ key1
        x1 = round_b * p2
        x3 = round_a * p0
        key0 = key0 + key_a
        key1 = key1 + key_b
    return x0, x1, x2, x3


def philox(seed: Any, c0: Any, c1: Any, c2: Any, c3: Any,
           n_rounds: Any = N_ROUNDS_DEFAULT) -> tuple[tensor, tensor, tensor, tensor]:
    """Philox keyed by ``seed``; 32-bit counters use both seed halves as the key, 64-bit ones the whole seed."""
    s = S.to_tensor(seed)
    if not s.dtype.is_int:
        raise S.error(f"the random seed must be an integer, got {s.dtype}")
    s = S.cast(s, D.uint64)
    counters = [S.to_tensor(c) for c in (c0, c1, c2, c3)]
    width = counters[0].dtype.bits
    if width == 32:
        word = D.uint32
        key_lo = S.cast(s & 0xFFFFFFFF, word)
        key_hi = S.cast((s >> 32) & 0xFFFFFFFF, word)
    elif width == 64:
        word = D.uint64
        # Triton keys 64-bit Philox with a one-element zero block: results gain that shape.
        key_lo, key_hi = s, S.const(0, word, (1,))
    else:
        raise S.error(f"philox counters must be 32- or 64-bit integers, got {counters[0].dtype}")
    w0, w1, w2, w3 = (S.cast(c, word, bitcast=c.dtype.bits == width) for c in counters)
    return philox_impl(w0, w1, w2, w3, key_lo, key_hi, n_rounds)


def randint4x(seed: Any, offset: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> tuple[tensor, tensor, tensor, tensor]:
    """Four blocks of random uint32 for one seed and a block of integer offsets."""
    off = S.to_tensor(offset)
    if not off.dtype.is_int:
        raise S.error(f"random offsets must be integers, got {off.dtype}")
    lo = S.cast(off, D.uint32)
    zero = lo * 0
    hi = S.cast(off >> 32, D.uint32) if off.dtype.bits > 32 else zero
    return philox(seed, lo, hi, zero, zero, n_rounds)


def randint(seed: Any, offset: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> tensor:
    """One block of random uint32 (the first word of ``randint4x``)."""
    return randint4x(seed, offset, n_rounds)[0]


def uint_to_uniform_float(x: Any) -> tensor:
    """Map random 32- or 64-bit integers to float32 in [0, 1)."""
    t = S.to_tensor(x)
    if t.dtype in (D.uint32, D.int32):
        signed, scale = D.int32, 4.6566127342e-10  # largest scale with INT32_MAX * scale < 1 in float32
    elif t.dtype in (D.uint64, D.int64):
        signed, scale = D.int64, 1.0842020432385337e-19
    else:
        raise S.error(f"uint_to_uniform_float needs 32- or 64-bit integers, got {t.dtype}")
    s = S.cast(t, signed, bitcast=True)
    s = S.where(s < 0, ~s, s)
    return s * scale


def rand(seed: Any, offset: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> tensor:
    """One block of float32 uniform in [0, 1)."""
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


def rand4x(seed: Any, offsets: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> tuple[tensor, tensor, tensor, tensor]:
    """Four blocks of float32 uniform in [0, 1)."""
    a, b, c, d = (uint_to_uniform_float(i) for i in randint4x(seed, offsets, n_rounds))
    return a, b, c, d


def pair_uniform_to_normal(u1: Any, u2: Any) -> tuple[tensor, tensor]:
    """Box-Muller transform of two uniforms into two standard normals."""
    u1 = maximum(1.0e-7, u1)
    th = 6.283185307179586 * S.to_tensor(u2)
    r = sqrt(-2.0 * log(u1))
    return r * cos(th), r * sin(th)


def randn(seed: Any, offset: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> tensor:
    """One block of float32 standard normals."""
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    n1, _ = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    return n1


def randn4x(seed: Any, offset: Any, n_rounds: Any = N_ROUNDS_DEFAULT) -> tuple[tensor, tensor, tensor, tensor]:
    """Four blocks of float32 standard normals."""
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
