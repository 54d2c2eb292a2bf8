"""Elementwise arithmetic, bitwise, comparison and min/max ops per dtype pair."""

from __future__ import annotations

import numpy as np

import tiles
import tiles.language as tl
from tiles.core import dtypes as D
from tiles.core.dtypes import DType
from tiles.core.ops import Op

from ..case import Case, case
from ..compare import rule_for_ops
from ..profiles import Profile
from ..values import random_array


@tiles.jit
def binary_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "truediv":
        r = x / y
    elif OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "and":
        r = x & y
    elif OP == "or":
        r = x | y
    elif OP == "xor":
        r = x ^ y
    elif OP == "shl":
        r = x << y
    elif OP == "shr":
        r = x >> y
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "maximum_nan":
        r = tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "minimum_nan":
        r = tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL)
    elif OP == "umulhi":
        r = tl.umulhi(x, y)
    elif OP == "eq":
        r = x == y
    elif OP == "ne":
        r = x != y
    elif OP == "lt":
        r = x < y
    elif OP == "le":
        r = x <= y
    elif OP == "gt":
        r = x > y
    else:
        r = x >= y
    tl.store(out_ptr + offs, r, mask=m)


@tiles.jit
def literal_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if OP == "add_int":
        r = x + 3
    elif OP == "rsub_int":
        r = 7 - x
    elif OP == "mul_neg":
        r = x * -2
    elif OP == "add_float":
        r = x + 1.5
    elif OP == "div_float":
        r = x / 3.0
    elif OP == "big_literal":
        r = x + 4000000000  # BIG_LITERAL
    else:
        r = (x * 2 + 1) - x
    tl.store(out_ptr + offs, r, mask=m)


@tiles.jit
def unary_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if OP == "neg":
        r = -x
    elif OP == "invert":
        r = ~x
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "isnan":
        r = tl.isnan(x)
    else:
        r = x != x
    tl.store(out_ptr + offs, r, mask=m)


@tiles.jit
def fma_where_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    if OP == "fma":
        r = tl.fma(x, y, z)
    elif OP == "where":
        r = tl.where(x > y, y, z)
    else:
        r = tl.clamp(x, y, z)
    tl.store(out_ptr + offs, r, mask=m)


INTS = (D.int8, D.int16, D.int32, D.int64, D.uint8, D.uint16, D.uint32, D.uint64)
FLOATS = (D.float8e4nv, D.float8e5, D.float16, D.bfloat16, D.float32, D.float64)
ARITH_FLOATS = (D.float16, D.bfloat16, D.float32, D.float64)
MIXED_PAIRS = ((D.int8, D.uint8), (D.int32, D.uint32), (D.int16, D.int64), (D.int1, D.int8),
               (D.uint8, D.int32), (D.float16, D.bfloat16), (D.bfloat16, D.float32),
               (D.float8e4nv, D.float8e5), (D.int32, D.float16), (D.uint64, D.float32),
               (D.float16, D.float64), (D.int64, D.float32), (D.float8e4nv, D.float16))
# op name -> (IR op, dtype class it takes: "int", "float" or "any")
BINARY = {
    "add": (Op.ADD, "any"), "sub": (Op.SUB, "any"), "mul": (Op.MUL, "any"),
    "truediv": (Op.DIV, "any"), "floordiv": (Op.IDIV, "int"), "mod": (Op.MOD, "any"),
    "and": (Op.AND, "int"), "or": (Op.OR, "int"), "xor": (Op.XOR, "int"),
    "shl": (Op.SHL, "int"), "shr": (Op.SHR, "int"),
    "maximum": (Op.MAXIMUM, "any"), "minimum": (Op.MINIMUM, "any"),
    "maximum_nan": (Op.MAXIMUM_NAN, "float"), "minimum_nan": (Op.MINIMUM_NAN, "float"),
    "umulhi": (Op.UMULHI, "int32+"),
    "eq": (Op.EQ, "any"), "ne": (Op.NE, "any"), "lt": (Op.LT, "any"), "le": (Op.LE, "any"),
    "gt": (Op.GT, "any"), "ge": (Op.GE, "any"),
}
COMPARISONS = {"eq", "ne", "lt", "le", "gt", "ge"}


def _takes(kind: str, a: DType, b: DType, op: str) -> bool:
    ints = a.is_int and b.is_int
    if op in ("truediv", "mod", "floordiv") and ints and a.is_signed != b.is_signed:
        return False  # a compile error by design (signedness differs; int1 counts as unsigned)
    if kind == "int":
        return ints and not (a.is_bool and b.is_bool and op in ("shl", "shr", "floordiv"))
    if kind == "float":
        return a.is_floating and b.is_floating
    if kind == "int32+":
        return ints and a == b and a.bits >= 32
    if a.is_bool and b.is_bool and op in ("truediv", "mod"):
        return False
    if op in ("add", "sub", "mul", "truediv", "mod") and (a.is_fp8 or b.is_fp8) and a != b:
        return False
    return True


def result_dtype(op: str, a: DType, b: DType) -> DType:
    if op in COMPARISONS:
        return D.int1
    ctype = D.computation_type(a, False, b, False, div_or_mod=op in ("truediv", "mod", "floordiv"))
    if op == "truediv" and ctype.is_int:
        return D.float32
    return ctype


