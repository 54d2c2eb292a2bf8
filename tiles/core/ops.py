"""The op set of the tile IR, its families, and a one-line semantics per op.

Every op works on whole tiles (a scalar is a tile of shape ``()``).  Operands of
elementwise ops already have one shape and one dtype: the tracer inserts the
broadcasts and casts, so backends never promote.  ``core/semantics.py`` implements
DOCS exactly (the interpreter and constant folding run it); ``lowering/legalize.py``
rewrites its hard cases (division by 0 or -1, out-of-range shifts, int1 arithmetic) into
plain ops for the code generators.
"""

from __future__ import annotations

import enum


class Op(enum.Enum):
    # creation
    CONST = "const"
    ARANGE = "arange"
    PROGRAM_ID = "program_id"
    NUM_PROGRAMS = "num_programs"
    # elementwise arithmetic
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    IDIV = "idiv"
    MOD = "mod"
    NEG = "neg"
    AND = "and"
    OR = "or"
    XOR = "xor"
    NOT = "not"
    SHL = "shl"
    SHR = "shr"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    MAXIMUM_NAN = "maximum_nan"
    MINIMUM_NAN = "minimum_nan"
    UMULHI = "umulhi"
    FMA = "fma"
    # comparisons
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    # math
    EXP = "exp"
    EXP2 = "exp2"
    LOG = "log"
    LOG2 = "log2"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    SIN = "sin"
    COS = "cos"
    ERF = "erf"
    FLOOR = "floor"
    CEIL = "ceil"
    ABS = "abs"
    ISNAN = "isnan"
    MATH_FN = "math_fn"
    # conversions and selection
    CAST = "cast"
    BITCAST = "bitcast"
    WHERE = "where"
    ADDPTR = "addptr"
    PTR_TO_INT = "ptr_to_int"
    INT_TO_PTR = "int_to_ptr"
    HINT = "hint"
    # shape
    BROADCAST = "broadcast"
    RESHAPE = "reshape"
    PERMUTE = "permute"
    JOIN = "join"
    SPLIT = "split"
    CAT = "cat"
    # reductions, scans and friends
    REDUCE = "reduce"
    ARGREDUCE = "argreduce"
    SCAN = "scan"
    SORT = "sort"
    HISTOGRAM = "histogram"
    GATHER = "gather"
    DOT = "dot"
    # memory
    LOAD = "load"
    STORE = "store"
    ATOMIC = "atomic"
    ATOMIC_CAS = "atomic_cas"
    DESC_LOAD = "desc_load"
    DESC_STORE = "desc_store"
    # control flow
    FOR = "for"
    WHILE = "while"
    IF = "if"
    # debug
    DEVICE_ASSERT = "device_assert"
    DEVICE_PRINT = "device_print"
    BARRIER = "barrier"

    # Members are singletons compared by identity: hash them so too (Enum's hash of the name is
    # a Python call, and every dict or set keyed by an op pays it).
    __hash__ = object.__hash__


