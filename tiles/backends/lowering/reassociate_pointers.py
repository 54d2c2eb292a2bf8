"""Pointer sums reassociated so that a thread computes once what its elements share (``Kernel -> Kernel``).

``base + rows[:, None] * stride + cols[None, :]`` is traced as ``(base + rows * stride)`` on an
``(M, 1)`` tile, broadcast, plus the ``(1, N)`` column offsets, broadcast.  A thread's elements lie in
chunks along the last axis, in several rows, so the row sums differ from element to element and each
then gets the column offset added: two 64-bit additions per element.  Adding the column offsets to the
base first (an ``(1, N)`` tile: one addition per column chunk a thread holds) and the row offsets to
that leaves one per element, and a shorter chain of dependent 64-bit operations in front of each
access (what kept the tensor-core pipe of tutorial 09's flattened matmul waiting: benchmarks/RESULTS.md).
Both orders give the same address on targets whose pointer arithmetic wraps (LLVM's ``getelementptr``
without ``inbounds``), where ``prepare`` runs this; C backends keep the order the program wrote.

Only sums inside loops are rewritten (TILES_REASSOCIATE, default on): there the flattened matmul
rebuilds its addresses every iteration (0.91 -> 0.99 of Triton, fp32 C 0.89 -> 0.94, H100), while a
pointer set up once before the loop gains nothing, and the tutorial matmul with every sum rewritten
measured 4% slower (benchmarks/RESULTS.md, 2026-12-07).
"""

from __future__ import annotations

from ...core import attrs as A  # noqa: N812
from ...core.ir import Block, Instr, Kernel, TileType, Value
from ...core.ops import Op
from ...core.passes import count_uses
from .induction import Emit


def _broadcast_source(v: Value, defs: dict[Value, Instr]) -> Value | None:
    instr = defs.get(v)
    return instr.operands[0] if instr is not None and instr.op is Op.BROADCAST else None


def _rewrite(instr: Instr, defs: dict[Value, Instr], uses: dict[Value, int]) -> list[Instr] | None:
    """``instr`` (an ADDPTR) as ``(base + column offsets) + row offsets``, or None where it is not
    ``broadcast(base + row offsets) + broadcast(column offsets)`` with a scalar base."""
    shape = instr.result.type.shape
    if len(shape) < 2 or shape[-1] == 1 or any(d == 1 for d in shape[:-1]):
        return None
    rows_sum, columns = (_broadcast_source(v, defs) for v in instr.operands)
    if rows_sum is None or columns is None or uses.get(rows_sum, 0) != 1 or uses.get(instr.operands[0], 0) != 1:
        return None
    inner = defs.get(rows_sum)
    if inner is None or inner.op is not Op.ADDPTR or rows_sum.type.shape[-1] != 1:
        return None
    if columns.type.shape[-1] != shape[-1] or any(d != 1 for d in columns.type.shape[:-1]):
        return None
    base, row_offsets = (_broadcast_source(inner.operands[0], defs), inner.operands[1])
    if base is None or base.type.shape:
        return None  # only a scalar base is as cheap to widen along the columns as along the rows
    emit = Emit(instr.loc)
    ptr = instr.result.type.dtype
    wide_base = emit(Op.BROADCAST, [base], TileType(ptr, columns.type.shape), A.Shape(columns.type.shape))
    column_sum = emit(Op.ADDPTR, [wide_base, columns], TileType(ptr, columns.type.shape))
    spread = emit(Op.BROADCAST, [column_sum], TileType(ptr, shape), A.Shape(shape))
    rows = emit(Op.BROADCAST, [row_offsets], TileType(row_offsets.type.dtype, shape), A.Shape(shape))
    emit.instrs.append(Instr(Op.ADDPTR, (spread, rows), instr.results, None, loc=instr.loc))
    return emit.instrs


def reassociate_pointer_sums(kernel: Kernel) -> Kernel:
    """Every pointer sum of that form computed inside a loop, where it runs each iteration."""
    defs = {r: i for i in kernel.walk() for r in i.results}
    uses: dict[Value, int] = {}
    count_uses(kernel.body, uses)

    def visit(block: Block, in_loop: bool) -> None:
        out: list[Instr] = []
        for instr in block.instrs:
            for region in instr.regions:
                visit(region, in_loop or instr.op in (Op.FOR, Op.WHILE))
            new = _rewrite(instr, defs, uses) if in_loop and instr.op is Op.ADDPTR else None
            out.extend(new if new is not None else [instr])
        block.instrs = out

    visit(kernel.body, False)
    return kernel
