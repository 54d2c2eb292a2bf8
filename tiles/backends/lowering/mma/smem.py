"""Swizzled local-memory tiles that warpgroup MMAs (``wgmma``) read through matrix descriptors, and
where a warpgroup DOT's operands sit in them (``operands``: the layout a pipeline stage copies
into, whichever copy engine fills it).

A ``Swizzled`` tile holds ``rows x cols`` elements: the columns are cut into blocks of
``width`` bytes (128, 64 or 32); block ``j`` stores all rows, row ``r`` at byte
``r * width`` of the block, so rows are whole swizzle atoms.  Inside every 1024-byte
aligned region the 16-byte chunk bits of an address are XORed with the row bits above
them (PTX's 128/64/32-byte swizzle modes), so the eight rows an access phase touches
land in different banks.  The tile's base must be 1024-byte aligned.

Descriptor fields (PTX ISA, "matrix descriptor"): start address >> 4 in bits 0-13,
leading-dimension byte offset >> 4 in 16-29, stride-dimension byte offset >> 4 in
32-45, swizzle mode in 62-63 (1: 128 B, 2: 64 B, 3: 32 B).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ....core import dtypes as D  # noqa: N812
from ....core.dtypes import DType
from ....core.ir import Instr
from ....core.ops import Op
from ..emitter import Handle
from ..layout import Layout
from ..lower import Index, Lowering
from .plan import MMALayout, Plan

_MODE = {128: 1, 64: 2, 32: 3}


def swizzle_width(nbytes: int) -> int | None:
    """The widest swizzle mode whose rows divide a row of ``nbytes``."""
    return next((w for w in (128, 64, 32) if nbytes % w == 0), None)


def align1k(n: int) -> int:
    return -(-n // 1024) * 1024


@dataclass(frozen=True)
class Swizzled:
    rows: int
    cols: int
    itemsize: int
    width: int

    @property
    def nbytes(self) -> int:
        return align1k(self.rows * self.cols * self.itemsize)

    @property
    def block_bytes(self) -> int:
        """Bytes between consecutive column blocks."""
        return self.rows * self.width

    def logical(self, row: int, col: int) -> int:
        """Unswizzled byte offset of element (row, col) (a descriptor's start address)."""
        b = col * self.itemsize
        return (b // self.width) * self.block_bytes + row * self.width + b % self.width

    def row_shift(self, rows: int) -> int | None:
        """Bytes from element (r, c) to (r + rows, c) when the same for every element: when the
        rows span whole 1024-byte atoms, which the swizzle repeats."""
        return rows * self.width if rows * self.width % 1024 == 0 else None

    def address(self, lw: Lowering, row: Index, col: Index) -> Index:
        """Byte offset where element (row, col) is stored (swizzled)."""
        iop = lw.iop
        b = iop(Op.MUL, col, self.itemsize)
        x = iop(Op.ADD, iop(Op.ADD, iop(Op.MUL, iop(Op.IDIV, b, self.width), self.block_bytes),
                                iop(Op.MUL, row, self.width)), iop(Op.MOD, b, self.width))
        bits = iop(Op.MUL, iop(Op.MOD, iop(Op.IDIV, x, 128), self.width // 16), 16)
        if isinstance(x, int) and isinstance(bits, int):
            return x ^ bits
        return lw.e.binary(Op.XOR, lw.idx(x), lw.idx(bits), D.int32)

    def store(self, lw: Lowering, handles: Sequence[Handle], lay: Layout, dtype: DType, base: int,
              transpose: bool = False) -> None:
        """Owners write a blocked ``rows x cols`` tile (``transpose``: a ``cols x rows`` tile, one
        element at a time) into this swizzled tile at ``base``."""
        cols = lay.shape[-1]
        piece = 1 if transpose else max(1, min(lay.vec, 16 // self.itemsize))
        for j in range(0, lay.per_thread, piece):
            flat = lw.flat_index(lay, j)
            r, c = lw.iop(Op.IDIV, flat, cols), lw.iop(Op.MOD, flat, cols)
            at = self.address(lw, c, r) if transpose else self.address(lw, r, c)
            idx = lw.iop(Op.IDIV, at, self.itemsize)
            lw.e.local_store_vector(base, lw.idx(idx), handles[j:j + piece], dtype, lw.owner(lay, j))

    def fields(self) -> int:
        """Constant descriptor bits: column blocks ``block_bytes`` apart (the leading offset,
        read for transposed operands), groups of 8 rows ``8 * width`` apart, the swizzle."""
        return ((self.block_bytes >> 4) & 0x3FFF) << 16 | ((8 * self.width) >> 4) << 32 | _MODE[self.width] << 62


def descriptor(lw: Lowering, addr: Handle, fields: int) -> Handle:
    """A uint64 descriptor for the tile at shared address ``addr`` with constant ``fields``."""
    e = lw.e
    start = e.binary(Op.AND, e.binary(Op.SHR, addr, lw.const(4, D.int32), D.int32),
                     lw.const(0x3FFF, D.int32), D.int32)
    wide = e.cast(start, D.int32, D.uint64)
    return e.binary(Op.OR, wide, lw.const(fields, D.uint64), D.uint64)


@dataclass(frozen=True)
class Operands:
    """A warpgroup DOT's staged operands: A (M x K rows), then B at ``b_offset``."""

    a: Swizzled
    b: Swizzled
    b_k_major: bool  # B stored as N x K rows

    @property
    def b_offset(self) -> int:
        return self.a.nbytes

    @property
    def nbytes(self) -> int:
        return self.a.nbytes + self.b.nbytes


def operands(plan: Plan, dot: Instr) -> Operands:
    """How a warpgroup DOT of ``plan`` reads its operands from local memory: A K-major; B N-major
    (16-bit types) or as N x K rows (``plan.b_rows``, and every other type)."""
    a, b, _ = dot.operands
    s = a.type.element.itemsize
    m, k = a.type.shape
    n = b.type.shape[-1]
    lay = plan.values[dot.result]
    assert isinstance(lay, MMALayout)
    wa = swizzle_width(k * s)
    assert wa is not None
    sa = Swizzled(m, k, s, wa)
    if dot in plan.b_rows or s != 2:  # only 16-bit operands may be MN-major
        return Operands(sa, Swizzled(n, k, s, wa), True)
    wb = swizzle_width(lay.reps_n * 8 * s)
    assert wb is not None
    return Operands(sa, Swizzled(k, n, s, wb), False)