DOCS: dict[Op, str] = {
    Op.CONST: "r = splat(value) : every element equals the attribute's value",
    Op.ARANGE: "r[i] = start + i  for i in [0, end - start)  (int32)",
    Op.PROGRAM_ID: "r = id of this program along grid axis `axis`",
    Op.NUM_PROGRAMS: "r = number of programs along grid axis `axis`",
    Op.ADD: "r = a + b  (ints wrap around; int1: xor, as every int1 op is arithmetic on one bit)",
    Op.SUB: "r = a - b  (ints wrap around)",
    Op.MUL: "r = a * b  (ints wrap around)",
    Op.DIV: "r = a / b  (floats only; IEEE division, or within the target's declared bound where attrs.approximate)",
    Op.IDIV: "r = a / b  for ints, truncated toward zero; b == 0 gives -1 (all ones); INT_MIN / -1 gives INT_MIN",
    Op.MOD: "r = a - b * trunc(a / b)  (sign of a; fmod for floats); b == 0 gives a; INT_MIN % -1 gives 0",
    Op.NEG: "r = -a  (ints wrap around)",
    Op.AND: "r = a & b  (bitwise; logical for int1)",
    Op.OR: "r = a | b",
    Op.XOR: "r = a ^ b",
    Op.NOT: "r = ~a  (bitwise complement; logical not for int1)",
    Op.SHL: "r = a << b  (0 when b < 0 or b >= bit width)",
    Op.SHR: "r = a >> b  (arithmetic for signed, logical for unsigned; b < 0 or >= bit width: 0, or -1 for a < 0)",
    Op.MAXIMUM: "r = max(a, b)  (floats: a NaN operand loses to a number)",
    Op.MINIMUM: "r = min(a, b)  (floats: a NaN operand loses to a number)",
    Op.MAXIMUM_NAN: "r = max(a, b)  (floats: NaN if either is NaN)",
    Op.MINIMUM_NAN: "r = min(a, b)  (floats: NaN if either is NaN)",
    Op.UMULHI: "r = high half of the double-width unsigned product of the bits of a and b (signed types too)",
    Op.FMA: "r = a * b + c  rounded once",
    Op.EQ: "r = a == b  (int1; NaN compares unequal)",
    Op.NE: "r = a != b  (int1; true when either is NaN)",
    Op.LT: "r = a < b  (int1, signedness from the operand type)",
    Op.LE: "r = a <= b  (int1)",
    Op.GT: "r = a > b  (int1)",
    Op.GE: "r = a >= b  (int1)",
    Op.EXP: "r = e ** a",
    Op.EXP2: "r = 2 ** a",
    Op.LOG: "r = ln(a)",
    Op.LOG2: "r = log2(a)",
    Op.SQRT: "r = sqrt(a)",
    Op.RSQRT: "r = 1 / sqrt(a)",
    Op.SIN: "r = sin(a)",
    Op.COS: "r = cos(a)",
    Op.ERF: "r = erf(a)",
    Op.FLOOR: "r = floor(a)",
    Op.CEIL: "r = ceil(a)",
    Op.ABS: "r = |a|  (ints: wraps at the minimum)",
    Op.ISNAN: "r = a is NaN  (int1)",
    Op.MATH_FN: "r = fn(a, ...) for the function `name` of core/mathfns.py (tanh, pow, isinf, clz...)",
    Op.CAST: "r = a converted to `dtype` (floats round to nearest even; float->int truncates, saturating; NaN->0)",
    Op.BITCAST: "r = the bits of a reinterpreted as `dtype` (same width)",
    Op.WHERE: "r = c ? a : b",
    Op.ADDPTR: "r = p + i * sizeof(element of p)",
    Op.PTR_TO_INT: "r = the address in p as int64",
    Op.INT_TO_PTR: "r = the int64 address a as a pointer",
    Op.HINT: "r = a, with a promise about its values (multiple_of / max_contiguous)",
    Op.BROADCAST: "r = a repeated along its size-1 axes to `shape`",
    Op.RESHAPE: "r = a with the same elements in row-major order and a new `shape`",
    Op.PERMUTE: "r = a with axes reordered: r.shape[i] = a.shape[order[i]]",
    Op.JOIN: "r[..., 0] = a, r[..., 1] = b",
    Op.SPLIT: "r0 = a[..., 0], r1 = a[..., 1]",
    Op.CAT: "r = concatenation of a and b along axis 0",
    Op.REDUCE: "r = combine of the operands' elements along `axis` (tuple of operands)",
    Op.ARGREDUCE: "r = index along `axis` of the max/min (NaN ignored, lowest index on ties)",
    Op.SCAN: "r[i] = combine(a[0..i]) along `axis` (inclusive; reversed when `reverse`)",
    Op.SORT: ("r = a sorted along its last axis (ascending unless `descending`; NaN above every number; "
              "-0.0 == +0.0, equal keys in any order)"),
    Op.HISTOGRAM: "r[k] = number of elements of a equal to k, for k in [0, bins)",
    Op.GATHER: "r[..i..] = a[.. index[..i..] ..] along `axis`",
    Op.DOT: ("r = a @ b + acc  (2D or batched 3D; accumulation in the result dtype; float32 inputs "
             "rounded to tf32 first when input_precision is tf32)"),
    Op.LOAD: "r = *p where mask else other (0 without other)",
    Op.STORE: "*p = v where mask",
    Op.ATOMIC: "r = old *p; *p = op(*p, v) where mask, atomically",
    Op.ATOMIC_CAS: "r = old *p; *p = v if old == cmp, atomically",
    Op.DESC_LOAD: ("r[i] = base[sum((off + i) * strides)] where 0 <= off + i < shape on every bounded axis, "
                   "else 0  (operands: base, shape..., strides..., offsets...; a `block_shape` tile)"),
    Op.DESC_STORE: ("base[sum((off + i) * strides)] = v[i] where 0 <= off + i < shape on every axis; "
                    "other elements are not written (operands: base, shape..., strides..., offsets..., v)"),
    Op.FOR: "for iv in range(lb, ub, step): carried = body(iv, carried); r = carried",
    Op.WHILE: "while cond(carried): carried = body(carried); r = carried",
    Op.IF: "r = then() if c else otherwise()",
    Op.DEVICE_ASSERT: "abort the program with `message` where c is false",
    Op.DEVICE_PRINT: "print `prefix` and the operands for each program",
    Op.BARRIER: "wait until every thread of the program reaches this point",
}

