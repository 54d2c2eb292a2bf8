"""Facts about a traced kernel the runtime needs (which arrays it may write)."""

from __future__ import annotations

import weakref
from typing import Any

from ..core.dtypes import PointerType
from ..core.ir import Block, Kernel, Loc, Value
from ..core.ops import Op

_ANY = "*"


def written_params(kernel: Kernel) -> set[str]:
    """Pointer params some STORE/ATOMIC may write through (all of them if unsure)."""
    return set(first_writes(kernel))


# body -> (the parameters and instructions it was found for, the result): kernels that share a body
# (the interpreter's twins for other divisibility facts, runtime/jit.py) share the answer
_FOUND: weakref.WeakKeyDictionary[Block, tuple[tuple[Any, ...], dict[str, Loc]]] = weakref.WeakKeyDictionary()


def first_writes(kernel: Kernel) -> dict[str, Loc]:
    """Each pointer param some STORE/ATOMIC may write through, with the line of one such write
    (every param, at the unresolved write's line, when an address comes from an integer)."""
    facts = (*((p.name, p.value) for p in kernel.params), *map(id, kernel.walk()))
    found = _FOUND.get(kernel.body)
    if found is None or found[0] != facts:
        found = (facts, _first_writes(kernel))
        _FOUND[kernel.body] = found
    return dict(found[1])


def _first_writes(kernel: Kernel) -> dict[str, Loc]:
    origin: dict[Value, set[str]] = {p.value: {p.name} for p in kernel.params
                                     if isinstance(p.value.type.dtype, PointerType)}
    written: dict[str, Loc] = {}
    get = origin.get

    def flow(block: Block) -> bool:
        changed = False
        for instr in block.instrs:
            op = instr.op
            if op in _WRITES:
                for name in get(instr.operands[0], ()):
                    if name not in written:
                        written[name] = instr.loc
                        changed = True
            if op is Op.FOR:
                body = instr.regions[0]
                pairs = list(zip(instr.operands[3:], body.args[1:])) + list(zip(body.yields, body.args[1:]))
                pairs += list(zip(body.yields, instr.results))
            elif op is Op.WHILE:
                cond, body = instr.regions
                pairs = [(a, b) for init in (instr.operands, body.yields)
                         for a, b in zip(init, cond.args)]
                pairs += list(zip(instr.operands, body.args)) + list(zip(body.yields, body.args))
                pairs += list(zip(body.yields, instr.results)) + list(zip(instr.operands, instr.results))
            elif op is Op.IF:
                pairs = [(y, r) for region in instr.regions for y, r in zip(region.yields, instr.results)]
            else:  # an operand's origins flow into every result (most operands have none)
                if op is Op.INT_TO_PTR:
                    for r in instr.results:
                        changed |= _add(origin, r, {_ANY})
                for found in [found for v in instr.operands if (found := get(v))]:
                    for r in instr.results:
                        changed |= _add(origin, r, found)
                pairs = []
            for src, dst in pairs:
                found = get(src)
                if found:
                    changed |= _add(origin, dst, found)
            for region in instr.regions:
                changed |= flow(region)
        return changed

    while flow(kernel.body):
        pass
    if _ANY in written:
        return {p.name: written.get(p.name, written[_ANY]) for p in kernel.params}
    return written


_WRITES = frozenset({Op.STORE, Op.DESC_STORE, Op.ATOMIC, Op.ATOMIC_CAS})


def _add(origin: dict[Value, set[str]], v: Value, new: set[str]) -> bool:
    if not new:
        return False
    cur = origin.setdefault(v, set())
    if new <= cur:
        return False
    cur |= new
    return True
