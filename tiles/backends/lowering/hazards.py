"""Global memory read and written by different threads of one program, in program order.

A kernel's tiles have the interpreter's meaning: ``z = tl.load(Z + rows * N)`` (column 0 of Z)
then ``tl.store(Z + rows[:, None] * N + cols[None, :], z[:, None] + ...)`` reads all of column 0
before any of Z is written.  Lowered, the thread that stores ``Z[r, 0]`` is not every thread that
read it: on a device that runs a work-group's threads one after another between barriers (pocl
on a CPU) that thread's store lands before the later threads read, and they read the new value
(Triton's test_dot ``add-rows``/``add-cols`` epilogues, wrong on 3840 of 4096 elements).

Where the emitter asks for it (``Emitter.orders_global_hazards``), the lowering puts a program
barrier (with a global fence) between a global load and a later store, or a store and a later
load, through pointers that may derive from the same parameter, on some path since the last
such barrier.  A load and a store through the same pointer (or the same ``base + offsets``)
in the same exact layout need none: each thread reads and writes only its own elements.

Paths follow the control flow: each branch of an ``if`` starts from what was pending before it
and the ``if`` leaves the union of both; a loop leaves the union of its entry (it may run no
iteration) and its body's end.  A loop's back edge is a path too: an access left pending at the
end of one iteration (``for i in range(n): tl.store(Z + (i + 1) * N + offs, tl.load(Z + i * N +
offs[::-1]))``: row ``i + 1`` written, then read by other threads in iteration ``i + 1``) that
meets one the next iteration reaches from the body's top without a barrier gets a program barrier
at the end of the body.  There the same pointer is only the same elements if it does not change
from one iteration to the next (computed outside the loop, or from such values by pure ops).
Tile IR conditions and loop bounds are scalars, the same in every thread of a program, so every
work-item of the work-group reaches each of these barriers.  Two stores of one element by
different threads are not ordered (as in compiled Triton).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...core.fold import PURE
from ...core.ir import Instr, Kernel, Value
from ...core.ops import Op
from ...core.origins import Origins, PointerOrigins
from .induction import defined_in

Callback = Callable[..., Any]
State = tuple[list[Value], list[Value], list[bool]]  # reads, writes, each open loop's top reached


def _meets(a: Origins, b: Origins) -> bool:
    """Whether two origin sets may share a parameter (None: unknown, meets anything)."""
    return a is None or b is None or bool(a & b)


@dataclass
class _Loop:
    """A loop being lowered: what it defines, and the accesses its top reaches without a barrier."""

    instr: Instr
    inside: set[Value]
    head: list[tuple[bool, Value]] = field(default_factory=list)  # (a store, pointer)
    varies: dict[Value, bool] = field(default_factory=dict)


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
        self.reads: list[Value] = []  # pointers read since the last program barrier (on some path)
        self.writes: list[Value] = []  # pointers written since then
        self.open: list[bool] = []  # per loop being lowered: its body's top reaches here without a barrier
        self._loops: list[_Loop] = []

    def _same(self, lw: object, a: Value, b: Value) -> bool:
        la, lb = lw.layout(a), lw.layout(b)  # type: ignore[attr-defined]
        if not (la.exact and la == lb):
            return False
        return a is b or (a in self._adds and self._adds.get(a) == self._adds.get(b))

    def _conflict(self, lw: object, ptr: Value, others: list[Value]) -> bool:
        mine = self.origins.get(ptr)
        return any(_meets(mine, self.origins.get(o)) and not self._same(lw, ptr, o) for o in others)

    def barrier(self) -> None:
        """After a program barrier: nothing before it is pending."""
        self.reads, self.writes, self.open = [], [], [False] * len(self.open)

    def _barrier(self, lw: object) -> None:
        lw.e.program_barrier()  # type: ignore[attr-defined]
        self.barrier()

    def access(self, lw: object, instr: Instr) -> None:
        """Before lowering a LOAD or STORE: a program barrier if it meets an earlier access."""
        if not self.active:
            return
        ptr, store = instr.operands[0], instr.op is Op.STORE
        if self._conflict(lw, ptr, self.reads if store else self.writes):
            self._barrier(lw)
        (self.writes if store else self.reads).append(ptr)
        for loop, reached in zip(self._loops, self.open):
            if reached:
                loop.head.append((store, ptr))

    # ------------------------------------------------------------ control flow
    def _state(self) -> State:
        return list(self.reads), list(self.writes), list(self.open)

    def _join(self, other: State) -> None:
        """The accesses pending on either path: this one or ``other``'s."""
        reads, writes, reached = other
        self.reads += [v for v in reads if not any(v is r for r in self.reads)]
        self.writes += [v for v in writes if not any(v is w for w in self.writes)]
        self.open = [a or b for a, b in zip(self.open, reached)]

    def branches(self, then: Callback, otherwise: Callback) -> tuple[Callback, Callback]:
        """An IF's branch callbacks: each starts from the state before it, the IF leaves their union."""
        if not self.active:
            return then, otherwise
        states: list[State] = []

        def first() -> Any:
            states.append(self._state())
            out = then()
            states.append(self._state())
            return out

        def second() -> Any:
            self.reads, self.writes, self.open = states[0]
            out = otherwise()
            self._join(states[1])
            return out
        return first, second

    def loop_body(self, lw: object, instr: Instr, body: Callback) -> Callback:
        """A FOR's body callback, lowered once inside the loop, its back edge ordered at its end."""
        if not self.active:
            return body

        def run(*args: Any) -> Any:
            entry = self._enter(instr)
            out = body(*args)
            self._leave(lw, instr, entry)
            return out
        return run

    def while_loop(self, lw: object, instr: Instr, cond: Callback, body: Callback) -> tuple[Callback, Callback]:
        """A WHILE's callbacks, ``cond`` lowered before the loop and again after ``body`` inside it."""
        if not self.active:
            return cond, body
        entry: list[State] = []

        def test(*args: Any) -> Any:
            out = cond(*args)
            if entry:  # the test at the end of the body: the back edge follows
                self._leave(lw, instr, entry.pop())
            return out

        def run(*args: Any) -> Any:
            entry.append(self._enter(instr))
            return body(*args)
        return test, run

    def _enter(self, instr: Instr) -> State:
        inside = set().union(*(defined_in(region) for region in instr.regions))
        entry = self._state()
        self._loops.append(_Loop(instr, inside))
        self.open.append(True)
        return entry

    def _leave(self, lw: object, instr: Instr, entry: State) -> None:
        loop = self._loops[-1]
        assert loop.instr is instr, "loops left out of order"
        tail = [(True, w) for w in self.writes] + [(False, r) for r in self.reads]
        if any(s != t and self._across(lw, loop, p, q) for s, p in tail for t, q in loop.head):
            self._barrier(lw)  # at the end of the body: before the next iteration's accesses
        self._loops.pop()
        self.open.pop()
        self._join(entry)  # the loop may run no iteration

    def _across(self, lw: object, loop: _Loop, a: Value, b: Value) -> bool:
        """Whether ``a`` in one iteration may meet other threads' elements of ``b`` in the next."""
        if not _meets(self.origins.get(a), self.origins.get(b)):
            return False
        return self._varies(lw, loop, a) or self._varies(lw, loop, b) or not self._same(lw, a, b)

    def _varies(self, lw: object, loop: _Loop, v: Value) -> bool:
        """Whether ``v`` may differ between iterations of ``loop``."""
        if v not in loop.inside:
            return False
        if v not in loop.varies:
            d = lw.definitions().get(v)  # type: ignore[attr-defined]
            loop.varies[v] = (d is None or d.op not in PURE or bool(d.regions)
                              or any(self._varies(lw, loop, o) for o in d.operands))
        return loop.varies[v]
