"""Barriers out of run-time conditionals: the C-style emitter's ``if`` blocks, split at each barrier.

A tile IR ``if`` has a scalar condition, the same in every thread of a program, so its branch
may hold work-group barriers (a reduction's exchange through local memory).  pocl's work-group
compiler copies the code that follows a barrier under a conditional (its barrier tail
replication), and its compile time grows far faster than the number of such barriers: a
``tl.static_range`` whose body is ``if i < n:`` around reductions unrolls into dozens of them
(Liger's attention residuals: a 4-block forward took 66 s to compile, 8 blocks over 10 minutes).
Here a barrier reached inside open ``if`` blocks closes them, is emitted unconditionally, and
reopens them:

    if (c) { A; barrier; B; }   ->   if (c) { A; } barrier; if (c) { B; }

which computes the same when ``c`` is uniform: all threads take each barrier together, now also
when ``c`` is false, where it only costs a wait.  Variables declared inside the blocks are then declared
before the outermost one, so that ``B`` still sees ``A``'s; until a block meets a barrier its
declarations stay where they are, and code without barriers under an ``if`` is unchanged.

A loop's body is a stretch of its own: a barrier inside a loop inside an ``if`` stays inside
that ``if`` (the loop is not split).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class _Stretch:
    """Straight-line code (the kernel's body, or one loop's) and the ``if`` blocks open in it."""

    guards: list[tuple[str, int]] = field(default_factory=list)  # (condition, indent), outermost first
    start: int = 0  # line of the outermost open ``if``
    pending: list[tuple[int, str, str]] = field(default_factory=list)  # (line, C type, name) declared in it
    hoisted: list[str] | None = None  # after a split: the declarations that go before line ``start``


class GuardedBlocks:
    """Needs ``lines``, ``indent``, ``count``, ``_line`` and the dialect's ``barrier`` text."""

    lines: list[str]
    indent: int
    count: int

    def __init__(self) -> None:
        self._stretches = [_Stretch()]
        self.barriers = 0  # emitted so far

    def _line(self, text: str) -> None:
        raise NotImplementedError

    def _declare(self, ctype: str, init: str | None) -> str:
        """A new variable, initialised with ``init`` (C) if given."""
        self.count += 1
        name = f"v{self.count}"
        here = self._stretches[-1]
        if here.guards and here.hoisted is not None:
            here.hoisted.append(f"{ctype} {name};")
            if init is not None:
                self._line(f"{name} = {init};")
            return name
        if here.guards:
            here.pending.append((len(self.lines), ctype, name))
        self._line(f"{ctype} {name};" if init is None else f"{ctype} {name} = {init};")
        return name

    def _open(self, cond: str) -> None:
        here = self._stretches[-1]
        if not here.guards:
            here.start, here.pending, here.hoisted = len(self.lines), [], None
        here.guards.append((cond, self.indent))
        self._line(f"if ({cond}) {{")
        self.indent += 1

    def _otherwise(self) -> None:
        """The open ``if`` becomes its ``else`` branch."""
        here = self._stretches[-1]
        cond, indent = here.guards[-1]
        here.guards[-1] = (f"!({cond})", indent)
        self.indent -= 1
        self._line("} else {")
        self.indent += 1

    def _close(self) -> None:
        here = self._stretches[-1]
        here.guards.pop()
        self.indent -= 1
        self._line("}")
        if not here.guards and here.hoisted:
            pad = "  " * self.indent
            self.lines[here.start:here.start] = [pad + d for d in here.hoisted]
            here.hoisted = None

    @contextmanager
    def _loop_body(self) -> Iterator[None]:
        self._stretches.append(_Stretch())
        try:
            yield
        finally:
            self._stretches.pop()

    def _barrier(self, text: str) -> None:
        self.barriers += 1
        here = self._stretches[-1]
        if not here.guards:
            self._line(text)
            return
        if here.hoisted is None:
            here.hoisted = []
            for i, ctype, name in here.pending:
                line = self.lines[i]
                pad, rest = line[:len(line) - len(line.lstrip())], line.lstrip()
                assert rest.startswith(f"{ctype} {name}"), (rest, ctype, name)
                rest = rest[len(ctype) + 1:]
                self.lines[i] = "" if rest == f"{name};" else pad + rest
                here.hoisted.append(f"{ctype} {name};")
        for _, indent in reversed(here.guards):
            self.lines.append("  " * indent + "}")
        self.lines.append("  " * here.guards[0][1] + text)
        for cond, indent in here.guards:
            self.lines.append("  " * indent + f"if ({cond}) {{")
