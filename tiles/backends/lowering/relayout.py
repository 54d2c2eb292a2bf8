"""Ops that move elements between threads: broadcast, reshape, permute, join,
split, cat, gather.

Each is a *gather through local memory*: the owners write their elements at
their row-major index, a barrier, every thread reads the source index of each of
its result slots, a barrier (so the next conversion may reuse the space; deferred
where the emitter allows, see exchanges.py).  Cases
that move nothing (broadcasting a single element, reshapes that keep the layout)
skip local memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core.dtypes import ScalarType, int32
from ...core.ir import Instr, Value
from ...core.ops import Op
from .broadcast_loads import taken
from .emitter import Handle
from .lane_gather import gather_lanes
from .layout import Layout
from .lower import Index, Lowering, rule
from .recompute import recomputable, recompute


def stage(lw: Lowering, handles: Sequence[Handle], lay: Layout, dtype: ScalarType,
          byte_offset: int = 0, first: int = 0, at: Callable[[Index], Index] = lambda i: i) -> None:
    """Owners write their elements to local[at(first + row-major index)]."""
    for j, h in enumerate(handles):
        index = lw.idx(at(lw.iop(Op.ADD, lw.flat_index(lay, j), first)))
        lw.e.local_store(byte_offset, index, h, dtype, lw.owner(lay, j))


def row_gap(lw: Lowering, dtype: ScalarType, row: int) -> int:
    """Elements of padding after each staged row of ``row`` elements: one 4-byte word where the
    row is an even number of words (a transpose's column reads then spread over the banks)."""
    itemsize = lw.e.local_itemsize(dtype)
    return max(1, 4 // itemsize) if row and row * itemsize // 4 % 2 == 0 else 0


def gather_local(lw: Lowering, sources: Sequence[Value], dst: Layout,
                 source_index: Callable[[int, Index], Index], row: int = 0) -> list[Handle]:
    """Result slot j reads staged element source_index(j, its row-major index);
    the sources are staged one after the other.  With ``row``, each staged row of ``row``
    elements is followed by ``row_gap`` elements, and ``source_index`` counts them."""
    dtype = sources[0].type.dtype
    total = sum(v.type.numel for v in sources)
    gap = row_gap(lw, dtype, row)

    def at(i: Index) -> Index:
        return lw.iop(Op.ADD, i, lw.iop(Op.MUL, lw.iop(Op.IDIV, i, row), gap)) if gap else i
    size = lw.local_size(dtype, total + (total // row * gap if gap else 0))
    base = lw.exchanges.start(size)
    lw.reserve_local(base + size)
    first = 0
    for v in sources:
        stage(lw, lw.env[v], lw.layout(v), dtype, base, first, at)
        first += v.type.numel
    lw.e.barrier()
    out = [lw.e.local_load(base, lw.idx(source_index(j, lw.flat_index(dst, j))), dtype)
           for j in range(dst.per_thread)]
    lw.exchanges.end(base, size)
    return out


def same_layout(a: Layout, b: Layout) -> bool:
    return a.numel == b.numel and (a.vec == b.vec or a.numel == 1)


@rule(Op.BROADCAST)
def _broadcast(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    src, dst = instr.operands[0], lw.layout(instr.result)
    if src.type.numel == 1:
        return [[lw.env[src][0]] * dst.per_thread]
    shape = src.type.shape

    def index(j: int, flat: Index) -> Index:
        cs = lw.coords(dst.shape, flat)
        return lw.flatten(shape, [0 if d == 1 else c for d, c in zip(shape, cs)])
    if recomputable(lw, src):
        return [[recompute(lw, src, index(j, lw.flat_index(dst, j))) for j in range(dst.per_thread)]]
    return [gather_lanes(lw, src, dst, index, one_per_chunk=shape[-1] == 1) or taken(lw, instr)
            or gather_local(lw, [src], dst, index)]


@rule(Op.RESHAPE)
def _reshape(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    src, dst = instr.operands[0], lw.layout(instr.result)
    if same_layout(lw.layout(src), dst):
        return [[lw.env[src][0]] * dst.per_thread] if dst.numel == 1 else [list(lw.env[src])]
    if recomputable(lw, src):
        return [[recompute(lw, src, lw.flat_index(dst, j)) for j in range(dst.per_thread)]]
    return [gather_lanes(lw, src, dst, lambda j, flat: flat) or gather_local(lw, [src], dst, lambda j, flat: flat)]


@rule(Op.PERMUTE)
def _permute(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    src, dst = instr.operands[0], lw.layout(instr.result)
    order = instr.attrs.order
    shape = list(src.type.shape)
    row = shape[-1] if len(shape) == 2 else 0  # a transpose: rows padded, columns read across the banks
    shape[-1] += row_gap(lw, src.type.dtype, row)

    def index(j: int, flat: Index) -> Index:
        cs = lw.coords(dst.shape, flat)
        src_coords: list[Index] = [0] * len(order)
        for i, o in enumerate(order):
            src_coords[o] = cs[i]
        return lw.flatten(tuple(shape), src_coords)
    return [gather_local(lw, [src], dst, index, row)]


@rule(Op.JOIN)
def _join(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    a, b = instr.operands
    dst = lw.layout(instr.result)
    n = a.type.numel
    return [gather_local(lw, [a, b], dst, lambda j, flat: lw.iop(
        Op.ADD, lw.iop(Op.MUL, lw.iop(Op.MOD, flat, 2), n), lw.iop(Op.IDIV, flat, 2)))]


@rule(Op.SPLIT)
def _split(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    (src,) = instr.operands
    dst = lw.layout(instr.results[0])
    outs = []
    for half in (0, 1):
        def index(j: int, flat: Index, h: int = half) -> Index:
            return lw.iop(Op.ADD, lw.iop(Op.MUL, flat, 2), h)
        outs.append(gather_local(lw, [src], dst, index))
    return outs


@rule(Op.CAT)
def _cat(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    a, b = instr.operands
    return [gather_local(lw, [a, b], lw.layout(instr.result), lambda j, flat: flat)]


@rule(Op.GATHER)
def _gather(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    src, index = instr.operands
    axis = instr.attrs.axis
    dst = lw.layout(instr.result)
    picks = lw.env[index]
    idt = index.type.element

    def at(j: int, flat: Index) -> Index:
        cs = lw.coords(dst.shape, flat)
        pick = picks[j] if idt.bits == 32 and idt.is_signed else lw.e.cast(picks[j], idt, int32)
        cs[axis] = pick
        return lw.flatten(src.type.shape, cs)
    return [gather_local(lw, [src], dst, at)]

