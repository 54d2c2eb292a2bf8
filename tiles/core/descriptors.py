"""Tensor-descriptor accesses (DESC_LOAD / DESC_STORE) spelled as masked pointer accesses.

``desugar_descriptors`` rewrites each descriptor access that ``keep`` does not claim into the
IR the tracer wrote for ``desc.load`` / ``desc.store`` before the ops existed: per axis
``idx = arange(0, block) + offset`` (int32), the address ``base + sum(int64(idx) * stride)``
and the mask ``0 <= idx < shape`` on every axis; a load reads 0 where the mask is off, a
store writes nothing there.  That is DESC_LOAD/DESC_STORE's meaning, so every backend that
does not lower descriptors itself (all but CUDA's TMA path) runs them this way, and checked
mode bounds-checks them as ordinary accesses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from . import attrs as A
from . import dtypes as D
from .ir import Block, Instr, Kernel, Loc, Value
from .ops import DESCRIPTOR, Op
from .typerules import infer


@dataclasses.dataclass(frozen=True)
class DescriptorOperands:
    """The operands of a DESC_LOAD / DESC_STORE by role."""

    base: Value
    shape: tuple[Value, ...]
    strides: tuple[Value, ...]
    offsets: tuple[Value, ...]
    value: Value | None


def descriptor_operands(instr: Instr) -> DescriptorOperands:
    n = instr.attrs.ndim
    ops = instr.operands
    value = ops[1 + 3 * n] if instr.op is Op.DESC_STORE else None
    return DescriptorOperands(ops[0], ops[1:1 + n], ops[1 + n:1 + 2 * n], ops[1 + 2 * n:1 + 3 * n], value)


class _Emit:
    """Appends typed instructions at one source location."""

    def __init__(self, out: list[Instr], loc: Loc, consts: dict[Value, Instr]) -> None:
        self.out, self.loc, self.consts = out, loc, consts

    def __call__(self, op: Op, operands: Sequence[Value], attrs: Any = None) -> Value:
        (t,) = infer(op, [v.type for v in operands], attrs)
        r = Value(t)
        self.out.append(Instr(op, tuple(operands), (r,), attrs, loc=self.loc))
        return r

    def const(self, value: bool | int | float, dtype: D.DType, shape: tuple[int, ...]) -> Value:
        return self(Op.CONST, (), A.Const(value, dtype, shape))

    def splat(self, v: Value, shape: tuple[int, ...]) -> Value:
        """``v`` (scalar or tile) broadcast to ``shape``; a scalar constant becomes a constant tile."""
        if v.type.shape == shape:
            return v
        known = self.consts.get(v)
        if known is not None and not v.type.shape:
            return self.const(known.attrs.value, known.attrs.dtype, shape)
        return self(Op.BROADCAST, (v,), A.Shape(shape))


def _spell(instr: Instr, out: list[Instr], consts: dict[Value, Instr]) -> None:
    block_shape: tuple[int, ...] = instr.attrs.block_shape
    ndim = len(block_shape)
    d_ops = descriptor_operands(instr)
    emit = _Emit(out, instr.loc, consts)
    total: Value | None = None
    mask: Value | None = None
    for d in range(ndim):
        view = tuple(block_shape[d] if i == d else 1 for i in range(ndim))
        line = (block_shape[d],)
        idx = emit(Op.ADD, (emit(Op.ARANGE, (), A.Arange(0, block_shape[d])), emit.splat(d_ops.offsets[d], line)))
        idx = emit(Op.RESHAPE, (idx,), A.Shape(view))
        wide = emit(Op.CAST, (idx,), A.Cast(D.int64))
        term = emit(Op.MUL, (wide, emit.splat(d_ops.strides[d], view)))
        ok = emit(Op.AND, (emit(Op.GE, (idx, emit.const(0, D.int32, view))),
                           emit(Op.LT, (wide, emit.splat(d_ops.shape[d], view)))))
        if total is None or mask is None:
            total, mask = term, ok
        else:
            both = tuple(max(a, b) for a, b in zip(total.type.shape, view))
            total = emit(Op.ADD, (emit.splat(total, both), emit.splat(term, both)))
            mask = emit(Op.AND, (emit.splat(mask, both), emit.splat(ok, both)))
    assert total is not None and mask is not None
    total, mask = emit.splat(total, block_shape), emit.splat(mask, block_shape)
    ptrs = emit(Op.ADDPTR, (emit.splat(d_ops.base, block_shape), total))
    if instr.op is Op.DESC_LOAD:
        elem = instr.results[0].type.dtype
        assert isinstance(elem, D.DType)
        zero = emit.const(False if elem.is_bool else 0 if elem.is_int else 0.0, elem, block_shape)
        out.append(Instr(Op.LOAD, (ptrs, mask, zero), instr.results, A.Load(True, True), loc=instr.loc))
    else:
        assert d_ops.value is not None
        out.append(Instr(Op.STORE, (ptrs, d_ops.value, mask), (), A.Store(True), loc=instr.loc))


def desugar_descriptors(kernel: Kernel, keep: Callable[[Instr], bool] = lambda instr: False) -> bool:
    """Rewrite (in place) every DESC_LOAD/DESC_STORE for which ``keep`` is false into masked
    LOAD/STORE; True when anything changed."""
    consts = {i.results[0]: i for i in kernel.walk() if i.op is Op.CONST}
    changed = False

    def visit(block: Block) -> None:
        nonlocal changed
        out: list[Instr] = []
        for instr in block.instrs:
            for region in instr.regions:
                visit(region)
            if instr.op in DESCRIPTOR and not keep(instr):
                _spell(instr, out, consts)
                changed = True
            else:
                out.append(instr)
        block.instrs = out

    visit(kernel.body)
    return changed

