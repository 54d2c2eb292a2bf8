"""Stores of MMA-layout tiles through pointers that allow only narrow accesses.

The blocked layout gives each thread ``vec`` consecutive elements, one 16-byte access when
the axis facts promise the alignment.  When they allow only ``w < vec`` elements per access
(a base pointer loaded from memory, an odd leading stride), a store from the blocked layout
makes each warp instruction touch 32 accesses ``vec`` elements apart: eight times the memory
transactions of a contiguous one for 2-byte elements.  Such a store (``claim_stores``) moves
the fragments through local memory (``staging.py``) straight into a *store layout* of
``w``-element chunks, so a warp's accesses cover ``32 * w`` consecutive elements of a row
(Triton's coalescing picks the same arrangement), and evaluates the pointer and mask at that
layout's coordinates (``remat.value_at``) instead of taking the blocked ones.  The tile then
needs no blocked copy.

One element per access (``w == 1``) of a 16-bit tile, with ``stmatrix``: the tile is staged
transposed (``stmatrix.trans`` into an ``n x m`` ``SwizzledRows``), and each thread takes *column
strips* of 8 rows, one 16-byte load each, then stores their 8 elements one by one; consecutive
lanes hold consecutive columns, so each store instruction still covers 32 consecutive elements of a
row (as Triton does it): 8 times fewer local loads than one per element.
"""

from __future__ import annotations

from typing import Any

from ....core.dtypes import DType
from ....core.ir import Instr, Value
from ....core.ops import Op
from ..emitter import Handle
from ..layout import Layout
from ..lower import RULES
from ..memory import access_width
from .base import TensorCoreLowering, tc_rule
from .fragments import frag_handles
from .plan import MMALayout, Plan, frag_use, frag_yield
from .remat import can_remat, value_at
from .staging import Place, SwizzledRows, blocked_place, staging

_REMAT_BUDGET = 48  # nodes of the pointer or mask expression recomputed per element


def store_layout(lw: TensorCoreLowering, instr: Instr) -> Layout | None:
    """The layout a STORE of a fragment value writes from, when the blocked one would split
    its chunks into narrower accesses; None: the shared rule stores it as well as can be."""
    ptr, v = instr.operands[0], instr.operands[1]
    st = lw.tc
    lay = st.plan.values.get(v)
    if not isinstance(lay, MMALayout) or lay.batch != 1 or len(v.type.shape) != 2:
        return None
    blocked = lw.layout(ptr)
    if blocked.vec <= 1:
        return None
    w = access_width(lw, instr, blocked)
    if w >= blocked.vec:
        return None
    if not all(can_remat(o, st.defs, [_REMAT_BUDGET]) for i, o in enumerate(instr.operands) if i != 1):
        return None
    dst = Layout(v.type.shape, w, lw.threads)
    per_row = v.type.shape[-1] // w
    if not dst.exact or (lw.threads % per_row and per_row % lw.threads):
        return None
    return dst


def claim_stores(lw: TensorCoreLowering) -> dict[Instr, Layout]:
    """The STOREs lowered from fragments (``store_layout``), taking their values off
    ``Plan.blocked`` when nothing else needs them blocked."""
    plan = lw.tc.plan
    claimed = {}
    for instr in lw.kernel.walk():
        if instr.op is Op.STORE:
            dst = store_layout(lw, instr)
            if dst is not None:
                claimed[instr] = dst
    for v in {s.operands[1] for s in claimed}:
        if (v in plan.blocked or v in plan.sunk) and not _needed_blocked(lw, plan, v, claimed):
            plan.blocked.discard(v)
            plan.sunk.pop(v, None)
    return claimed


def _needed_blocked(lw: TensorCoreLowering, plan: Plan, v: Value, claimed: dict[Instr, Layout]) -> bool:
    if v in lw.kernel.body.yields:
        return True
    for instr in lw.kernel.walk():
        if any(y is v and not frag_yield(plan, instr, region, k)
               for region in instr.regions for k, y in enumerate(region.yields)):
            return True
        for idx, o in enumerate(instr.operands):
            if o is v and instr not in claimed and not frag_use(plan, instr, idx):
                return True
    return False


STRIP = 8  # rows of a column strip: 16 bytes of 16-bit elements


