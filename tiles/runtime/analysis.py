"""Facts about a traced kernel the runtime needs (which arrays it may write)."""

from __future__ import annotations

from ..core.dtypes import PointerType
from ..core.ir import Block, Kernel, Loc, Value
from ..core.ops import Op

_ANY = "*"


def written_params(kernel: Kernel) -> set[str]:
    """Pointer params some STORE/ATOMIC may write through (all of them if unsure)."""
    return set(first_writes(kernel))


def first_writes(kernel: Kernel) -> dict[str, Loc]:
    """Each pointer param some STORE/ATOMIC may write through, with the line of one such write
    (every param, at the unresolved write's line, when an address comes from an integer)."""
    origin: dict[Value, set[str]] = {p.value: {p.name} for p in kernel.params
                                     if isinstance(p.value.type.dtype, PointerType)}
    written: dict[str, Loc] = {}

    def flow(block: Block) -> bool:
        changed = False
        for instr in block.instrs:
            srcs: set[str] = set()
            for v in instr.operands:
                srcs |= origin.get(v, set())
            if instr.op is Op.INT_TO_PTR:
                srcs = {_ANY}
            if instr.op in (Op.STORE, Op.DESC_STORE, Op.ATOMIC, Op.ATOMIC_CAS):
                before = len(written)
                for name in origin.get(instr.operands[0], set()):
                    written.setdefault(name, instr.loc)
                changed |= len(written) != before
            if instr.op is Op.FOR:
                body = instr.regions[0]
                pairs = list(zip(instr.operands[3:], body.args[1:])) + list(zip(body.yields, body.args[1:]))
                pairs += list(zip(body.yields, instr.results))
            elif instr.op is Op.WHILE:
                cond, body = instr.regions
                pairs = [(a, b) for init in (instr.operands, body.yields)
                         for a, b in zip(init, cond.args)]
                pairs += list(zip(instr.operands, body.args)) + list(zip(body.yields, body.args))
                pairs += list(zip(body.yields, instr.results)) + list(zip(instr.operands, instr.results))
            elif instr.op is Op.IF:
                pairs = [(y, r) for region in instr.regions for y, r in zip(region.yields, instr.results)]
            else:
                pairs = [(v, r) for r in instr.results for v in instr.operands]
                if instr.op is Op.INT_TO_PTR:
                    for r in instr.results:
                        changed |= _add(origin, r, {_ANY})
            for src, dst in pairs:
                changed |= _add(origin, dst, origin.get(src, set()))
            for region in instr.regions:
                changed |= flow(region)
        return changed

    while flow(kernel.body):
        pass
    if _ANY in written:
        return {p.name: written.get(p.name, written[_ANY]) for p in kernel.params}
    return written


def _add(origin: dict[Value, set[str]], v: Value, new: set[str]) -> bool:
    if not new:
        return False
    cur = origin.setdefault(v, set())
    if new <= cur:
        return False
    cur |= new
    return True
