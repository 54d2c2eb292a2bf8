"""Moving tiles between the blocked layout, local memory and the MMA layout (the way out of
the MMA layout, through a swizzled tile, is ``staging.py``).

Local-memory arrays here are row-major with a *padded* row stride: rows are a
multiple of 16 bytes and the stride, in 16-byte units, is odd, so the eight
16-byte rows an ``ldmatrix`` phase (or a fragment store) touches fall in eight
different bank groups.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ....core.dtypes import DType
from ....core.ops import Op
from ..emitter import Handle
from ..layout import Layout
from ..lower import Index, Lowering
from .plan import WARP, MMALayout


def padded(cols: int, itemsize: int) -> int:
    """Row stride (elements) for rows of ``cols`` elements: an odd number of 16-byte units."""
    nbytes = cols * itemsize
    if nbytes % 16 == 0 and (nbytes // 16) % 2 == 0:
        return cols + 16 // itemsize
    return cols


def align16(n: int) -> int:
    return -(-n // 16) * 16


class Lanes:
    """This thread's coordinates in the MMA layout (index handles, cached per scope)."""

    def __init__(self, lw: Lowering, lay: MMALayout) -> None:
        self.lw = lw
        iop = lw.iop
        self.lane = iop(Op.MOD, lw.tid, WARP)
        warp = iop(Op.IDIV, lw.tid, WARP)
        nw = lay.warps_m * lay.warps_n
        if lw.threads // WARP > nw:
            warp = iop(Op.MOD, warp, nw)
        self.warp_m = iop(Op.MOD, warp, lay.warps_m)
        self.warp_n = iop(Op.IDIV, warp, lay.warps_m)
        self.group = iop(Op.IDIV, self.lane, 4)        # row of c0 inside a fragment
        self.quad = iop(Op.MOD, self.lane, 4)          # column pair of c0
        self.row0 = iop(Op.ADD, iop(Op.MUL, self.warp_m, lay.warp_rows), self.group)
        self.col0 = iop(Op.ADD, iop(Op.MUL, self.warp_n, lay.reps_n * 8), iop(Op.MUL, self.quad, 2))
        self.lay = lay

    def row(self, mi: int, half: int, b: int = 0) -> Index:
        """The row (batch folded in) of fragment rep ``mi``'s element pair ``half`` (c0c1 / c2c3)."""
        return self.lw.iop(Op.ADD, self.row0, b * self.lay.m + mi * self.lay.rep_rows + half * 8)

    def col(self, ni: int, c: int = 0) -> Index:
        """The column of element ``c`` (0..3) of fragment rep ``ni``."""
        return self.lw.iop(Op.ADD, self.col0, ni * 8 + c % 2)


def stage(lw: Lowering, handles: Sequence[Handle], lay: Layout, dtype: DType, byte_offset: int,
          ld: int, transpose: bool = False) -> None:
    """Owners write a blocked tile (rows x cols, batch folded into rows) to local memory
    with row stride ``ld``; ``transpose``: each matrix of the batch is stored transposed."""
    *batch, rows, cols = lay.shape
    e, s = lw.e, dtype.itemsize
    piece = max(1, min(lay.vec, 16 // s)) if not transpose else 1
    for j in range(0, lay.per_thread, piece):
        flat = lw.flat_index(lay, j)
        row, col = lw.iop(Op.IDIV, flat, cols), lw.iop(Op.MOD, flat, cols)
        if transpose:
            bat, r = lw.iop(Op.IDIV, row, rows), lw.iop(Op.MOD, row, rows)
            at = lw.iop(Op.ADD, lw.iop(Op.MUL, lw.iop(Op.ADD, lw.iop(Op.MUL, bat, cols), col), ld), r)
        else:
            at = lw.iop(Op.ADD, lw.iop(Op.MUL, row, ld), col)
        e.local_store_vector(byte_offset, lw.idx(at), handles[j:j + piece], dtype, lw.owner(lay, j))


def _fragment_index(lw: Lowering, lanes: Lanes, b: int, mi: int, ni: int, half: int, ld: int) -> Index:
    return lw.iop(Op.ADD, lw.iop(Op.MUL, lanes.row(mi, half, b), ld), lanes.col(ni))


def fragment_pairs(lw: Lowering, lay: MMALayout, ld: int) -> Iterator[tuple[int, Index]]:
    """(slot, local-memory index) of each pair of adjacent accumulator elements this thread holds,
    in a row-major staging array with row stride ``ld``."""
    lanes = Lanes(lw, lay)
    for b in range(lay.batch):
        for mi in range(lay.reps_m):
            for ni in range(lay.reps_n):
                for half in (0, 1):
                    yield lay.slot(b, mi, ni, 2 * half), _fragment_index(lw, lanes, b, mi, ni, half, ld)


def from_blocked(lw: Lowering, handles: list[Handle], lay: MMALayout, dtype: DType) -> list[Handle]:
    """Blocked layout -> MMA layout, through local memory (a uniform tile needs none: its caller
    repeats the handle, ``fragments.frag_handles``)."""
    e = lw.e
    ld = padded(lay.n, dtype.itemsize)
    lw.reserve_local(align16(lay.batch * lay.m * ld * dtype.itemsize))
    shape = (lay.m, lay.n) if lay.batch == 1 else (lay.batch, lay.m, lay.n)
    stage(lw, handles, lw.layout(shape), dtype, 0, ld)
    e.barrier()
    out: list[Handle] = [None] * lay.per_thread
    for k, at in fragment_pairs(lw, lay, ld):
        out[k:k + 2] = e.local_load_vector(0, lw.idx(at), 2, dtype)
    e.barrier()
    return out
