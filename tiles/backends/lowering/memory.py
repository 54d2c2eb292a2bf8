"""Loads, stores and atomics: per slot, or one vector access per aligned chunk.

Stores and atomics run only in the owner of each element (copies held by other
threads must not write twice); an atomic's old value is then shared with the
copies through local memory.  So is a load of memory other programs may be changing
(a volatile load, or one from a parameter the kernel's atomics write) whose value several
threads hold: one read per element, so that every copy agrees (tutorial 05's
``count = tl.load(Count)`` read by each thread raced the owner's ``atomic_xchg(Count, 1)``).
"""

from __future__ import annotations

from ...core import attrs as A  # noqa: N812
from ...core.dtypes import PointerType
from ...core.ir import Instr
from ...core.ops import Op
from .axisinfo import access_width as chunk_access_width
from .broadcast_loads import read_for_broadcasts
from .emitter import Handle
from .layout import Layout
from .lower import Lowering, rule


def access_width(lw: Lowering, instr: Instr, lay: Layout) -> int:
    """Elements per access of ``instr`` (a LOAD or STORE) from chunks of ``lay``: > 1 when they vectorize."""
    return chunk_access_width(lw.info, lw.e.vector_ok, instr, lay)


def access_groups(lw: Lowering, instr: Instr):
    """(first slot, width) of every access: width > 1 for vectorizable chunks."""
    lay = lw.layout(instr.operands[0])
    w = access_width(lw, instr, lay)
    return [(j, w) for j in range(0, lay.per_thread, w)]


@rule(Op.LOAD)
def _load(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    a: A.Load = instr.attrs
    if lw.hazards is not None:
        lw.hazards.access(lw, instr)
    ptrs = lw.env[instr.operands[0]]
    elem = instr.result.type.element
    masks = lw.env[instr.operands[1]] if a.masked else None
    others = lw.env[instr.operands[2]] if a.has_other else None
    if _read_once(lw, instr):
        lay = lw.layout(instr.result)
        load = lw.e.load_volatile if a.volatile else lw.e.load
        values = [load(p, elem, lw.and_mask(lw.owner(lay, j), masks[j] if masks else None),
                       others[j] if others else None) for j, p in enumerate(ptrs)]
        return [_share_from_owners(lw, instr, values, used=True)]
    if a.volatile:
        return [[lw.e.load_volatile(p, elem, masks[j] if masks else None, others[j] if others else None)
                 for j, p in enumerate(ptrs)]]
    out: list[Handle] = []
    for j, w in access_groups(lw, instr):
        m = masks[j] if masks else None
        if w == 1:
            out.append(lw.e.load(ptrs[j], elem, m, others[j] if others else None))
        else:
            out.extend(lw.e.load_vector(ptrs[j], elem, w, m, others[j:j + w] if others else None))
    read_for_broadcasts(lw, instr, out)
    return [out]


def _read_once(lw: Lowering, instr: Instr) -> bool:
    """Whether a load whose elements several threads hold reads memory other programs may change."""
    if lw.layout(instr.result).exact:
        return False
    if instr.attrs.volatile:
        return True
    if lw.origins is None:
        return False
    origins, written = lw.origins.get(instr.operands[0]), lw.atomic_params
    return origins is None or written is None or bool(origins & written)


@rule(Op.STORE)
def _store(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    a: A.Store = instr.attrs
    if lw.hazards is not None:
        lw.hazards.access(lw, instr)
    ptr = instr.operands[0]
    lay = lw.layout(ptr)
    ptrs, values = lw.env[ptr], lw.env[instr.operands[1]]
    masks = lw.env[instr.operands[2]] if a.masked else None
    elem = instr.operands[1].type.element
    for j, w in access_groups(lw, instr):
        m = lw.and_mask(lw.owner(lay, j), masks[j] if masks else None)
        if w == 1:
            lw.e.store(ptrs[j], values[j], elem, m)
        else:
            lw.e.store_vector(ptrs[j], values[j:j + w], elem, m)
    return []


def _share_from_owners(lw: Lowering, instr: Instr, olds: list[Handle], used: bool | None = None) -> list[Handle]:
    """Give every copy of an element the value its owner computed."""
    lay = lw.layout(instr.result)
    if lay.exact or not (instr.attrs.result_used if used is None else used):
        return olds
    dt = instr.result.type.dtype
    lw.reserve_local(lw.local_size(dt, lay.numel))
    for j, h in enumerate(olds):
        lw.e.local_store(0, lw.idx(lw.flat_index(lay, j)), h, dt, lw.owner(lay, j))
    lw.e.barrier()
    out = [lw.e.local_load(0, lw.idx(lw.flat_index(lay, j)), dt) for j in range(len(olds))]
    lw.e.barrier()
    return out


@rule(Op.ATOMIC)
def _atomic(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    a: A.Atomic = instr.attrs
    ptr = instr.operands[0]
    assert isinstance(ptr.type.dtype, PointerType)
    lay = lw.layout(ptr)
    ptrs, values = lw.env[ptr], lw.env[instr.operands[1]]
    masks = lw.env[instr.operands[2]] if a.masked else None
    elem = ptr.type.dtype.element
    olds = []
    for j in range(lay.per_thread):
        m = lw.and_mask(lw.owner(lay, j), masks[j] if masks else None)
        olds.append(lw.e.atomic_rmw(a.kind, ptrs[j], values[j], elem, m, instr.loc, a.sem, a.scope))
    return [_share_from_owners(lw, instr, olds)]


@rule(Op.ATOMIC_CAS)
def _atomic_cas(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    ptr = instr.operands[0]
    assert isinstance(ptr.type.dtype, PointerType)
    lay = lw.layout(ptr)
    ptrs, cmps, values = (lw.env[v] for v in instr.operands)
    elem = ptr.type.dtype.element
    a: A.Atomic = instr.attrs
    olds = [lw.e.atomic_cas(ptrs[j], cmps[j], values[j], elem, lw.owner(lay, j), instr.loc, a.sem, a.scope)
            for j in range(lay.per_thread)]
    return [_share_from_owners(lw, instr, olds)]
