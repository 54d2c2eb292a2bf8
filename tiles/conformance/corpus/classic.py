"""Cases aimed at the classic backend bugs, each built so that the bug changes the output.

Float->int conversions of fractional values (truncation, not rounding), ``abs(INT_MIN)`` (a
compiler that takes ``abs`` as non-negative folds a clamp after it away), loads whose ``other``
reaches memory, stores whose mask cuts a vector, signed division and modulo of every sign
combination (C truncation), comparisons and max/min over NaN and -0.0, bf16/fp16 rounding
ties (to even), atomics hammered by every program on one address with every returned value
checked, ``num_warps`` other than 4, and 2-D/3-D grids.  The ci profile runs all of them.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

import tiles
import tiles.language as tl
from tiles.core import dtypes as D
from tiles.core.dtypes import DType

from ..case import Case, case
from ..compare import EXACT, EXACT_ZERO_SIGN_FREE
from ..profiles import Profile
from .casts import cast_kernel

FAMILY = "classic"
FLOATS = (D.float16, D.bfloat16, D.float32, D.float64, D.float8e4nv, D.float8e5)
INTS = (D.int8, D.int16, D.int32, D.int64, D.uint8, D.uint16, D.uint32, D.uint64)
SIGNED = (D.int8, D.int16, D.int32, D.int64)
FRACTIONS = (0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.25, -0.75, 3.75, -3.75, 0.9990234375, -0.9990234375,
             6.5, -6.5, 7.875, -7.875, 1.0, -1.0, 0.0, -0.0, 12.5, -13.5, 100.5, -100.5)


# ---------------------------------------------------------------- float -> int of fractions

def _fraction_case(src: DType, dst: DType) -> Case:
    values = np.array(FRACTIONS, dtype=np.float64)
    if not dst.is_signed:
        values = np.abs(values)
    values = values.astype(src.np)  # rounded to the source type: still fractional, in range
    values = values[np.abs(values.astype(np.float64)) < min(float(dst.max()), 127.0)]
    n = values.size

    def make(rng: np.random.Generator) -> list:
        return [rng.permutation(values), np.zeros(n, dst.np), n]
    return case(FAMILY, f"fraction_to_int[{src}->{dst}]", cast_kernel, make, (1,), {1: EXACT},
                constexprs={"DST": dst, "MODE": "convert", "BLOCK": 32})


# ---------------------------------------------------------------- other= and partial masks

@tiles.jit
def other_kernel(x_ptr, out_ptr, n, OTHER: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=(offs < n) & (offs % 3 != 1), other=OTHER)
    tl.store(out_ptr + offs, x)  # every lane: the masked-off ones show ``other``


@tiles.jit
def partial_store_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x + 1, mask=offs < n)  # lanes at and past n keep the sentinel


@tiles.jit
def masked_tail_kernel(x_ptr, out_ptr, n, m, N: tl.constexpr, BLOCK: tl.constexpr):
    """A masked load and a masked store over the same tail, 1-D (``n`` a multiple of 16, so the
    mask is one per vector chunk) and 2-D (whole rows masked off): the masked-off lanes hold
    ``other=0`` and must not reach memory, where the output starts as a sentinel."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0)
    tl.store(out_ptr + offs, x * 2, mask=offs < n)
    rows = tl.arange(0, BLOCK // N)[:, None]
    cols = tl.arange(0, N)[None, :]
    at = 2 * tl.num_programs(0) * BLOCK + tl.program_id(0) * BLOCK + rows * N + cols
    y = tl.load(x_ptr + at, mask=rows < m, other=0)
    tl.store(out_ptr + at, y * 3, mask=rows < m)


def _masked_tail_case(d: DType, n: int, m: int) -> Case:
    block, programs = 1024, 2

    def make(rng: np.random.Generator) -> list:
        size = 4 * programs * block
        return [rng.integers(1, 90, size).astype(d.np), np.zeros(size, d.np), n, m]  # out: a sentinel
    return case(FAMILY, f"masked_vector_tail[{d},n={n},rows={m}]", masked_tail_kernel, make, (programs,),
                {1: EXACT}, constexprs={"N": 64, "BLOCK": block})


def _other_case(d: DType) -> Case:
    block, n = 64, 50
    other = -7 if d.is_signed or d.is_floating else 77

    def make(rng: np.random.Generator) -> list:
        x = (rng.integers(1, 50, 2 * block) if not d.is_bool else rng.integers(0, 2, 2 * block)).astype(d.np)
        return [x, np.full(2 * block, 3, d.np), n]
    return case(FAMILY, f"other_observable[{d}]", other_kernel, make, (2,), {1: EXACT},
                constexprs={"OTHER": other if not d.is_bool else True, "BLOCK": block})


def _partial_store_case(d: DType, n: int) -> Case:
    block = 1024  # wider than a work-group: each thread holds a chunk of neighbours (a vector)

    def make(rng: np.random.Generator) -> list:
        return [rng.integers(0, 90, 2 * block).astype(d.np), np.full(2 * block, 99, d.np), n]
    return case(FAMILY, f"partial_vector_store[{d},n={n}]", partial_store_kernel, make, (2,), {1: EXACT},
                constexprs={"BLOCK": block})


# ---------------------------------------------------------------- signed division

@tiles.jit
def divmod_kernel(x_ptr, y_ptr, q_ptr, r_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(q_ptr + offs, x // y)
    tl.store(r_ptr + offs, x % y)


def _divmod_case(d: DType) -> Case:
    top = min(int(d.max()), 1000)
    block = 64

    def make(rng: np.random.Generator) -> list:
        mag_x = rng.integers(1, top, block)
        mag_y = rng.integers(2, 13, block)
        sign_x = np.tile([1, -1, 1, -1], block // 4)
        sign_y = np.tile([1, 1, -1, -1], block // 4)
        x = (sign_x * mag_x).astype(d.np)
        y = (sign_y * mag_y).astype(d.np)
        return [x, y, np.zeros(block, d.np), np.zeros(block, d.np)]
    return case(FAMILY, f"divmod_mixed_signs[{d}]", divmod_kernel, make, (1,), {2: EXACT, 3: EXACT},
                constexprs={"BLOCK": block})


# ---------------------------------------------------------------- abs(INT_MIN)

@tiles.jit
def abs_clamp_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.abs(tl.load(x_ptr + offs))
    tl.store(out_ptr + offs, tl.minimum(tl.maximum(a, -100), 100))  # abs(MIN) is MIN: gives -100


def _abs_min_case(d: DType) -> Case:
    block = 32

    def make(rng: np.random.Generator) -> list:
        x = rng.integers(int(d.min()), int(d.max()), block, endpoint=True).astype(d.np)
        x[::4] = d.min()
        return [x, np.zeros(block, d.np)]
    return case(FAMILY, f"abs_int_min_clamped[{d}]", abs_clamp_kernel, make, (1,), {1: EXACT},
                constexprs={"BLOCK": block})


# ---------------------------------------------------------------- NaN and -0.0

@tiles.jit
def nan_zero_kernel(x_ptr, y_ptr, cmp_ptr, max_ptr, min_ptr, sel_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    bits = ((x < y).to(tl.int32) | ((x <= y).to(tl.int32) << 1) | ((x == y).to(tl.int32) << 2)
            | ((x != y).to(tl.int32) << 3) | ((x > y).to(tl.int32) << 4) | ((x >= y).to(tl.int32) << 5))
    tl.store(cmp_ptr + offs, bits)
    tl.store(max_ptr + offs, tl.maximum(x, y))
    tl.store(min_ptr + offs, tl.minimum(x, y))
    tl.store(sel_ptr + offs, tl.where(x < y, x, y))


def _nan_zero_case(d: DType) -> Case:
    specials = [float("nan"), -0.0, 0.0, 1.0, -1.0, float("inf"), float("-inf")]
    pairs = [(a, b) for a in specials for b in specials]
    block = 64

    def make(rng: np.random.Generator) -> list:
        chosen = pairs + [pairs[i] for i in rng.integers(0, len(pairs), block - len(pairs))]
        x = np.array([a for a, _ in chosen], dtype=np.float64).astype(d.np)
        y = np.array([b for _, b in chosen], dtype=np.float64).astype(d.np)
        return [x, y, np.zeros(block, np.int32), np.zeros(block, d.np), np.zeros(block, d.np),
                np.zeros(block, d.np)]
    return case(FAMILY, f"nan_and_negative_zero[{d}]", nan_zero_kernel, make, (1,),
                {2: EXACT, 3: EXACT_ZERO_SIGN_FREE, 4: EXACT_ZERO_SIGN_FREE, 5: EXACT},
                constexprs={"BLOCK": block})


@tiles.jit
def nan_reduce_kernel(x_ptr, max_ptr, min_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)
    x = tl.load(x_ptr + rows[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(max_ptr + rows, tl.max(x, axis=1))
    tl.store(min_ptr + rows, tl.min(x, axis=1))


def _nan_reduce_case(d: DType) -> Case:
    m, n = 8, 32

    def make(rng: np.random.Generator) -> list:
        x = rng.standard_normal((m, n)) * 10
        x[np.arange(m), rng.integers(0, n, m)] = np.nan  # a NaN in every row...
        x[1::2, rng.integers(0, n)] = np.nan
        x[0, :] = np.nan  # ...and one row of nothing else
        x[2, :] = -0.0
        x[3, ::2] = 0.0
        return [x.astype(d.np), np.zeros(m, d.np), np.zeros(m, d.np)]
    return case(FAMILY, f"nan_reduction[{d}]", nan_reduce_kernel, make, (1,),
                {1: EXACT_ZERO_SIGN_FREE, 2: EXACT_ZERO_SIGN_FREE}, constexprs={"M": m, "N": n})


# ---------------------------------------------------------------- rounding ties

@tiles.jit
def ties_kernel(x_ptr, y_ptr, cast_ptr, add_ptr, DST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(cast_ptr + offs, x.to(DST))
    tl.store(add_ptr + offs, x.to(DST) + y.to(DST))  # exact sum in float32, a tie in DST


def _ties(d: DType, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(midpoints, low neighbours, half steps), float32, random signs: each midpoint lies exactly
    halfway between two neighbours of ``d`` (both parities of the low one), and low + half step
    is exactly the midpoint."""
    narrow = np.dtype(ml_dtypes.bfloat16) if d == D.bfloat16 else np.dtype(np.float16)
    first, last = (0x3c00, 0x4a00) if d == D.float16 else (0x3f80, 0x4480)
    bits = rng.integers(first, last, n)
    lo = bits.astype(np.uint16).view(narrow).astype(np.float32)
    hi = (bits + 1).astype(np.uint16).view(narrow).astype(np.float32)
    signs = np.where(rng.random(n) < 0.5, -1.0, 1.0).astype(np.float32)
    return ((lo + hi) / 2 * signs).astype(np.float32), lo * signs, ((hi - lo) / 2 * signs).astype(np.float32)


def _ties_case(d: DType) -> Case:
    block = 64

    def make(rng: np.random.Generator) -> list:
        _, low, half = _ties(d, rng, block)
        return [low, half, np.zeros(block, d.np), np.zeros(block, d.np)]
    return case(FAMILY, f"rounding_ties[{d}]", ties_kernel, make, (1,), {2: EXACT, 3: EXACT},
                constexprs={"DST": d, "BLOCK": block})


def _cast_ties_case(d: DType) -> Case:
    block = 64

    def make(rng: np.random.Generator) -> list:
        mid, _, _ = _ties(d, rng, block)
        return [mid, np.zeros(block, d.np), block]
    return case(FAMILY, f"cast_ties[float32->{d}]", cast_kernel, make, (1,), {1: EXACT},
                constexprs={"DST": d, "MODE": "convert", "BLOCK": block})


# ---------------------------------------------------------------- contended atomics

@tiles.jit
def hammer_kernel(counter_ptr, old_ptr, KIND: tl.constexpr, BLOCK: tl.constexpr):
    """Every lane of every program adds one to one address; the old values must be 0..total-1."""
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    ones = tl.full((BLOCK,), 1, counter_ptr.dtype.element_ty)
    if KIND == "add":
        old = tl.atomic_add(counter_ptr + lanes * 0, ones)
    else:  # a compare-and-swap loop per program: one increment each
        cur = tl.atomic_add(counter_ptr, 0)
        prev = tl.atomic_cas(counter_ptr, cur, cur + 1)
        while prev != cur:
            cur = prev
            prev = tl.atomic_cas(counter_ptr, cur, cur + 1)
        old = tl.full((BLOCK,), 0, counter_ptr.dtype.element_ty) + cur
    tl.store(old_ptr + pid * BLOCK + lanes, old)


def _every_old_value_once(inputs: list, ref: list, got: list) -> str | None:
    olds = np.sort(got[1].astype(np.float64).reshape(-1))
    expected = np.sort(ref[1].astype(np.float64).reshape(-1))
    if not np.array_equal(olds, expected):
        lost = sorted(set(expected.tolist()) - set(olds.tolist()))[:8]
        return (f"the returned old values are not each count exactly once (an update was lost or "
                f"seen twice): missing {lost}, final counter {got[0].tolist()}")
    return None


def _hammer_case(kind: str, d: DType, programs: int) -> Case:
    block = 128 if kind == "add" else 1

    def make(rng: np.random.Generator) -> list:
        return [np.zeros(1, d.np), np.full(programs * block, 7, d.np)]
    return case(FAMILY, f"atomic_{kind}_one_address[{d},programs={programs}]", hammer_kernel, make,
                (programs,), {0: EXACT}, constexprs={"KIND": kind, "BLOCK": block}, check=_every_old_value_once)


@tiles.jit
def cas_once_kernel(lock_ptr, old_ptr):
    pid = tl.program_id(0)
    zero = tl.zeros((), lock_ptr.dtype.element_ty)
    tl.store(old_ptr + pid, tl.atomic_cas(lock_ptr, zero, (pid + 1).to(lock_ptr.dtype.element_ty)))


def _cas_once_case(d: DType, programs: int = 64) -> Case:
    from .atomics import _cas_single_winner

    def make(rng: np.random.Generator) -> list:
        return [np.zeros(1, d.np), np.full(programs, -1, d.np)]
    return case(FAMILY, f"cas_one_winner[{d}]", cas_once_kernel, make, (programs,), {},
                check=_cas_single_winner)


@tiles.jit
def collatz64_kernel(x_ptr, out_ptr):
    """A scalar while loop carrying int64 values past 2**32."""
    pid = tl.program_id(0)
    x = tl.load(x_ptr + pid)
    steps = x * 0
    while x != 1:
        x = tl.where(x % 2 == 0, x // 2, 3 * x + 1)
        steps += 1
    tl.store(out_ptr + pid, steps)


def _collatz64_case() -> Case:
    def make(rng: np.random.Generator) -> list:
        return [rng.integers(2**33, 2**34, 8).astype(np.int64), np.zeros(8, np.int64)]
    return case(FAMILY, "while_int64[collatz]", collatz64_kernel, make, (8,), {1: EXACT})


# ---------------------------------------------------------------- num_warps and grids

@tiles.jit
def warps_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    total = tl.sum(x, axis=1)
    y = tl.cumsum(x, axis=1) + tl.max(x, axis=0)[None, :] - total[:, None]
    tl.store(out_ptr + rows * N + cols, tl.trans(tl.trans(y)))


def _warps_case(num_warps: int) -> Case:
    m, n = 16, 64

    def make(rng: np.random.Generator) -> list:
        return [rng.integers(-1000, 1000, (m, n)).astype(np.int32), np.zeros((m, n), np.int32)]
    return case(FAMILY, f"num_warps={num_warps}", warps_kernel, make, (1,), {1: EXACT},
                constexprs={"M": m, "N": n, "num_warps": num_warps})


@tiles.jit
def grid_kernel(out_ptr, BLOCK: tl.constexpr):
    p0, p1, p2 = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    n0, n1, n2 = tl.num_programs(0), tl.num_programs(1), tl.num_programs(2)
    flat = (p2 * n1 + p1) * n0 + p0
    lanes = tl.arange(0, BLOCK)
    value = flat * 1000000 + p0 * 10000 + p1 * 100 + p2 + (n0 * 9 + n1 * 7 + n2 * 5) * 0 + lanes * 0
    tl.store(out_ptr + flat * BLOCK + lanes, value + (n0 * 100 + n1 * 10 + n2) * (lanes == 1))


def _grid_case(grid: tuple[int, ...]) -> Case:
    total = int(np.prod(grid))
    # slack that stays -1, so a program writing at a wrongly computed index shows as a wrong
    # value instead of corrupting memory: with every id below max(grid), flat < 3 * max(grid) * total
    slots = 3 * max(grid) * total

    def make(rng: np.random.Generator) -> list:
        return [np.full(slots * 4, -1, np.int32)]
    return case(FAMILY, f"grid{'x'.join(map(str, grid))}", grid_kernel, make, grid, {0: EXACT},
                constexprs={"BLOCK": 4})


def cases(profile: Profile) -> list[Case]:
    out = [_fraction_case(src, dst) for src in FLOATS for dst in INTS]
    out += [_other_case(d) for d in D.ALL_DTYPES if d in D.LOWERED_DTYPES and d not in (D.float8e4nv, D.float8e5)]
    out += [_partial_store_case(d, n) for d in (D.int8, D.float16, D.int32, D.float32, D.int64)
            for n in (1021, 1027)]
    out += [_masked_tail_case(d, 1072, 5) for d in (D.int8, D.float16, D.int32, D.float32, D.int64)]
    out += [_divmod_case(d) for d in SIGNED]
    out += [_abs_min_case(d) for d in SIGNED]
    out += [_nan_zero_case(d) for d in (D.float16, D.bfloat16, D.float32, D.float64)]
    out += [_nan_reduce_case(d) for d in (D.float16, D.bfloat16, D.float32, D.float64)]
    out += [_ties_case(d) for d in (D.bfloat16, D.float16)]
    out += [_cast_ties_case(d) for d in (D.bfloat16, D.float16)]
    out += [_hammer_case("add", d, 512) for d in (D.int32, D.uint32, D.int64, D.float32, D.float64)]
    out += [_hammer_case("cas", d, 64) for d in (D.int32, D.int64)]  # barriers in a data-dependent loop
    out += [_cas_once_case(d) for d in (D.int32, D.int64)]
    out.append(_collatz64_case())
    out += [_warps_case(w) for w in (1, 2, 8)]
    out += [_grid_case(g) for g in ((3, 5), (2, 3, 4), (1, 1, 7))]
    return out
