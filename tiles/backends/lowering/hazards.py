"""Global memory read and written by different threads of one program, in program order.

A kernel's tiles have the interpreter's meaning: ``z = tl.load(Z + rows * N)`` (column 0 of Z)
then ``tl.store(Z + rows[:, None] * N + cols[None, :], z[:, None] + ...)`` reads all of column 0
before any of Z is written.  Lowered, the thread that stores ``Z[r, 0]`` is not every thread that
read it: on a device that runs a work-group's threads one after another between barriers (pocl
on a CPU) that thread's store lands before the later threads read, and they read the new value
(Triton's test_dot ``add-rows``/``add-cols`` epilogues, wrong on 3840 of 4096 elements).

Where the emitter asks for it (``Emitter.orders_global_hazards``), the lowering puts a program
barrier (with a global fence) between a global load and a later store, or a store and a later
load, through pointers that may derive from the same parameter, in lowering order, since the
last such barrier.  A load and a store through the same pointer (or the same ``base + offsets``)
in the same exact layout need none: each thread reads and writes only its own elements.
"""

from __future__ import annotations

from ...core.ir import Instr, Kernel, Value
from ...core.ops import Op
from ...core.origins import Origins, PointerOrigins


def _meets(a: Origins, b: Origins) -> bool:
    """Whether two origin sets may share a parameter (None: unknown, meets anything)."""
    return a is None or b is None or bool(a & b)


class GlobalHazards:
    def __init__(self, kernel: Kernel, origins: PointerOrigins | None) -> None:
        self.origins = origins if origins is not None else PointerOrigins(kernel)
        self._adds: dict[Value, tuple[Value, ...]] = {}
        stored: list[Origins] = []
        loaded: list[Origins] = []
        for instr in kernel.walk():
            if instr.op is Op.ADD and instr.results and self.origins.get(instr.results[0]) != frozenset():
                self._adds[instr.results[0]] = tuple(instr.operands)
            if instr.op is Op.STORE:
                stored.append(self.origins.get(instr.operands[0]))
            elif instr.op is Op.LOAD:
                loaded.append(self.origins.get(instr.operands[0]))
        # only parameters both loaded and stored can hold a hazard
        self.active = any(_meets(s, r) for s in stored for r in loaded)
        self.reads: list[Value] = []  # pointers read since the last program barrier
        self.writes: list[Value] = []  # pointers written since then

    def _same(self, lw: object, a: Value, b: Value) -> bool:
        la, lb = lw.layout(a), lw.layout(b)  # type: ignore[attr-defined]
        if not (la.exact and la == lb):
            return False
        return a is b or (a in self._adds and self._adds.get(a) == self._adds.get(b))

    def _conflict(self, lw: object, ptr: Value, others: list[Value]) -> bool:
        mine = self.origins.get(ptr)
        return any(_meets(mine, self.origins.get(o)) and not self._same(lw, ptr, o) for o in others)

    def access(self, lw: object, instr: Instr) -> None:
        """Before lowering a LOAD or STORE: a program barrier if it meets an earlier access."""
        if not self.active:
            return
        ptr = instr.operands[0]
        others = self.writes if instr.op is Op.LOAD else self.reads
        if self._conflict(lw, ptr, others):
            lw.e.program_barrier()  # type: ignore[attr-defined]
            self.reads, self.writes = [], []
        (self.reads if instr.op is Op.LOAD else self.writes).append(ptr)
