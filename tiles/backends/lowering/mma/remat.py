"""Broadcasts recomputed where they are needed instead of moved through local memory.

``x[:, None] + y[None, :]``-style pointer and index tiles are built from ``tl.arange``,
scalars and elementwise ops; a ``BROADCAST`` of such a tile (not a single element)
would otherwise be a gather through local memory with two barriers, each loop
iteration.  Here each result slot evaluates the source expression at its own
coordinates (a few integer ops that LLVM shares between slots).
"""

from __future__ import annotations

from ....core.ir import Value
from ....core.ops import BINARY_ARITH, COMPARISON, Op
from ..emitter import Handle
from ..lower import Index, Lowering
from ..relayout import same_layout

_PURE = BINARY_ARITH | COMPARISON | {Op.ADDPTR, Op.CAST, Op.NEG, Op.NOT, Op.WHERE}


def can_remat(v: Value, defs: dict, budget: list[int], seen: set[Value] | None = None) -> bool:
    """Whether ``v`` is an index expression of at most ``budget`` distinct values (scalars,
    ``tl.arange``, constants, broadcasts, elementwise ops)."""
    seen = set() if seen is None else seen
    if v in seen:
        return True
    seen.add(v)
    budget[0] -= 1
    if budget[0] < 0:
        return False
    if v.type.numel == 1:
        return True
    d = defs.get(v)
    if d is None:
        return False
    if d.op in (Op.ARANGE, Op.CONST):
        return True
    if d.op in (Op.BROADCAST, Op.RESHAPE, Op.HINT) or d.op in _PURE:
        return all(can_remat(o, defs, budget, seen) for o in d.operands)
    return False


def value_at(lw: Lowering, defs: dict, v: Value, coords: list[Index]) -> Handle:
    """The element of ``v`` at ``coords`` (one per dimension of ``v``)."""
    if v.type.numel == 1:
        return lw.env[v][0]
    d = defs[v]
    e = lw.e
    if d.op is Op.CONST:
        return lw.env[v][0]
    if d.op is Op.ARANGE:
        return lw.idx(lw.iop(Op.ADD, coords[-1], d.attrs.start))
    if d.op is Op.HINT:
        return value_at(lw, defs, d.operands[0], coords)
    if d.op is Op.BROADCAST:
        src = d.operands[0]
        return value_at(lw, defs, src, [0 if s == 1 else c for s, c in zip(src.type.shape, coords)])
    if d.op is Op.RESHAPE:
        src = d.operands[0]
        return value_at(lw, defs, src, lw.coords(src.type.shape, lw.flatten(v.type.shape, coords)))
    xs = [value_at(lw, defs, o, coords) for o in d.operands]
    if d.op is Op.ADDPTR:
        return e.ptr_offset(xs[0], xs[1], d.operands[0].type.dtype, d.operands[1].type.element)
    if d.op is Op.CAST:
        return e.cast(xs[0], d.operands[0].type.element, d.attrs.dtype, d.attrs.fp_downcast_rounding)
    if d.op in (Op.NEG, Op.NOT):
        return e.unary(d.op, xs[0], d.operands[0].type.element)
    if d.op is Op.WHERE:  # a mask between constants: tl.where(causal, 0, -1e6)
        return e.select(xs[0], xs[1], xs[2], v.type.dtype)
    return e.binary(d.op, xs[0], xs[1], d.operands[0].type.dtype)


def moves_data(lw: Lowering, instr) -> bool:
    """A BROADCAST or RESHAPE whose plain lowering gathers through local memory (not a
    single element, not a reshape between equal layouts)."""
    src = instr.operands[0]
    if src.type.numel == 1:
        return False
    return instr.op is Op.BROADCAST or not same_layout(lw.layout(src), lw.layout(instr.result))


def remat_broadcast(lw: Lowering, defs: dict, instr) -> list[Handle] | None:
    """A BROADCAST or RESHAPE of an index expression, evaluated at each slot's coordinates."""
    if not moves_data(lw, instr) or not can_remat(instr.operands[0], defs, [24]):
        return None
    lay = lw.layout(instr.result)
    shape = instr.result.type.shape
    out = []
    for j in range(lay.per_thread):
        coords = lw.coords(shape, lw.flat_index(lay, j))
        out.append(value_at(lw, defs, instr.result, coords))
    return out
