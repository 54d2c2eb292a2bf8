"""A ``tl.dot`` operand B (or, on GPUs, another 2-D load) whose addresses run down its first axis
becomes the transpose of a load that runs along its last axis (``Kernel -> Kernel``).

Attention's ``K`` block in Triton's tutorial is ``(HEAD_DIM, BLOCK_N)`` with order ``(0, 1)``:
consecutive addresses go down the columns.  Read in its own layout, that
load could not be vectorized, staged with ``cp.async`` or pipelined.  The pointer (and mask and
``other``) expression is rebuilt transposed by pushing the transpose down to its 1-D and scalar
leaves (``x[:, None]`` becomes ``x[None, :]``, broadcasts swap their shape, elementwise ops
apply to transposed operands), then ``B = trans(load(ptr^T))``, which the tensor-core planner
stages as rows (``plan.b_rows``).  The loaded values are the same; only their order in the
load changes.

Any other 2-D load on a GPU whose addresses run down axis 0 for a 16-byte vector's worth and
not along its last axis (Mamba's time-major ``dt`` read as ``[heads, time]``) is rebuilt the
same way: the load vectorizes or at least coalesces, and the transpose is one exchange through
local memory (``relayout.py``).
"""

from __future__ import annotations

from ...core import attrs as A  # noqa: N812
from ...core.ir import Block, Instr, Kernel, TileType, Value
from ...core.ops import BINARY_ARITH, COMPARISON, Op
from ...core.passes import count_uses
from .axisinfo import AxisInfo, analyze, axis_rule

_ELEMENTWISE = frozenset({*BINARY_ARITH, *COMPARISON, Op.ADDPTR, Op.CAST, Op.WHERE, Op.NOT, Op.NEG})


class _Sinker:
    """Builds the transpose of 2-D index/pointer expressions from their leaves."""

    def __init__(self, defs: dict[Value, Instr], info: dict[Value, AxisInfo]) -> None:
        self.defs, self.info = defs, info
        self.instrs: list[Instr] = []
        self.memo: dict[Value, Value] = {}

    def _emit(self, like: Instr, op: Op, operands: list[Value], type: TileType, attrs: object) -> Value:
        out = Value(type)
        instr = Instr(op, tuple(operands), (out,), attrs, loc=like.loc)
        self.instrs.append(instr)
        self.info[out] = axis_rule(instr, self.info)
        return out

    def __call__(self, v: Value) -> Value | None:
        if len(v.type.shape) != 2:
            return v if not v.type.shape else None
        if v in self.memo:
            return self.memo[v]
        p = self.defs.get(v)
        if p is None:
            return None
        rows, cols = v.type.shape
        flipped = TileType(v.type.dtype, (cols, rows))
        out: Value | None = None
        if p.op is Op.CONST:
            out = self._emit(p, Op.CONST, [], flipped, A.Const(p.attrs.value, p.attrs.dtype, (cols, rows)))
        elif p.op is Op.BROADCAST:
            src = p.operands[0]
            if len(src.type.shape) == 1:  # (C,) broadcast along the rows: a (1, C) row
                src = self._emit(p, Op.RESHAPE, [src], TileType(src.type.dtype, (src.type.shape[0], 1)),
                                 A.Shape((src.type.shape[0], 1)))
                out = self._emit(p, Op.BROADCAST, [src], flipped, A.Shape((cols, rows)))
            else:
                src_t = self(src)
                if src_t is not None:
                    out = self._emit(p, Op.BROADCAST, [src_t], flipped, A.Shape((cols, rows)))
        elif p.op is Op.RESHAPE and len(p.operands[0].type.shape) == 1 and 1 in (rows, cols):
            out = self._emit(p, Op.RESHAPE, [p.operands[0]], flipped, A.Shape((cols, rows)))
        elif p.op in _ELEMENTWISE:
            operands = [self(o) for o in p.operands]
            if all(o is not None for o in operands):
                out = self._emit(p, p.op, operands, flipped, p.attrs)  # type: ignore[arg-type]
        if out is not None:
            self.memo[v] = out
        return out


_SECTOR = 32  # bytes: a global load that reads fewer contiguous bytes per row is not worth a transpose
_VECTOR = 16  # bytes: the widest vector access


def _worth(load: Instr, ptr: AxisInfo) -> bool:
    """A tile load worth reading transposed: its addresses run down axis 0 for at least a 16-byte
    vector's worth of elements, not along its last axis (neither contiguous nor constant: a
    broadcast load), the tile has at least two columns, and each column is at least a sector."""
    rows, cols = load.result.type.shape
    itemsize = load.result.type.dtype.itemsize
    down, along = ptr.along(2)
    if along.contig > 1 or along.const > 1 or cols < 2 or rows * itemsize < _SECTOR:
        return False
    return down.contig * itemsize >= _VECTOR


def transpose_column_loads(kernel: Kernel, dot_operands: bool = True, every_load: bool = True) -> Kernel:
    """Loads whose addresses run down their first axis become ``trans(load(ptr^T))``: with
    ``dot_operands`` a dot's operand B, with ``every_load`` one no dot reads that is worth it."""
    info = analyze(kernel)
    defs = {r: i for i in kernel.walk() for r in i.results}
    counts: dict[Value, int] = {}
    count_uses(kernel.body, counts)
    changed = False

    def rewrite(load: Instr) -> list[Instr] | None:
        ptr = load.operands[0]
        if len(ptr.type.shape) != 2 or info.get(ptr, AxisInfo()).contig > 1:
            return None
        sinker = _Sinker(defs, info)
        operands = [sinker(o) for o in load.operands]
        if any(o is None for o in operands) or info[operands[0]].contig <= 1:  # type: ignore[index]
            return None
        b = load.result
        rows, cols = b.type.shape
        loaded = Value(TileType(b.type.dtype, (cols, rows)))
        return [*sinker.instrs,
                Instr(Op.LOAD, tuple(operands), (loaded,), load.attrs, loc=load.loc),  # type: ignore[arg-type]
                Instr(Op.PERMUTE, (loaded,), (b,), A.Permute((1, 0)), loc=load.loc)]

    def picked(load: Instr, b_loads: set[Value], operands: set[Value]) -> bool:
        if load.result in b_loads:
            return dot_operands and counts.get(load.result) == 1
        if not every_load or load.result in operands or len(load.result.type.shape) != 2 or load.attrs.volatile:
            return False
        return _worth(load, info.get(load.operands[0], AxisInfo()))

    def visit(block: Block) -> None:
        nonlocal changed
        dots = [i for i in block.instrs if i.op is Op.DOT]
        b_loads = {i.operands[1] for i in dots}
        operands = {o for i in dots for o in i.operands}
        out: list[Instr] = []
        for instr in block.instrs:
            for region in instr.regions:
                visit(region)
            if instr.op is Op.LOAD and picked(instr, b_loads, operands):
                replaced = rewrite(instr)
                if replaced is not None:
                    out.extend(replaced)
                    changed = True
                    continue
            out.append(instr)
        block.instrs = out

    visit(kernel.body)
    if not changed:
        return kernel
    from ...core.passes import dead_code_elimination
    return dead_code_elimination(kernel)
