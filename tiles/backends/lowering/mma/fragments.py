"""Ops on values held in fragment layouts (MMA tiles and their row vectors, see ``plan.py``).

Elementwise ops zip the fragment slots (splat operands repeat their handle); a row
reduction combines each lane's slots of a row, then the four lanes of a quad
(``shuffle_xor`` 1 and 2); ``x[:, None]`` is free and its broadcast to an MMA tile
repeats each row's handle.  Conversions: MMA <-> blocked through local memory
(``staging.py`` out of fragments, ``convert.py`` into them); row vectors <-> blocked
through a local array of ``m`` elements.
"""

from __future__ import annotations

from typing import Any

from ....core import dtypes as D  # noqa: N812
from ....core.dtypes import DType, ScalarType
from ....core.ir import Instr, Value
from ....core.mathfns import FUNCTIONS
from ....core.ops import BINARY_ARITH, COMPARISON, Op
from .. import reductions, relayout  # noqa: F401  (their rules are registered first)
from ..emitter import Handle
from ..lower import RULES, apply_binary
from .base import TensorCoreLowering, tc_rule
from .convert import Lanes, from_blocked
from .plan import _EW, _ROW_REDUCE, Frag, MMALayout, RowLayout
from .remat import can_remat, remat_broadcast, value_at
from .staging import to_blocked


def row_to_blocked(lw: TensorCoreLowering, handles: list[Handle], lay: RowLayout, dtype: ScalarType,
                   shape: tuple[int, ...]) -> list[Handle]:
    e = lw.e
    lw.reserve_local(lw.local_size(dtype, lay.m))
    lanes = Lanes(lw, lay.mma(8))
    first = e.binary(Op.EQ, lw.idx(lanes.quad), lw.const(0, D.int32), D.int32)
    for slot, row in enumerate(_rows(lanes, lay)):
        e.local_store(0, lw.idx(row), handles[slot], dtype, first)
    e.barrier()
    dst = lw.layout(shape)
    out = [e.local_load(0, lw.idx(lw.flat_index(dst, j)), dtype) for j in range(dst.per_thread)]
    e.barrier()
    return out


def row_from_blocked(lw: TensorCoreLowering, handles: list[Handle], lay: RowLayout, dtype: ScalarType,
                     shape: tuple[int, ...]) -> list[Handle]:
    e = lw.e
    lw.reserve_local(lw.local_size(dtype, lay.m))
    relayout.stage(lw, handles, lw.layout(shape), dtype)
    e.barrier()
    out = [e.local_load(0, lw.idx(row), dtype) for row in _rows(Lanes(lw, lay.mma(8)), lay)]
    e.barrier()
    return out


def frag_handles(lw: TensorCoreLowering, v: Value, lay: Frag) -> list[Handle]:
    """``v`` in the fragment layout ``lay`` (converted from its blocked handles if needed)."""
    st = lw.tc
    if v in st.mma and st.plan.values.get(v) == lay:
        return st.mma[v]
    hs = lw.env[v]
    if uniform(v, st.defs):  # the same value at every coordinate: each slot takes it
        return [hs[0]] * lay.per_thread
    if can_remat(v, st.defs, [24]):
        return [value_at(lw, st.defs, v, coords) for coords in frag_coords(lw, lay, v.type.shape)]
    if isinstance(lay, RowLayout):
        return row_from_blocked(lw, hs, lay, v.type.dtype, v.type.shape)
    return from_blocked(lw, hs, lay, v.type.element)  # type: ignore[arg-type]


def uniform(v: Value, defs: dict[Value, Instr]) -> bool:
    """Whether every element of ``v`` is one value, as its IR shows (a splat constant, a broadcast
    scalar, elementwise ops of those).  Equal handles in a thread do not show it: a thread holding
    one element of a tile (as many threads as elements), or only elements of one row, has them
    equal while other threads hold other values."""
    if v.type.numel == 1:
        return True
    d = defs.get(v)
    if d is None or d.regions:
        return False
    if d.op is Op.CONST:
        return True
    if d.op in (Op.BROADCAST, Op.RESHAPE, Op.HINT) or d.op in _EW:
        return all(uniform(o, defs) for o in d.operands)
    return False


