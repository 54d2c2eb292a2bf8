"""Loop-invariant code motion: pure instructions of a loop body that depend on nothing the
loop defines move in front of the loop (``Kernel -> Kernel``).

Pure ops cannot fault in tiles' semantics (integer division by zero is defined), so running
them once even when the loop runs zero times is safe.  Loads never move.
"""

from __future__ import annotations

from .fold import PURE
from .ir import Block, Instr, Kernel, Value
from .ops import Op


def _hoist(region: Block) -> list[Instr]:
    """Remove the invariant instructions from ``region``; return them in order."""
    inside: set[Value] = set(region.args)
    kept, hoisted = [], []
    for instr in region.instrs:
        if instr.op in PURE and not instr.regions and not any(v in inside for v in instr.operands):
            hoisted.append(instr)
        else:
            kept.append(instr)
            inside.update(instr.results)
    region.instrs = kept
    return hoisted


def hoist_loop_invariants(kernel: Kernel) -> Kernel:
    def visit(block: Block) -> None:
        out: list[Instr] = []
        for instr in block.instrs:
            for region in instr.regions:
                visit(region)
            if instr.op in (Op.FOR, Op.WHILE) and not getattr(instr.attrs, "disable_licm", False):
                for region in instr.regions:
                    out.extend(_hoist(region))
            out.append(instr)
        block.instrs = out

    visit(kernel.body)
    return kernel