def _safe_divisor_and_shift(op: str, x: np.ndarray, y: np.ndarray, ctype: DType) -> None:
    """Rewrite inputs in place so the op has no undefined behaviour."""
    if op in ("floordiv", "mod") and ctype.is_int:
        y[y == 0] = 1
        if ctype.is_signed:
            lo = ctype.min()
            bad = (x.astype(np.int64) == lo) & (y.astype(np.int64) == -1)
            y[bad] = 1
    if op in ("shl", "shr"):
        y[...] = (y.astype(np.int64) & (ctype.bits - 1)).astype(y.dtype)


def _binary_args(op: str, a: DType, b: DType, n: int, block: int):
    ctype = result_dtype(op, a, b) if op not in COMPARISONS else a

    def make(rng: np.random.Generator) -> list:
        x = random_array(rng, a, (n,))
        y = random_array(rng, b, (n,))
        if ctype.is_int:
            _safe_divisor_and_shift(op, x, y, D.computation_type(a, False, b, False))
        out = np.full(n, 7, dtype=result_dtype(op, a, b).np)
        return [x, y, out, n]
    return make


def _pairs(profile: Profile) -> list[tuple[DType, DType]]:
    same = [(d, d) for d in profile.dtypes]
    mixed = [p for p in MIXED_PAIRS if p[0] in profile.dtypes or p[1] in profile.dtypes]
    return same + mixed


def cases(profile: Profile) -> list[Case]:
    out = []
    n, block = profile.shapes[-1] - 3 if profile.shapes[-1] > 3 else 1, profile.shapes[-1]
    grid = (tiles.cdiv(n, block),)
    for op, (ir_op, kind) in BINARY.items():
        for a, b in _pairs(profile):
            if not _takes(kind, a, b, op):
                continue
            out.append(case("elementwise", f"{op}[{a}x{b}]", binary_kernel, _binary_args(op, a, b, n, block),
                            grid, {2: rule_for_ops([ir_op])}, constexprs={"OP": op, "BLOCK": block}))
    for op in ("add_int", "rsub_int", "mul_neg", "add_float", "div_float", "big_literal", "mixed"):
        for d in profile.sweep((D.int8, D.uint8, D.int32, D.uint32, D.int64, D.float16, D.bfloat16,
                                D.float32)):
            if _literal_refused(op, d):
                continue  # a compile error, as in Triton (the number does not fit the tile's type)
            out.append(_literal_case(op, d, n, block, grid))
    for op in ("neg", "invert", "abs", "isnan", "self_ne"):
        for d in profile.dtypes:
            if (op == "invert") != d.is_int or (op == "isnan" and d.is_fp8) or \
                    (op in ("neg", "abs") and d.is_bool) or (op == "neg" and d.is_fp8):
                continue
            res = D.int1 if op in ("isnan", "self_ne") else d

            def make(rng, d=d, res=res):
                return [random_array(rng, d, (n,)), np.zeros(n, res.np), n]
            ir_op = {"neg": Op.NEG, "invert": Op.NOT, "abs": Op.ABS, "isnan": Op.ISNAN, "self_ne": Op.NE}[op]
            out.append(case("elementwise", f"{op}[{d}]", unary_kernel, make, grid,
                            {1: rule_for_ops([ir_op])}, constexprs={"OP": op, "BLOCK": block}))
    for op in ("fma", "where", "clamp"):
        for d in profile.sweep(ARITH_FLOATS + (D.int32, D.uint8)):
            if op == "fma" and d.is_int:
                continue

            def make3(rng, d=d):
                return [random_array(rng, d, (n,)) for _ in range(3)] + [np.zeros(n, d.np), n]
            ir_op = {"fma": Op.FMA, "where": Op.WHERE, "clamp": Op.MINIMUM}[op]
            out.append(case("elementwise", f"{op}[{d}]", fma_where_kernel, make3, grid,
                            {3: rule_for_ops([ir_op])}, constexprs={"OP": op, "BLOCK": block}))
    return out


def _literal_refused(op: str, d: DType) -> bool:
    """Whether ``literal_kernel``'s number cannot be held by the integer tile it meets."""
    lit = {"mul_neg": -2, "big_literal": 4000000000}.get(op)
    return lit is not None and d.is_int and D.computation_type(d, False, D.literal_type(lit), True) == d \
        and not int(d.min()) <= lit <= int(d.max())


def _literal_case(op: str, d: DType, n: int, block: int, grid: tuple[int, ...]) -> Case:
    lit: int | float = {"add_float": 1.5, "div_float": 3.0, "big_literal": 4000000000}.get(op, 3)
    div = op == "div_float"
    if isinstance(lit, float) or d.is_floating:
        ctype = D.computation_type(d, False, D.literal_type(lit), True, div)
    elif op == "big_literal":
        ctype = D.computation_type(d, False, D.literal_type(lit), True)
    else:
        ctype = d

    def make(rng: np.random.Generator) -> list:
        return [random_array(rng, d, (n,)), np.zeros(n, ctype.np), n]
    ir_ops = [Op.DIV] if div else [Op.ADD]
    return case("elementwise", f"literal_{op}[{d}]", literal_kernel, make, grid,
                {1: rule_for_ops(ir_ops)}, constexprs={"OP": op, "BLOCK": block})
