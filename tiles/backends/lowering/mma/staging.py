"""MMA tiles leaving the fragment layout through local memory: where they are written, and how.

A conversion out of the MMA layout (``to_blocked`` here; the narrow-store epilogue,
``epilogue.py``) writes the tile to local memory from the fragments and reads it back in another
layout.  ``staging`` picks the arrangement:

* ``SwizzledRows`` (the default): the tile row-major with no padding, each row cut into 16-byte
  *units*; unit ``c`` of row ``r`` is stored at unit ``c ^ key(r)`` of the same row, the key
  repeating every 8 rows.  With 16-bit elements the fragments are written with ``stmatrix``
  (sm_90: four 8x8 matrices per warp instruction, 16 bytes per row; a warp's accumulator pair
  registers are the matrices' fragments once packed), where the emitter has it, else as 4-byte
  pairs; with 32-bit elements as 8-byte pairs.  Rows of ``C`` units with ``C`` a multiple of 8
  XOR the low 3 bits of the unit with ``key(r) = r % 8`` (16-bit) or ``2 * (r % 4) + (r // 4) % 2``
  (32-bit); narrower rows (16-bit only, ``C`` of 1, 2 or 4: ``8 // C`` rows per 128 bytes) use
  ``key(r) = (r // (8 // C)) % C``.  So the 8 rows of an ``stmatrix`` matrix (one unit of 8 rows
  starting at a multiple of 8) fall in 8 different 16-byte bank groups, so do the four rows times
  two units a half-warp of 8-byte pairs writes, and any 128 aligned bytes of the unswizzled tile
  stay 128 aligned bytes: a read of consecutive 16-byte chunks (the blocked layout's,
  ``ld.shared.v4``) is conflict free too (tests/backends/cuda/test_tc_staging.py counts the
  wavefronts of every access).  ``write_transposed`` stores an ``m x n`` tile into an ``n x m``
  one with ``stmatrix.trans`` (the epilogue's column strips).
* ``PaddedRows``: rows padded to an odd number of 16-byte units (``convert.padded``), the
  fragments written as pairs; for the element types and row widths above that do not qualify,
  and for every tile when ``TILES_STMATRIX=0`` (``Options.codegen.stmatrix``: the A/B switch).

Readers give each access as a ``Place``: a per-thread row and column plus compile-time offsets;
row offsets that are multiples of 8 keep the key, so the accesses of a thread share a few base
indices and differ by constants (immediate offsets in the shared-memory instructions).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ....core import dtypes as D  # noqa: N812
from ....core.dtypes import DType
from ....core.ops import Op
from ..emitter import Handle
from ..layout import Layout
from ..lower import FOLD, Index, Lowering
from .base import TensorCoreLowering
from .convert import Lanes, align16, fragment_pairs, padded
from .plan import MMALayout

IndexOp = Callable[[Op, Index, Index], Index]

UNIT = 16  # bytes: one stmatrix row, one ld.shared.v4
PERIOD = 8  # rows after which every key repeats


@dataclass(frozen=True)
class Place:
    """The element at (``row + drow``, ``col + dcol``): per-thread parts and compile-time offsets
    (``dcol`` a multiple of the 16-byte unit)."""
    row: Index
    col: Index
    drow: int = 0
    dcol: int = 0

    def at(self, lw: Lowering) -> tuple[Index, Index]:
        return lw.iop(Op.ADD, self.row, self.drow), lw.iop(Op.ADD, self.col, self.dcol)


@dataclass(frozen=True)
class PaddedRows:
    """Row-major with row stride ``ld`` elements (an odd number of 16-byte units)."""
    rows: int
    cols: int
    itemsize: int

    @property
    def ld(self) -> int:
        return padded(self.cols, self.itemsize)

    @property
    def nbytes(self) -> int:
        return align16(self.rows * self.ld * self.itemsize)

    def write(self, lw: TensorCoreLowering, handles: Sequence[Handle], lay: MMALayout, dtype: DType) -> None:
        for k, at in fragment_pairs(lw, lay, self.ld):
            lw.e.local_store_vector(0, lw.idx(at), handles[k:k + 2], dtype, None)

    def indices(self, lw: Lowering, places: Sequence[Place]) -> list[Index]:
        out = []
        for p in places:
            row, col = p.at(lw)
            out.append(lw.iop(Op.ADD, lw.iop(Op.MUL, row, self.ld), col))
        return out


@dataclass(frozen=True)
class SwizzledRows:
    """Row-major, unpadded, 16-byte units of each row permuted by the row's key (module doc)."""
    rows: int
    cols: int
    itemsize: int

    @staticmethod
    def fits(rows: int, cols: int, itemsize: int) -> bool:
        if rows % PERIOD or cols * itemsize % UNIT:
            return False
        units = cols * itemsize // UNIT
        if itemsize == 2:
            return units % 8 == 0 or units in (1, 2, 4)
        return itemsize == 4 and units % 8 == 0

    @property
    def unit(self) -> int:
        """Elements per 16-byte unit."""
        return UNIT // self.itemsize

    @property
    def units(self) -> int:
        """Units per row."""
        return self.cols // self.unit

    @property
    def group(self) -> int:
        """Units a key permutes among (aligned groups of a row)."""
        return min(8, self.units)

    @property
    def nbytes(self) -> int:
        return align16(self.rows * self.cols * self.itemsize)

    def key(self, iop: IndexOp, row: Index) -> Index:
        """The row's XOR key (``iop``: ``Lowering.iop``, or ``_fold`` for compile-time rows)."""
        if self.itemsize == 4:
            return iop(Op.ADD, iop(Op.MUL, iop(Op.MOD, row, 4), 2), iop(Op.MOD, iop(Op.IDIV, row, 4), 2))
        return iop(Op.MOD, iop(Op.IDIV, row, 8 // self.group), self.group)

    def element(self, row: int, col: int) -> int:
        """The element index where (row, col) is stored (compile-time coordinates)."""
        k = self.key(_fold, row)
        assert isinstance(k, int)
        return row * self.cols + ((col // self.unit) ^ k) * self.unit + col % self.unit

    def _xor(self, lw: Lowering, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a ^ b
        if isinstance(b, int) and b == 0:
            return a
        return lw.e.binary(Op.XOR, lw.idx(a), lw.idx(b), D.int32)

    def indices(self, lw: Lowering, places: Sequence[Place]) -> list[Index]:
        """Element indices of ``places``.  A row offset ``8q + rr`` keeps the key of row ``row + rr``;
        a unit offset ``g * group + v`` adds ``g * group`` units after the XOR (the key only moves
        units inside aligned groups): per (row, col, rr, v) one base, shared."""
        iop = lw.iop
        bases: dict[tuple[tuple[str, int], tuple[str, int], int, int], Index] = {}
        out = []
        for p in places:
            assert p.dcol % self.unit == 0, (p.dcol, self.unit)
            rr, du = p.drow % PERIOD, p.dcol // self.unit
            v = du % self.group
            ident = (_identity(p.row), _identity(p.col))
            base = bases.get((*ident, rr, v))
            if base is None:
                row = iop(Op.ADD, p.row, rr)
                unit = iop(Op.ADD, iop(Op.IDIV, p.col, self.unit), v)
                swz = self._xor(lw, unit, self.key(iop, row))
                base = iop(Op.ADD, iop(Op.ADD, iop(Op.MUL, row, self.cols), iop(Op.MUL, swz, self.unit)),
                           iop(Op.MOD, p.col, self.unit))
                bases[(*ident, rr, v)] = base
            out.append(iop(Op.ADD, base, (p.drow - rr) * self.cols + (du - v) * self.unit))
        return out

    def write(self, lw: TensorCoreLowering, handles: Sequence[Handle], lay: MMALayout, dtype: DType) -> None:
        """The fragments into the tile: ``stmatrix`` for 16-bit elements where the emitter has it,
        else each lane's pairs of adjacent columns."""
        e = lw.e
        lanes = Lanes(lw, lay)
        if self.itemsize == 2 and e.stmatrix_ok():
            self._write_matrices(lw, lanes, handles, lay, dtype)
            return
        places, slots = [], []
        for b in range(lay.batch):
            for mi in range(lay.reps_m):
                for ni in range(lay.reps_n):
                    for half in (0, 1):
                        drow = b * lay.m + mi * lay.rep_rows + half * 8
                        places.append(Place(lanes.row(0, 0), lanes.col(0), drow, ni * 8))
                        slots.append(lay.slot(b, mi, ni, 2 * half))
        for at, k in zip(self.indices(lw, places), slots):
            e.local_store_vector(0, lw.idx(at), handles[k:k + 2], dtype, None)

    def write_transposed(self, lw: TensorCoreLowering, handles: Sequence[Handle], lay: MMALayout,
                         dtype: DType) -> None:
        """The fragments of an ``m x n`` tile into this ``n x m`` one, element (r, c) at (c, r), with
        ``stmatrix.trans`` (16-bit elements, an emitter that has it: ``transposable``)."""
        assert self.transposable(lw, lay, dtype)
        self._write_matrices(lw, Lanes(lw, lay), handles, lay, dtype, transposed=True)

    def transposable(self, lw: TensorCoreLowering, lay: MMALayout, dtype: DType) -> bool:
        return (self.itemsize == dtype.itemsize == 2 and lay.batch == 1 and (self.rows, self.cols) == (lay.n, lay.m)
                and lw.e.stmatrix_ok())

    def _write_matrices(self, lw: TensorCoreLowering, lanes: Lanes, handles: Sequence[Handle], lay: MMALayout,
                        dtype: DType, transposed: bool = False) -> None:
        """A fragment rep (16 rows x 8 columns) is two 8x8 matrices: rows 0-7 (c0 c1 packed) and
        8-15 (c2 c3).  One ``stmatrix.x4`` writes reps ``ni`` and ``ni + 1``: lane ``l`` gives the
        address of row ``l % 16`` of the pair's rows, in rep ``ni + l // 16`` (an odd last rep:
        ``.x2``, lanes 0-15); ``transposed``: of column ``l % 8`` of matrix ``l // 8``, stored as a
        row of the transposed tile (``.trans``)."""
        iop, e = lw.iop, lw.e
        lane = lanes.lane
        first_row = iop(Op.MUL, lanes.warp_m, lay.warp_rows)
        first_col = iop(Op.ADD, iop(Op.MUL, lanes.warp_n, lay.reps_n * 8), iop(Op.MUL, iop(Op.IDIV, lane, 16), 8))
        if transposed:
            row = iop(Op.ADD, first_col, iop(Op.MOD, lane, 8))
            col = iop(Op.ADD, first_row, iop(Op.MUL, iop(Op.MOD, iop(Op.IDIV, lane, 8), 2), 8))
        else:
            row, col = iop(Op.ADD, first_row, iop(Op.MOD, lane, 16)), first_col
        places, groups = [], []
        for b in range(lay.batch):
            for mi in range(lay.reps_m):
                for ni in range(0, lay.reps_n, 2):
                    regs = []
                    for n in range(ni, min(ni + 2, lay.reps_n)):
                        at = lay.slot(b, mi, n, 0)
                        regs += [e.pack_pair(handles[at], handles[at + 1], dtype),
                                 e.pack_pair(handles[at + 2], handles[at + 3], dtype)]
                    drow, dcol = b * lay.m + mi * lay.rep_rows, ni * 8
                    places.append(Place(row, col, dcol, drow) if transposed else Place(row, col, drow, dcol))
                    groups.append(regs)
        for at, regs in zip(self.indices(lw, places), groups):
            e.stmatrix(0, lw.idx(iop(Op.MUL, at, self.itemsize)), regs, transposed)


Staging = PaddedRows | SwizzledRows


def _fold(op: Op, a: Index, b: Index) -> Index:
    """``Lowering.iop`` on compile-time (non-negative) indices."""
    assert isinstance(a, int) and isinstance(b, int) and a >= 0 and b >= 0
    return FOLD[op](a, b)


def _identity(x: Index) -> tuple[str, int]:
    """A key telling compile-time indices by value and handles by identity."""
    return ("int", x) if isinstance(x, int) else ("handle", id(x))


def staging(lay: MMALayout, dtype: DType, swizzled: bool = True) -> Staging:
    """Where an MMA tile of ``dtype`` goes in local memory (module doc); padded rows always unless
    ``swizzled`` (``Options.codegen.stmatrix``)."""
    rows = lay.batch * lay.m
    if swizzled and SwizzledRows.fits(rows, lay.n, dtype.itemsize):
        return SwizzledRows(rows, lay.n, dtype.itemsize)
    return PaddedRows(rows, lay.n, dtype.itemsize)


def blocked_place(lw: Lowering, dst: Layout, j: int, cols: int) -> Place:
    """The ``Place`` of slot ``j`` of the blocked layout ``dst`` (batch folded into rows of ``cols``):
    per-thread parts shared by all rounds where a round covers whole rows or a row whole rounds."""
    r, k = dst.slot(j)
    span = dst.threads * dst.vec  # elements a full round covers
    iop = lw.iop
    if dst.round_is_full(r) and span % cols == 0:
        start = lw.cached(("blocked start", dst.vec), lambda: iop(Op.MUL, lw.tid, dst.vec))
        return Place(iop(Op.IDIV, start, cols), iop(Op.MOD, start, cols), r * (span // cols), k)
    if dst.round_is_full(r) and cols % span == 0:
        start = lw.cached(("blocked start", dst.vec), lambda: iop(Op.MUL, lw.tid, dst.vec))
        per_row = cols // span
        return Place(0, start, r // per_row, (r % per_row) * span + k)
    flat = lw.flat_index(dst, j)
    return Place(iop(Op.IDIV, flat, cols), iop(Op.MOD, flat, cols))


def to_blocked(lw: TensorCoreLowering, handles: list[Handle], lay: MMALayout, dtype: DType) -> list[Handle]:
    """MMA layout -> blocked layout through local memory."""
    e = lw.e
    st = staging(lay, dtype, lw.options.codegen.stmatrix)
    lw.reserve_local(st.nbytes)
    st.write(lw, handles, lay, dtype)
    e.barrier()
    shape = (lay.m, lay.n) if lay.batch == 1 else (lay.batch, lay.m, lay.n)
    dst = lw.layout(shape)
    piece = max(1, min(dst.vec, UNIT // dtype.itemsize))
    places = [blocked_place(lw, dst, j, lay.n) for j in range(0, dst.per_thread, piece)]
    out: list[Handle] = []
    for at in st.indices(lw, places):
        out.extend(e.local_load_vector(0, lw.idx(at), piece, dtype))
    e.barrier()
    return out