def _strips(lw: TensorCoreLowering, lay: MMALayout, dst: Layout) -> list[tuple[Place, Place]] | None:
    """This thread's column strips, each as (its first element in the tile, the same element in the
    transposed staging), when ``dst`` stores one element per access and the strips split evenly
    over the threads; None otherwise."""
    m, n, threads = lay.m, lay.n, lw.threads
    if dst.vec != 1 or m % STRIP or (m // STRIP * n) % threads or (threads % n and n % threads):
        return None
    iop = lw.iop
    out = []
    for r in range(m // STRIP * n // threads):
        if threads % n == 0:  # a round covers whole rows of strips: the thread's column is fixed
            col = lw.cached(("strip col", n), lambda: iop(Op.MOD, lw.tid, n))
            row = lw.cached(("strip row", n), lambda: iop(Op.MUL, iop(Op.IDIV, lw.tid, n), STRIP))
            drow = r * (threads // n) * STRIP
            out.append((Place(row, col, drow), Place(col, row, 0, drow)))
        else:  # a row of strips takes whole rounds
            per_row = n // threads
            drow, dcol = (r // per_row) * STRIP, (r % per_row) * threads
            out.append((Place(0, lw.tid, drow, dcol), Place(lw.tid, 0, dcol, drow)))
    return out


def _store_at(lw: TensorCoreLowering, instr: Instr, row: Handle, col: Handle, vals: list[Handle]) -> None:
    """Store ``vals`` (consecutive in a row) where the STORE's pointer and mask are at (row, col)."""
    ptr, dtype = instr.operands[0], instr.operands[1].type.element
    defs = lw.tc.defs
    p = value_at(lw, defs, ptr, [row, col])
    m: Handle | None = value_at(lw, defs, instr.operands[2], [row, col]) if instr.attrs.masked else None
    if len(vals) == 1:
        lw.e.store(p, vals[0], dtype, m)
    else:
        lw.e.store_vector(p, vals, dtype, m)


def _store_strips(lw: TensorCoreLowering, instr: Instr, hs: list[Handle], lay: MMALayout,
                  strips: list[tuple[Place, Place]]) -> None:
    e = lw.e
    dtype = instr.operands[1].type.element
    st = SwizzledRows(lay.n, lay.m, dtype.itemsize)
    lw.reserve_local(st.nbytes)
    st.write_transposed(lw, hs, lay, dtype)
    e.barrier()
    for (place, _), at in zip(strips, st.indices(lw, [staged for _, staged in strips])):
        vals = e.local_load_vector(0, lw.idx(at), STRIP, dtype)
        first, col = place.at(lw)
        for i, val in enumerate(vals):
            _store_at(lw, instr, lw.iop(Op.ADD, first, i), col, [val])
    e.barrier()


def _strips_fit(lw: TensorCoreLowering, lay: MMALayout, dtype: DType) -> bool:
    """The tile can be staged transposed: ``stmatrix.trans`` on 16-bit elements, rows of ``m``."""
    return (lw.options.codegen.stmatrix and SwizzledRows.fits(lay.n, lay.m, dtype.itemsize)
            and SwizzledRows(lay.n, lay.m, dtype.itemsize).transposable(lw, lay, dtype))


@tc_rule(Op.STORE)
def _store(lw: TensorCoreLowering, instr: Instr) -> list[Any]:
    dst = lw.tc.stores.get(instr)
    if dst is None:
        return RULES[Op.STORE](lw, instr)
    e = lw.e
    v = instr.operands[1]
    lay = lw.tc.plan.values[v]
    assert isinstance(lay, MMALayout)
    dtype = v.type.element
    hs = frag_handles(lw, v, lay)
    strips = _strips(lw, lay, dst) if _strips_fit(lw, lay, dtype) else None
    if strips is not None:
        _store_strips(lw, instr, hs, lay, strips)
        return []
    st = staging(lay, dtype, lw.options.codegen.stmatrix)
    lw.reserve_local(st.nbytes)
    st.write(lw, hs, lay, dtype)
    e.barrier()
    places = [blocked_place(lw, dst, j, dst.shape[-1]) for j in range(0, dst.per_thread, dst.vec)]
    for place, at in zip(places, st.indices(lw, places)):
        row, col = place.at(lw)
        _store_at(lw, instr, row, col, e.local_load_vector(0, lw.idx(at), dst.vec, dtype))
    e.barrier()
    return []
