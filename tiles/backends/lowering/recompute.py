"""Index expressions recomputed where a relayout needs them, instead of moved through local memory.

``tl.arange(0, M)[:, None] * stride + tl.arange(0, N)[None, :]`` and masks such as
``rows[:, None] < M`` broadcast 1-D tiles into 2-D ones; moving their elements between threads
costs a trip through local memory and two barriers each.  Their elements are functions of the
element's index alone, so the thread that needs element ``i`` computes it: ``recompute`` walks the
value's definition through aranges, constants, reshapes, broadcasts, pointer offsets, integer or
boolean arithmetic and casts between integer types (a block pointer's int64 offsets and boundary
masks) on such tiles and on single elements, which every thread holds, up to the emitter's
``recompute_budget`` ops (a deeper expression is cheaper to move once than to recompute per
element on a GPU; pocl compiles barriers slowly, so a CPU device allows more).  Anything else
(a load, float arithmetic) is left to the relayout.
"""

from __future__ import annotations

from ...core.dtypes import PointerType
from ...core.ir import Instr, Value
from ...core.ops import BINARY_ARITH, COMPARISON, Op
from .emitter import Handle
from .lower import Index, Lowering, apply_binary

_ARITH = frozenset({*BINARY_ARITH, *COMPARISON})


def recomputable(lw: Lowering, v: Value) -> bool:
    """Whether ``recompute`` can give ``v``'s elements (module doc)."""
    budget = lw.e.recompute_budget
    return _count(lw, v, budget + 1) <= budget


def recompute(lw: Lowering, v: Value, flat: Index) -> Handle:
    """The element of ``v`` at row-major index ``flat``, computed by this thread (``recomputable``)."""
    if v.type.numel == 1:
        return lw.env[v][0]
    instr = _definition(lw, v)
    assert instr is not None
    if instr.op is Op.ARANGE:
        return lw.idx(lw.iop(Op.ADD, flat, instr.attrs.start))
    if instr.op is Op.CONST:
        return lw.const(instr.attrs.value, instr.attrs.dtype)
    src = instr.operands[0]
    if instr.op is Op.RESHAPE:
        return recompute(lw, src, flat)
    if instr.op is Op.BROADCAST:
        shape = src.type.shape
        coords = lw.coords(v.type.shape, flat)
        return recompute(lw, src, lw.flatten(shape, [0 if d == 1 else c for d, c in zip(shape, coords)]))
    if instr.op is Op.CAST:
        rounding = instr.attrs.fp_downcast_rounding
        return lw.e.cast(recompute(lw, src, flat), src.type.element, instr.attrs.dtype, rounding)
    a, b = (recompute(lw, x, flat) for x in instr.operands)
    if instr.op is Op.ADDPTR:
        ptr = src.type.dtype
        assert isinstance(ptr, PointerType)
        return lw.e.ptr_offset(a, b, ptr, instr.operands[1].type.element)
    return apply_binary(lw, instr, a, b)


def _count(lw: Lowering, v: Value, budget: int) -> int:
    """Ops ``recompute`` would take for ``v`` (more than ``budget``: it cannot, or should not)."""
    if v.type.numel == 1 and v in lw.env:
        return 0
    instr = _definition(lw, v)
    if instr is None:
        return budget + 1
    if instr.op in (Op.ARANGE, Op.CONST):
        return 1
    if instr.op in (Op.RESHAPE, Op.BROADCAST, Op.ADDPTR) or (
            instr.op in _ARITH and instr.operands[0].type.dtype.is_int) or _int_cast(instr):
        total = 1
        for x in instr.operands:
            total += _count(lw, x, budget - total)
            if total > budget:
                break
        return total
    return budget + 1


def _definition(lw: Lowering, v: Value) -> Instr | None:
    return lw.definitions().get(v)


def _int_cast(instr: Instr) -> bool:
    """A cast between integer (or boolean) types: exact on every element, whichever thread computes it."""
    return (instr.op is Op.CAST and instr.operands[0].type.dtype.is_int and instr.attrs.dtype.is_int)
