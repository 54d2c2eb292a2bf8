"""Inputs where C and the machines leave the answer undefined and the IR defines it.

``lowering/legalize.py`` spells these out before any emitter runs: integer ``//`` and ``%`` by 0
and by -1 (``INT_MIN // -1`` included), shift amounts at or past the bit width and negative
ones, arithmetic on int1, and (per target) NaN converted to an integer; the dialect's
saturating conversion handles +-inf and out-of-range floats.  Each case here feeds those
inputs to every form a guard takes (a divisor or amount that is a tile, a scalar broadcast over
the tile, a constant) for every integer type, and every float type to every integer type.  The
interpreter (``core/semantics.py``) gives the defined answers.  The ci profile runs all of them.
"""

from __future__ import annotations

import numpy as np

import tiles
import tiles.language as tl
from tiles.core import dtypes as D
from tiles.core.dtypes import DType

from ..case import Case, case
from ..compare import EXACT
from ..profiles import Profile
from ..values import edge_values, random_values

FAMILY = "guards"
INTS = (D.int8, D.int16, D.int32, D.int64, D.uint8, D.uint16, D.uint32, D.uint64)
FLOATS = (D.float16, D.bfloat16, D.float32, D.float64, D.float8e4nv, D.float8e5)
PROGRAMS = 8  # each program takes one of the special scalar divisors / amounts
BLOCK = 64


def _fill(rng: np.random.Generator, d: DType, front: list[int], n: int) -> np.ndarray:
    """``front`` first, then random values of ``d`` (edge values among them) up to ``n``."""
    rest = random_values(rng, d, (n - len(front),))
    return np.concatenate([np.array(front, dtype=object).astype(d.np), rest])


# ---------------------------------------------------------------- // and % by 0 and -1

