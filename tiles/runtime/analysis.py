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

    def flows(pairs: Any) -> bool:
        changed = False
        for src, dst in pairs:
            found = get(src)
            if found:
                changed |= _add(origin, dst, found)
        return changed

    def flow(block: Block) -> bool:
        """One pass in program order, a region before the values it hands out; True when a loop's
        back edge (its yields into its arguments) brought something new: then another pass."""
        again = False
        for instr in block.instrs:
            op = instr.op
            if op in _WRITES:
                for name in get(instr.operands[0], ()):
                    if name not in written:
                        written[name] = instr.loc
            if op is Op.FOR:
                body = instr.regions[0]
                flows(zip(instr.operands[3:], body.args[1:]))
                again |= flow(body)
                again |= flows(zip(body.yields, body.args[1:]))
                flows(zip(body.yields, instr.results))
            elif op is Op.WHILE:
                cond, body = instr.regions
                flows(zip(instr.operands, cond.args))
                flows(zip(instr.operands, body.args))
                flows(zip(instr.operands, instr.results))
                again |= flow(cond)
                again |= flow(body)
                again |= flows(zip(body.yields, cond.args))
                again |= flows(zip(body.yields, body.args))
                flows(zip(body.yields, instr.results))
            elif op is Op.IF:
                for region in instr.regions:
                    again |= flow(region)
                    flows(zip(region.yields, instr.results))
            else:  # an operand's origins flow into every result (most operands have none)
                if op is Op.INT_TO_PTR:
                    for r in instr.results:
                        _add(origin, r, {_ANY})
                for v in instr.operands:
                    found = get(v)
                    if found:
                        for r in instr.results:
                            _add(origin, r, found)
                for region in instr.regions:
                    again |= flow(region)
        return again

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
