"""Tensor-descriptor accesses (DESC_LOAD / DESC_STORE) spelled as masked pointer accesses.

``desugar_descriptors`` rewrites each descriptor access that ``keep`` does not claim into
pointer accesses: per axis ``idx = arange(0, block) + offset`` (int32), the address
``base + sum(int64(idx) * stride)`` and the mask ``0 <= idx < shape`` on every bounded axis (all
of a tensor descriptor's, a block pointer load's ``boundary_check`` axes); a load reads 0 where
the mask is off, a store writes nothing there.  That is DESC_LOAD/DESC_STORE's meaning, so every
backend that does not lower descriptors itself (all but CUDA's TMA path) runs them this way, and
checked mode bounds-checks them as ordinary accesses.
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


def _joined(emit: _Emit, op: Op, acc: Value | None, term: Value) -> Value:
    if acc is None:
        return term
    both = tuple(max(a, b) for a, b in zip(acc.type.shape, term.type.shape))
    return emit(op, (emit.splat(acc, both), emit.splat(term, both)))


def _spell(instr: Instr, out: list[Instr], consts: dict[Value, Instr]) -> None:
    """Per axis ``arange * stride + int64(off) * stride``: the tile term is loop-invariant and an
    offset carried by a loop costs one scalar product per step (the same addresses as
    ``(off + arange) * stride`` in int64); the mask on bounded axes only."""
    a: A.Descriptor = instr.attrs
    block_shape = a.block_shape
    ndim = len(block_shape)
    d_ops = descriptor_operands(instr)
    emit = _Emit(out, instr.loc, consts)
    total: Value | None = None
    mask: Value | None = None
    for d in range(ndim):
        view = tuple(block_shape[d] if i == d else 1 for i in range(ndim))
        line = (block_shape[d],)
        arange = emit(Op.ARANGE, (), A.Arange(0, block_shape[d]))
        wide = emit(Op.CAST, (emit(Op.RESHAPE, (arange,), A.Shape(view)),), A.Cast(D.int64))
        term = emit(Op.MUL, (wide, emit.splat(d_ops.strides[d], view)))
        known = consts.get(d_ops.offsets[d])
        if known is None or known.attrs.value != 0:
            start = emit(Op.MUL, (emit(Op.CAST, (d_ops.offsets[d],), A.Cast(D.int64)), d_ops.strides[d]))
            term = emit(Op.ADD, (term, emit.splat(start, view)))
        total = _joined(emit, Op.ADD, total, term)
        if not a.is_bounded(d):
            continue
        idx = emit(Op.ADD, (arange, emit.splat(d_ops.offsets[d], line)))
        idx = emit(Op.RESHAPE, (idx,), A.Shape(view))
        ok = emit(Op.AND, (emit(Op.GE, (idx, emit.const(0, D.int32, view))),
                           emit(Op.LT, (emit(Op.CAST, (idx,), A.Cast(D.int64)), emit.splat(d_ops.shape[d], view)))))
        mask = _joined(emit, Op.AND, mask, ok)
    assert total is not None
    ptrs = emit(Op.ADDPTR, (emit.splat(d_ops.base, block_shape), emit.splat(total, block_shape)))
    masks = () if mask is None else (emit.splat(mask, block_shape),)
    if instr.op is Op.DESC_LOAD:
        elem = instr.results[0].type.dtype
        assert isinstance(elem, D.DType)
        zero = emit.const(False if elem.is_bool else 0 if elem.is_int else 0.0, elem, block_shape)
        out.append(Instr(Op.LOAD, (ptrs, *masks, *((zero,) if masks else ())), instr.results,
                         A.Load(bool(masks), bool(masks)), loc=instr.loc))
    else:
        assert d_ops.value is not None
        out.append(Instr(Op.STORE, (ptrs, d_ops.value, *masks), (), A.Store(bool(masks)), loc=instr.loc))


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