def frag_coords(lw: TensorCoreLowering, lay: Frag, shape: tuple[int, ...]) -> list[list[Any]]:
    """The coordinates (one index per dimension of ``shape``) of each slot this thread holds."""
    if isinstance(lay, RowLayout):
        return [[r] if len(shape) == 1 else [r, 0] for r in _rows(Lanes(lw, lay.mma(8)), lay)]
    lanes = Lanes(lw, lay)
    out: list[list[Any]] = [[]] * lay.per_thread
    for b in range(lay.batch):
        for mi in range(lay.reps_m):
            for ni in range(lay.reps_n):
                for c in range(4):
                    row, col = lanes.row(mi, c // 2), lanes.col(ni, c)
                    out[lay.slot(b, mi, ni, c)] = [row, col] if lay.batch == 1 else [b, row, col]
    return out


def _rows(lanes: Lanes, lay: RowLayout) -> list[Any]:
    """The row of each slot of a row vector (slot ``2 * mi + half``)."""
    return [lanes.row(mi, half) for mi in range(lay.reps_m) for half in (0, 1)]


def publish(lw: TensorCoreLowering, v: Value, handles: list[Handle]) -> list[Handle] | None:
    """Record ``v``'s fragment handles; return its blocked handles when anything needs them."""
    st = lw.tc
    st.mma[v] = handles
    if v not in st.plan.blocked:
        return None
    return blocked_copy(lw, v, handles)


def blocked_copy(lw: TensorCoreLowering, v: Value, handles: list[Handle]) -> list[Handle]:
    """The blocked handles of ``v``, whose fragment handles are ``handles``."""
    lay = lw.tc.plan.values[v]
    if isinstance(lay, RowLayout):
        return row_to_blocked(lw, handles, lay, v.type.dtype, v.type.shape)
    return to_blocked(lw, handles, lay, v.type.element)  # type: ignore[arg-type]


def _apply(lw: TensorCoreLowering, instr: Instr, xs: list[Handle]) -> Handle:
    e, op = lw.e, instr.op
    src = instr.operands[0].type.dtype
    if op in BINARY_ARITH or op in COMPARISON:
        return apply_binary(lw, instr, xs[0], xs[1])
    if op is Op.FMA:
        return e.fma(xs[0], xs[1], xs[2], src)  # type: ignore[arg-type]
    if op is Op.CAST:
        return e.cast(xs[0], src, instr.attrs.dtype, instr.attrs.fp_downcast_rounding)  # type: ignore[arg-type]
    if op is Op.WHERE:
        return e.select(xs[0], xs[1], xs[2], instr.result.type.dtype)
    if op is Op.MATH_FN:
        return e.math_fn(FUNCTIONS[instr.attrs.name], xs, [o.type.element for o in instr.operands])
    return e.unary(op, xs[0], src)  # type: ignore[arg-type]


def _row_reduce(lw: TensorCoreLowering, instr: Instr, hs: list[Handle], lay: MMALayout) -> list[Handle]:
    e = lw.e
    op = _ROW_REDUCE[instr.attrs.kind]
    dt = instr.operands[0].type.dtype
    out = []
    for mi in range(lay.reps_m):
        for half in (0, 1):
            vals = [hs[lay.slot(0, mi, ni, 2 * half + c)] for ni in range(lay.reps_n) for c in (0, 1)]
            while len(vals) > 1:  # pairwise: short dependency chains
                vals = [e.binary(op, vals[i], vals[i + 1], dt) if i + 1 < len(vals) else vals[i]
                        for i in range(0, len(vals), 2)]
            acc = vals[0]
            for mask in (1, 2):
                other = e.shuffle_xor(acc, mask, dt)
                assert other is not None
                acc = e.binary(op, acc, other, dt)
            out.append(acc)
    return out


def _frag_rule(lw: TensorCoreLowering, instr: Instr) -> list[Any]:
    st = lw.tc
    lay = st.plan.values[instr.result]
    op = instr.op
    dot = st.plan.fused_adds.get(instr)
    if dot is not None:  # the DOT accumulated into the other operand already
        return [publish(lw, instr.result, st.mma[dot.result])]
    if op in _EW:
        cols = [frag_handles(lw, o, lay) for o in instr.operands]
        out = [_apply(lw, instr, list(xs)) for xs in zip(*cols)]
    else:
        src = instr.operands[0]
        slay = st.plan.values[src]
        hs = frag_handles(lw, src, slay)
        if op is Op.REDUCE:
            assert isinstance(slay, MMALayout)
            out = _row_reduce(lw, instr, hs, slay)
        elif op is Op.RESHAPE:
            out = list(hs)
        else:  # BROADCAST of a row vector to an MMA tile
            assert isinstance(lay, MMALayout)
            out = [hs[2 * mi + c // 2] for mi in range(lay.reps_m) for _ in range(lay.reps_n) for c in range(4)]
    return [publish(lw, instr.result, out)]


def a_from_regs(lw: TensorCoreLowering, hs: list[Handle], lay: MMALayout, dtype: DType) -> list[list[list[Handle]]]:
    """A fragments [batch][k step][mi] of m16n8k16 from a 16-bit MMA-layout value: the
    accumulator fragments of n8 tiles 2kk and 2kk+1 are the four registers of A."""
    e = lw.e

    def pack(lo: Handle, hi: Handle) -> Handle:
        return e.pack_pair(lo, hi, dtype)

    out = []
    for kk in range(lay.reps_n // 2):
        per_m = []
        for mi in range(lay.reps_m):
            regs = []
            for ni in (2 * kk, 2 * kk + 1):
                at = lay.slot(0, mi, ni, 0)
                regs += [pack(hs[at], hs[at + 1]), pack(hs[at + 2], hs[at + 3])]
            per_m.append(regs)
        out.append(per_m)
    return [out]


@tc_rule(*_EW, Op.REDUCE, Op.RESHAPE, Op.BROADCAST, Op.PERMUTE)
def _maybe_on_fragments(lw: TensorCoreLowering, instr: Instr) -> list[Any]:
    """Ops the plan put on fragments, PERMUTEs a DOT absorbed, broadcasts recomputed in place;
    everything else takes the shared rule."""
    plan = lw.tc.plan
    op = instr.op
    if instr in plan.frag:
        return _frag_rule(lw, instr)
    if instr in plan.absorbed:
        return [None]
    if op in (Op.BROADCAST, Op.RESHAPE) and plan.dots:
        hs = remat_broadcast(lw, lw.tc.defs, instr)
        if hs is not None:
            return [hs]
    return RULES[op](lw, instr)
