"""TYPE_RULES[op](operand types, attrs) -> result types.

The tracer builds every instruction through these rules and the verifier
re-checks them, so an op's typing is written exactly once.  Regions
(FOR/WHILE/IF/custom REDUCE) are typed by their builders and checked by the
verifier separately.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from . import attrs as A
from . import mathfns
from .dtypes import PointerType, int1, int32, int64
from .ir import TileType
from .ops import BINARY_ARITH, COMPARISON, MATH, Op

Rule = Callable[[Sequence[TileType], Any], tuple[TileType, ...]]
TYPE_RULES: dict[Op, Rule] = {}


class IRTypeError(TypeError):
    pass


def _same(op: Op, types: Sequence[TileType]) -> TileType:
    first = types[0]
    for t in types[1:]:
        if t != first:
            raise IRTypeError(f"{op.value}: operands differ: {first} vs {t}")
    return first


def _rule(*ops: Op):
    def register(fn: Rule) -> Rule:
        for op in ops:
            TYPE_RULES[op] = fn
        return fn
    return register


@_rule(Op.CONST)
def _const(_: Sequence[TileType], a: A.Const) -> tuple[TileType, ...]:
    return (TileType(a.dtype, a.shape),)


@_rule(Op.ARANGE)
def _arange(_: Sequence[TileType], a: A.Arange) -> tuple[TileType, ...]:
    return (TileType(int32, (a.end - a.start,)),)


@_rule(Op.PROGRAM_ID, Op.NUM_PROGRAMS)
def _pid(_: Sequence[TileType], a: A.Axis) -> tuple[TileType, ...]:
    return (TileType(int32),)


def _same_as_operands(op: Op) -> Rule:
    def rule(types: Sequence[TileType], _: Any) -> tuple[TileType, ...]:
        return (_same(op, types),)
    return rule


for _op in BINARY_ARITH | {Op.NEG, Op.NOT, Op.FMA} | MATH:
    TYPE_RULES[_op] = _same_as_operands(_op)


@_rule(*COMPARISON)
def _cmp(types: Sequence[TileType], _: Any) -> tuple[TileType, ...]:
    return (_same(Op.EQ, types).with_dtype(int1),)


@_rule(Op.ISNAN)
def _isnan(types: Sequence[TileType], _: Any) -> tuple[TileType, ...]:
    return (types[0].with_dtype(int1),)


@_rule(Op.MATH_FN)
def _math_fn(types: Sequence[TileType], a: A.MathFn) -> tuple[TileType, ...]:
    shape = types[0].shape
    if any(t.shape != shape for t in types):
        raise IRTypeError(f"{a.name}: operand shapes differ: {[t.shape for t in types]}")
    try:
        return (types[0].with_dtype(mathfns.result_type(a.name, [t.dtype for t in types])),)
    except (TypeError, KeyError) as e:
        raise IRTypeError(f"math_fn {a.name}: {e}") from None


@_rule(Op.CAST, Op.BITCAST)
def _cast(types: Sequence[TileType], a: A.Cast) -> tuple[TileType, ...]:
    return (types[0].with_dtype(a.dtype),)


@_rule(Op.WHERE)
def _where(types: Sequence[TileType], _: Any) -> tuple[TileType, ...]:
    c, x, y = types
    if c.dtype != int1 or c.shape != x.shape:
        raise IRTypeError(f"where: condition {c} must be int1 of shape {x.shape}")
    return (_same(Op.WHERE, (x, y)),)


@_rule(Op.ADDPTR)
def _addptr(types: Sequence[TileType], _: Any) -> tuple[TileType, ...]:
    p, i = types
    if not isinstance(p.dtype, PointerType) or p.shape != i.shape:
        raise IRTypeError(f"addptr: needs pointer and offset of one shape, got {p}, {i}")
    return (p,)


@_rule(Op.PTR_TO_INT)
def _ptr_to_int(types: Sequence[TileType], _: Any) -> tuple[TileType, ...]:
    return (types[0].with_dtype(int64),)


@_rule(Op.INT_TO_PTR)
def _int_to_ptr(types: Sequence[TileType], a: A.Cast) -> tuple[TileType, ...]:
    return (types[0].with_dtype(a.dtype),)


@_rule(Op.HINT)
def _hint(types: Sequence[TileType], _: Any) -> tuple[TileType, ...]:
    return (types[0],)


@_rule(Op.BROADCAST)
def _broadcast(types: Sequence[TileType], a: A.Shape) -> tuple[TileType, ...]:
    src = types[0].shape
    if src and len(src) != len(a.shape) or any(s not in (1, d) for s, d in zip(src, a.shape)):
        raise IRTypeError(f"broadcast: cannot broadcast {src} to {a.shape}")
    return (types[0].with_shape(a.shape),)


@_rule(Op.RESHAPE)
def _reshape(types: Sequence[TileType], a: A.Shape) -> tuple[TileType, ...]:
    new = TileType(types[0].dtype, a.shape)
    if new.numel != types[0].numel:
        raise IRTypeError(f"reshape: {types[0].shape} and {a.shape} differ in size")
    return (new,)


@_rule(Op.PERMUTE)
def _permute(types: Sequence[TileType], a: A.Permute) -> tuple[TileType, ...]:
    shape = types[0].shape
    if sorted(a.order) != list(range(len(shape))):
        raise IRTypeError(f"permute: {a.order} is not a permutation of {len(shape)} axes")
    return (types[0].with_shape(tuple(shape[i] for i in a.order)),)


@_rule(Op.JOIN)
def _join(types: Sequence[TileType], _: Any) -> tuple[TileType, ...]:
    t = _same(Op.JOIN, types)
    return (t.with_shape((*t.shape, 2)),)


@_rule(Op.SPLIT)
def _split(types: Sequence[TileType], _: Any) -> tuple[TileType, ...]:
    t = types[0]
    if not t.shape or t.shape[-1] != 2:
        raise IRTypeError(f"split: last axis must have size 2, got {t.shape}")
    half = t.with_shape(t.shape[:-1])
    return (half, half)


@_rule(Op.CAT)
def _cat(types: Sequence[TileType], _: Any) -> tuple[TileType, ...]:
    a, b = types
    if a.dtype != b.dtype or a.shape[1:] != b.shape[1:]:
        raise IRTypeError(f"cat: {a} and {b} do not concatenate along axis 0")
    return (a.with_shape((a.shape[0] + b.shape[0], *a.shape[1:])),)


def _drop_axis(t: TileType, axis: int) -> TileType:
    if not 0 <= axis < len(t.shape):
        raise IRTypeError(f"axis {axis} is out of range for shape {t.shape}")
    return t.with_shape(t.shape[:axis] + t.shape[axis + 1:])


@_rule(Op.REDUCE)
def _reduce(types: Sequence[TileType], a: A.Reduce) -> tuple[TileType, ...]:
    return tuple(_drop_axis(t, a.axis) for t in types)


@_rule(Op.ARGREDUCE)
def _argreduce(types: Sequence[TileType], a: A.ArgReduce) -> tuple[TileType, ...]:
    return (_drop_axis(types[0], a.axis).with_dtype(int32),)


@_rule(Op.SCAN)
def _scan(types: Sequence[TileType], a: A.Reduce) -> tuple[TileType, ...]:
    for t in types:
        _drop_axis(t, a.axis)
    return tuple(types)


@_rule(Op.SORT)
def _sort(types: Sequence[TileType], _: Any) -> tuple[TileType, ...]:
    return (types[0],)


@_rule(Op.HISTOGRAM)
def _histogram(types: Sequence[TileType], a: A.Histogram) -> tuple[TileType, ...]:
    if len(types[0].shape) != 1 or not types[0].element.is_int:
        raise IRTypeError(f"histogram: needs a 1D integer tile, got {types[0]}")
    return (TileType(int32, (a.bins,)),)


@_rule(Op.GATHER)
def _gather(types: Sequence[TileType], a: A.Gather) -> tuple[TileType, ...]:
    src, index = types
    if len(src.shape) != len(index.shape) or not index.element.is_int:
        raise IRTypeError(f"gather: index {index} must be an integer tile of rank {len(src.shape)}")
    return (index.with_dtype(src.dtype),)


@_rule(Op.DOT)
def _dot(types: Sequence[TileType], _: A.Dot) -> tuple[TileType, ...]:
    a, b, acc = types
    if len(a.shape) not in (2, 3) or len(a.shape) != len(b.shape):
        raise IRTypeError(f"dot: operands must both be 2D or 3D, got {a.shape} and {b.shape}")
    if a.shape[-1] != b.shape[-2] or a.shape[:-2] != b.shape[:-2]:
        raise IRTypeError(f"dot: inner dimensions differ: {a.shape} @ {b.shape}")
    out = (*a.shape[:-1], b.shape[-1])
    if acc.shape != out:
        raise IRTypeError(f"dot: accumulator shape {acc.shape} != {out}")
    return (acc,)


@_rule(Op.LOAD)
def _load(types: Sequence[TileType], _: A.Load) -> tuple[TileType, ...]:
    p = types[0]
    if not isinstance(p.dtype, PointerType):
        raise IRTypeError(f"load: expected a pointer, got {p}")
    return (TileType(p.dtype.element, p.shape),)


@_rule(Op.STORE, Op.DEVICE_ASSERT, Op.DEVICE_PRINT, Op.BARRIER)
def _nothing(_: Sequence[TileType], __: Any) -> tuple[TileType, ...]:
    return ()


def _descriptor_operands(op: Op, types: Sequence[TileType], a: A.Descriptor, extra: int) -> PointerType:
    n = a.ndim
    if len(types) != 1 + 3 * n + extra:
        raise IRTypeError(f"{op.value}: expected base, {n} shapes, {n} strides, {n} offsets"
                          f"{' and a value' if extra else ''}; got {len(types)} operands")
    base = types[0]
    if not isinstance(base.dtype, PointerType) or base.shape:
        raise IRTypeError(f"{op.value}: the base must be a scalar pointer, got {base}")
    for t in types[1:1 + 2 * n]:
        if t != TileType(int64, ()):
            raise IRTypeError(f"{op.value}: shapes and strides must be int64 scalars, got {t}")
    for t in types[1 + 2 * n:1 + 3 * n]:
        if t != TileType(int32, ()):
            raise IRTypeError(f"{op.value}: offsets must be int32 scalars, got {t}")
    return base.dtype


@_rule(Op.DESC_LOAD)
def _desc_load(types: Sequence[TileType], a: A.Descriptor) -> tuple[TileType, ...]:
    base = _descriptor_operands(Op.DESC_LOAD, types, a, 0)
    return (TileType(base.element, a.block_shape),)


@_rule(Op.DESC_STORE)
def _desc_store(types: Sequence[TileType], a: A.Descriptor) -> tuple[TileType, ...]:
    base = _descriptor_operands(Op.DESC_STORE, types, a, 1)
    if types[-1] != TileType(base.element, a.block_shape):
        raise IRTypeError(f"desc_store: the value must be a {base.element} tile of shape {a.block_shape}, "
                          f"got {types[-1]}")
    return ()


@_rule(Op.ATOMIC, Op.ATOMIC_CAS)
def _atomic(types: Sequence[TileType], _: A.Atomic) -> tuple[TileType, ...]:
    p = types[0]
    if not isinstance(p.dtype, PointerType):
        raise IRTypeError(f"atomic: expected a pointer, got {p}")
    return (TileType(p.dtype.element, p.shape),)


def infer(op: Op, operand_types: Sequence[TileType], attrs: Any) -> tuple[TileType, ...]:
    try:
        rule = TYPE_RULES[op]
    except KeyError:
        raise IRTypeError(f"{op.value}: result types come from its regions") from None
    return rule(operand_types, attrs)