UNARY_ARITH = frozenset({Op.NEG, Op.NOT})
BINARY_ARITH = frozenset({
    Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.IDIV, Op.MOD, Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHR,
    Op.MAXIMUM, Op.MINIMUM, Op.MAXIMUM_NAN, Op.MINIMUM_NAN, Op.UMULHI,
})
COMPARISON = frozenset({Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE})
MATH = frozenset({
    Op.EXP, Op.EXP2, Op.LOG, Op.LOG2, Op.SQRT, Op.RSQRT, Op.SIN, Op.COS, Op.ERF,
    Op.FLOOR, Op.CEIL, Op.ABS,
})
ELEMENTWISE = (UNARY_ARITH | BINARY_ARITH | COMPARISON | MATH
               | frozenset({Op.FMA, Op.ISNAN, Op.MATH_FN, Op.CAST, Op.BITCAST, Op.WHERE, Op.ADDPTR,
                            Op.PTR_TO_INT, Op.INT_TO_PTR, Op.HINT}))
CREATION = frozenset({Op.CONST, Op.ARANGE, Op.PROGRAM_ID, Op.NUM_PROGRAMS})
SHAPE = frozenset({Op.BROADCAST, Op.RESHAPE, Op.PERMUTE, Op.JOIN, Op.SPLIT, Op.CAT})
REDUCTION = frozenset({Op.REDUCE, Op.ARGREDUCE, Op.SCAN, Op.SORT, Op.HISTOGRAM, Op.GATHER})
MEMORY = frozenset({Op.LOAD, Op.STORE, Op.ATOMIC, Op.ATOMIC_CAS, Op.DESC_LOAD, Op.DESC_STORE})
DESCRIPTOR = frozenset({Op.DESC_LOAD, Op.DESC_STORE})
ATOMICS = frozenset({Op.ATOMIC, Op.ATOMIC_CAS})
CONTROL = frozenset({Op.FOR, Op.WHILE, Op.IF})
DEBUG = frozenset({Op.DEVICE_ASSERT, Op.DEVICE_PRINT, Op.BARRIER})
SIDE_EFFECTS = frozenset({Op.STORE, Op.DESC_STORE, Op.ATOMIC, Op.ATOMIC_CAS, Op.DEVICE_ASSERT,
                          Op.DEVICE_PRINT, Op.BARRIER})

FAMILIES: dict[str, frozenset[Op]] = {
    "creation": CREATION, "elementwise": ELEMENTWISE, "shape": SHAPE,
    "reduction": REDUCTION, "dot": frozenset({Op.DOT}), "memory": MEMORY,
    "control": CONTROL, "debug": DEBUG,
}