@tiles.jit
def divide_guard_kernel(x_ptr, y_ptr, s_ptr, q_ptr, r_ptr, qs_ptr, rs_ptr, q0_ptr, r0_ptr, qm_ptr, rm_ptr,
                        ONES: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    s = tl.load(s_ptr + pid)  # one divisor per program, broadcast over the tile (guarded before it)
    tl.store(q_ptr + offs, x // y)
    tl.store(r_ptr + offs, x % y)
    tl.store(qs_ptr + offs, x // s)
    tl.store(rs_ptr + offs, x % s)
    tl.store(q0_ptr + offs, x // 0)
    tl.store(r0_ptr + offs, x % 0)
    tl.store(qm_ptr + offs, x // ONES)  # all ones: -1, or the unsigned type's maximum (Triton
    tl.store(rm_ptr + offs, x % ONES)  # refuses a negative number with an unsigned tile)


def _divisors(d: DType) -> list[int]:
    lo, hi = int(d.min()), int(d.max())
    signed = [0, -1, 1, lo, -2, 3, hi, lo + 1] if d.is_signed else [0, 1, hi, 2, 3, hi - 1, 7, 0]
    return signed[:PROGRAMS]


def _divide_case(d: DType) -> Case:
    n = PROGRAMS * BLOCK
    divisors = _divisors(d)
    dividends = sorted({int(v) for v in edge_values(d)} | {7, 2})

    def make(rng: np.random.Generator) -> list:
        pairs = [(a, b) for a in dividends for b in divisors]
        x = _fill(rng, d, [a for a, _ in pairs], n)
        y = _fill(rng, d, [b for _, b in pairs], n)
        y[len(pairs):][rng.random(n - len(pairs)) < 0.2] = 0  # zeros among the random divisors
        if d.is_signed:
            y[len(pairs):][rng.random(n - len(pairs)) < 0.2] = -1
            x[len(pairs)::5] = d.min()
        s = np.array(divisors, dtype=d.np)
        return [x, y, s] + [np.zeros(n, d.np) for _ in range(8)]
    return case(FAMILY, f"divide_by_zero_and_minus_one[{d}]", divide_guard_kernel, make, (PROGRAMS,),
                {i: EXACT for i in range(3, 11)},
                constexprs={"ONES": -1 if d.is_signed else int(d.max()), "BLOCK": BLOCK})


# ---------------------------------------------------------------- shifts out of range

@tiles.jit
def shift_guard_kernel(x_ptr, a_ptr, s_ptr, shl_ptr, shr_ptr, shls_ptr, shrs_ptr, shlc_ptr, shrc_ptr,
                       shln_ptr, shrn_ptr, BITS: tl.constexpr, ONES: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    a = tl.load(a_ptr + offs)
    s = tl.load(s_ptr + pid)  # one amount per program, broadcast over the tile
    tl.store(shl_ptr + offs, x << a)
    tl.store(shr_ptr + offs, x >> a)
    tl.store(shls_ptr + offs, x << s)
    tl.store(shrs_ptr + offs, x >> s)
    tl.store(shlc_ptr + offs, x << BITS)
    tl.store(shrc_ptr + offs, x >> BITS)
    tl.store(shln_ptr + offs, x << ONES)  # all ones: -1, or the unsigned type's maximum (Triton
    tl.store(shrn_ptr + offs, x >> ONES)  # refuses a negative number with an unsigned tile)


def _amounts(d: DType) -> list[int]:
    b, hi = d.bits, int(d.max())
    if d.is_signed:
        return [b, -1, b - 1, b + 1, -b, int(d.min()), hi, 2 * b]
    return [b, b - 1, b + 1, 2 * b, hi, 0, hi - 1, b + 7]


def _shift_case(d: DType) -> Case:
    n = PROGRAMS * 2 * BLOCK
    amounts = _amounts(d) + list(range(d.bits))
    values = sorted({int(v) for v in edge_values(d)} | {5, -6 if d.is_signed else 6})

    def make(rng: np.random.Generator) -> list:
        pairs = [(v, a) for v in values for a in amounts][:n]
        x = _fill(rng, d, [v for v, _ in pairs], n)
        a = np.concatenate([np.array([s for _, s in pairs], dtype=object).astype(d.np),
                            rng.integers(0, 3 * d.bits, n - len(pairs)).astype(d.np)])
        if d.is_signed:
            a[len(pairs)::3] = -rng.integers(1, 2 * d.bits, a[len(pairs)::3].size).astype(d.np)
        s = np.array(_amounts(d), dtype=d.np)
        return [x, a, s] + [np.zeros(n, d.np) for _ in range(8)]
    return case(FAMILY, f"shift_out_of_range[{d}]", shift_guard_kernel, make, (PROGRAMS,),
                {i: EXACT for i in range(3, 11)},
                constexprs={"BITS": d.bits, "ONES": -1 if d.is_signed else int(d.max()), "BLOCK": 2 * BLOCK})


# ---------------------------------------------------------------- int1 arithmetic

@tiles.jit
def _add(a, b):
    return a + b


@tiles.jit
def int1_kernel(x_ptr, y_ptr, out_ptr, red_ptr, M: tl.constexpr, N: tl.constexpr):
    """Arithmetic on one-bit values is arithmetic modulo 2 (``True + True`` is ``False``)."""
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    size = M * N
    tl.store(out_ptr + offs, x + y)
    tl.store(out_ptr + size + offs, x - y)
    tl.store(out_ptr + 2 * size + offs, x * y)
    tl.store(out_ptr + 3 * size + offs, x // y)
    tl.store(out_ptr + 4 * size + offs, x % y)
    tl.store(out_ptr + 5 * size + offs, x << y)
    tl.store(out_ptr + 6 * size + offs, x >> y)
    tl.store(out_ptr + 7 * size + offs, tl.maximum(x, y))
    tl.store(out_ptr + 8 * size + offs, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(out_ptr + 9 * size + offs, -x)
    tl.store(out_ptr + 10 * size + offs, tl.abs(y))
    tl.store(out_ptr + 11 * size + offs, tl.fma(x, y, x))
    rows = tl.arange(0, M)
    tl.store(red_ptr + rows, tl.max(x, axis=1))
    tl.store(red_ptr + M + rows, tl.min(y, axis=1))
    tl.store(red_ptr + 2 * M + rows, tl.reduce(x, 1, _add))  # the parity of each row


def _int1_case() -> Case:
    m, n = 8, 16

    def make(rng: np.random.Generator) -> list:
        x = rng.random((m, n)) < 0.5
        y = rng.random((m, n)) < 0.5
        x[0, :4], y[0, :4] = [False, False, True, True], [False, True, False, True]
        x[1, :], y[2, :] = True, False  # rows whose max, min and parity are not the common ones
        return [x, y, np.zeros(12 * m * n, np.bool_), np.zeros(3 * m, np.bool_)]
    return case(FAMILY, "int1_arithmetic", int1_kernel, make, (1,), {2: EXACT, 3: EXACT},
                constexprs={"M": m, "N": n})


# ---------------------------------------------------------------- float -> int: NaN, inf, out of range

@tiles.jit
def float_to_ints_kernel(x_ptr, i8_ptr, i16_ptr, i32_ptr, i64_ptr, u8_ptr, u16_ptr, u32_ptr, u64_ptr, b_ptr,
                         BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(i8_ptr + offs, x.to(tl.int8))
    tl.store(i16_ptr + offs, x.to(tl.int16))
    tl.store(i32_ptr + offs, x.to(tl.int32))
    tl.store(i64_ptr + offs, x.to(tl.int64))
    tl.store(u8_ptr + offs, x.to(tl.uint8))
    tl.store(u16_ptr + offs, x.to(tl.uint16))
    tl.store(u32_ptr + offs, x.to(tl.uint32))
    tl.store(u64_ptr + offs, x.to(tl.uint64))
    tl.store(b_ptr + offs, x.to(tl.int1))


def saturation_inputs(src: DType) -> np.ndarray:
    """NaN (both signs), +-inf, +-0.0, fractions, and values at, just inside and just past every
    integer type's limits, as float64 (rounded to ``src`` by the caller)."""
    values = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 0.75, -0.75, 1.5, -1.5, 2.5, -2.5,
              0.9999, -0.9999, 1e30, -1e30, 1e300, -1e300]
    for d in INTS:
        lo, hi = float(d.min()), float(d.max())
        values += [lo - 1, lo - 0.5, lo, lo + 0.5, hi - 0.5, hi, hi + 0.5, hi + 1, 2 * hi + 2, -2 * hi - 2]
    return np.array(values, dtype=np.float64)


def _float_to_ints_case(src: DType) -> Case:
    specials = saturation_inputs(src)
    with np.errstate(all="ignore"):
        specials = specials.astype(src.np)
    n = 4 * BLOCK

    def make(rng: np.random.Generator) -> list:
        scale = 10.0 ** rng.integers(0, 20, n - specials.size)
        rest = (rng.standard_normal(n - specials.size) * scale)
        with np.errstate(all="ignore"):
            x = np.concatenate([specials, rest.astype(src.np)])
        return [x] + [np.zeros(n, d.np) for d in INTS] + [np.zeros(n, np.bool_)]
    return case(FAMILY, f"float_to_every_int[{src}]", float_to_ints_kernel, make, (4,),
                {i: EXACT for i in range(1, 10)}, constexprs={"BLOCK": BLOCK})


def cases(profile: Profile) -> list[Case]:
    out = [_divide_case(d) for d in profile.sweep(INTS)]
    out += [_shift_case(d) for d in profile.sweep(INTS)]
    out.append(_int1_case())
    out += [_float_to_ints_case(d) for d in profile.sweep(FLOATS)]
    return out
