"""Loaded vectors broadcast into 2-D tiles are loaded again in the broadcast's layout, where loaded.

``b = tl.load(B + cols, mask=cols < N)`` then ``b[None, :]`` against a 2-D tile: moving ``b``'s
elements to the threads that need them costs a trip through local memory and two barriers.  When
the load's pointers, mask and other value are index expressions (``recompute.py``) and no atomic of
the kernel writes what it reads, the load rule also reads, right where the kernel loads ``b`` (so no
store of the kernel can come in between), the elements each thread's slots of the broadcast need
(vector accesses where a column vector's pointers, mask and other allow); the broadcast then takes
those.  Vectors of at most a warp's elements are left to shuffles (``lane_gather.py``), and a
broadcast needing more than ``MAX_SLOTS`` reads per thread to local memory.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

from ...core.ir import Instr, Value
from ...core.ops import Op
from .axisinfo import AxisInfo, vector_width
from .emitter import Handle
from .lane_gather import fits_lanes
from .lower import Index, Lowering
from .recompute import recomputable, recompute

MAX_SLOTS = 16  # reads per thread for one broadcast; beyond, local memory is cheaper

# per lowering: load result -> the broadcasts it feeds (through reshapes), and the reads made for
# each broadcast with the handles the load itself gave (they must still be the load's, see taken)
_PLANS: weakref.WeakKeyDictionary[Lowering, dict[Value, list[Instr]]] = weakref.WeakKeyDictionary()
_READS: weakref.WeakKeyDictionary[Lowering, dict[Value, tuple[Sequence[Handle], list[Handle]]]] = \
    weakref.WeakKeyDictionary()


def _root(lw: Lowering, v: Value) -> Value:
    """``v`` with reshapes looked through."""
    defs = lw.definitions()
    while (d := defs.get(v)) is not None and d.op is Op.RESHAPE:
        v = d.operands[0]
    return v


def _plan(lw: Lowering) -> dict[Value, list[Instr]]:
    if lw not in _PLANS:
        defs = lw.definitions()
        plan: dict[Value, list[Instr]] = {}
        for instr in lw.kernel.walk():
            if instr.op is Op.BROADCAST and instr.operands[0].type.numel > 1:
                root = _root(lw, instr.operands[0])
                d = defs.get(root)
                if d is not None and d.op is Op.LOAD:
                    plan.setdefault(root, []).append(instr)
        _PLANS[lw] = plan
    return _PLANS[lw]


def source_index(lw: Lowering, broadcast: Instr, flat: Index) -> Index:
    """Row-major index into ``broadcast``'s operand of the element at ``flat`` of its result."""
    shape = broadcast.operands[0].type.shape
    coords = lw.coords(broadcast.result.type.shape, flat)
    return lw.flatten(shape, [0 if d == 1 else c for d, c in zip(shape, coords)])


def read_for_broadcasts(lw: Lowering, load: Instr, handles: Sequence[Handle]) -> None:
    """After ``load`` gave ``handles``: read again, in its layout, each broadcast it feeds (module doc)."""
    a = load.attrs
    if a.volatile or _atomics_may_write(lw, load) or not all(recomputable(lw, x) for x in load.operands):
        return
    ptr = load.operands[0]
    mask = load.operands[1] if a.masked else None
    other = load.operands[2] if a.has_other else None
    elem = load.result.type.element
    for broadcast in _plan(lw).get(load.result, []):
        dst = lw.layout(broadcast.result)
        if dst.per_thread > MAX_SLOTS or fits_lanes(lw, broadcast.operands[0]):
            continue
        one_per_chunk = broadcast.operands[0].type.shape[-1] == 1
        width = 1 if one_per_chunk else _width(lw, load, dst.vec)
        reads: list[Handle] = []
        for j in range(dst.per_thread):
            if one_per_chunk and dst.slot(j)[1] or j % width:
                if one_per_chunk:
                    reads.append(reads[-1])
                continue
            at = source_index(lw, broadcast, lw.flat_index(dst, j))
            p = recompute(lw, ptr, at)
            m = recompute(lw, mask, at) if mask is not None else None
            if width == 1:
                reads.append(lw.e.load(p, elem, m, recompute(lw, other, at) if other is not None else None))
            else:
                others = None if other is None else [recompute(lw, other, lw.iop(Op.ADD, at, k)) for k in range(width)]
                reads.extend(lw.e.load_vector(p, elem, width, m, others))
        _READS.setdefault(lw, {})[broadcast.result] = (handles, reads)


def _atomics_may_write(lw: Lowering, load: Instr) -> bool:
    """Whether the kernel's atomics (other programs') may change what ``load`` reads: the copies of
    an element must then come from one read (``memory.py``), not one each."""
    if lw.origins is None:
        return False
    origins, written = lw.origins.get(load.operands[0]), lw.atomic_params
    return origins is None or written is None or bool(origins & written)


def _width(lw: Lowering, load: Instr, vec: int) -> int:
    """Elements per read where a chunk of the broadcast reads consecutive elements of the vector
    (its last axis kept): as wide as the load's pointers, mask and other allow."""
    a = load.attrs
    infos = [lw.info.get(load.operands[i]) for i, on in ((1, a.masked), (2, a.has_other)) if on]
    w = vector_width(vec, lw.info.get(load.operands[0]) or AxisInfo(), load.result.type.element.itemsize, *infos)
    while w > 1 and not lw.e.vector_ok(load.result.type.element, w):
        w //= 2
    return w


def taken(lw: Lowering, broadcast: Instr) -> list[Handle] | None:
    """The reads ``read_for_broadcasts`` made for ``broadcast``, if made by the lowering of the load
    whose handles the kernel holds now (a load lowered again, e.g. for another iteration, is not)."""
    entry = _READS.get(lw, {}).get(broadcast.result)
    if entry is None:
        return None
    held = lw.env.get(_root(lw, broadcast.operands[0]))
    if held is None or len(held) != len(entry[0]) or any(x is not y for x, y in zip(held, entry[0])):
        return None
    return entry[1]
