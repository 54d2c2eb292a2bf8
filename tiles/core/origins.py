"""Which pointer parameters a pointer value may derive from (through ADDPTR, broadcasts, WHERE,
loop-carried and IF-merged values): checked mode bounds-checks against them, and the GPU lowering
finds the loads of memory the kernel's own atomics change."""

from __future__ import annotations

from collections.abc import Iterable

from .dtypes import PointerType
from .ir import Block, Instr, Kernel, Value
from .ops import Op

_PASS_THROUGH = frozenset({Op.ADDPTR, Op.BROADCAST, Op.RESHAPE, Op.PERMUTE, Op.HINT, Op.BITCAST,
                           Op.SPLIT})
_UNION = frozenset({Op.WHERE, Op.JOIN, Op.CAT})


Origins = frozenset[int] | None  # indices into kernel.params; None: unknown origin


def is_pointer(v: Value) -> bool:
    return isinstance(v.type.dtype, PointerType)


def _union(values: Iterable[Origins]) -> Origins:
    out: set[int] = set()
    for o in values:
        if o is None:
            return None
        out |= o
    return frozenset(out)


class PointerOrigins:
    """For every pointer value, the pointer parameters it may derive from."""

    def __init__(self, kernel: Kernel) -> None:
        self.of: dict[Value, Origins] = {}
        for i, p in enumerate(kernel.params):
            if is_pointer(p.value):
                self.of[p.value] = frozenset({i})
        self.changed = True
        while self.changed:  # loop-carried pointers: grow to a fixpoint
            self.changed = False
            self.block(kernel.body)

    def get(self, v: Value) -> Origins:
        return self.of.get(v, frozenset())

    def _set(self, v: Value, origins: Origins) -> None:
        if not is_pointer(v):
            return
        old = self.of.get(v, frozenset())
        new = None if old is None or origins is None else old | origins
        if new != old:
            self.of[v] = new
            self.changed = True

    def block(self, block: Block) -> None:
        for instr in block.instrs:
            self.instr(instr)

    def instr(self, instr: Instr) -> None:
        op, ops = instr.op, instr.operands
        if op in _PASS_THROUGH and ops and is_pointer(ops[0]):
            for r in instr.results:
                self._set(r, self.get(ops[0]))
        elif op in _UNION:
            merged = _union(self.get(v) for v in ops if is_pointer(v))
            self._set(instr.results[0], merged)
        elif op is Op.FOR:
            (body,) = instr.regions
            self._carry(ops[3:], body.args[1:], body, instr.results)
        elif op is Op.WHILE:
            cond, body = instr.regions
            for a, init in zip(cond.args, ops):
                self._set(a, self.get(init))
            self._carry(ops, body.args, body, instr.results)
            for a, y in zip(cond.args, body.yields):
                self._set(a, self.get(y))
            self.block(cond)
        elif op is Op.IF:
            for region in instr.regions:
                self.block(region)
            for i, r in enumerate(instr.results):
                self._set(r, _union(self.get(region.yields[i]) for region in instr.regions))
        else:
            for region in instr.regions:
                self.block(region)
            for r in instr.results:  # INT_TO_PTR, loaded pointers, ...: unknown
                if is_pointer(r):
                    self._set(r, None)

    def _carry(self, inits: Iterable[Value], args: list[Value], body: Block,
               results: Iterable[Value]) -> None:
        for a, init in zip(args, inits):
            self._set(a, self.get(init))
        self.block(body)
        for a, y, r in zip(args, body.yields, results):
            self._set(a, self.get(y))
            self._set(r, self.get(a))


def atomically_written(kernel: Kernel, origins: PointerOrigins) -> Origins:
    """The pointer parameters an ATOMIC or ATOMIC_CAS of the kernel may change (None: unknown)."""
    return _union(origins.get(i.operands[0]) for i in kernel.walk() if i.op in (Op.ATOMIC, Op.ATOMIC_CAS))
