"""A generated kernel: a list of SSA statements over tiles, rendered as Python source.

Every value is a ``Node`` that knows its dtype, its shape ((M, N), (M, 1) or
(1, N)) and what the comparison must allow for it:

* ``ulps``: error budget collected from inexact ops (math functions, division);
  an inexact value only flows into ops that cannot amplify its error
  (neg, abs, max/min, where's value operands, moves, stores).
* ``zero_sign_free``: came through a float max/min, where 0.0 vs -0.0 is the
  backend's choice; it is never a divisor.
* ``from_mul``: a float product; it never feeds an add/sub directly, so a backend
  that fuses a*b+c into an FMA is not blamed for it.

Besides the output, a program's kernel writes each ``Atomic``'s buffers; an ``Input`` (and the
output) may be laid out with other strides than row-major.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tiles.core.dtypes import DType


@dataclass(frozen=True)
class Node:
    name: str
    dtype: DType
    shape: str  # "MN", "M1" or "1N"
    ulps: int = 0
    zero_sign_free: bool = False
    from_mul: bool = False

    @property
    def exact(self) -> bool:
        return self.ulps == 0


@dataclass(frozen=True)
class Input:
    """A loaded tile: row-major at ``offs`` unless ``strides`` (rows, columns; in elements) say
    otherwise, as literals or (``runtime``) as the kernel arguments ``<name>_sr, <name>_sc``."""

    name: str
    dtype: DType
    masked: bool
    other: str = ""  # the literal masked-off lanes read
    strides: tuple[int, int] | None = None
    runtime: bool = False

    def span(self, m: int, n: int) -> int:
        """Elements one program's tile spans in memory."""
        return _span(self.strides, m, n)

    def stride_params(self) -> list[str]:
        return [f"{self.name}_sr", f"{self.name}_sc"] if self.strides and self.runtime else []

    def address(self) -> str:
        if self.strides is None:
            return "offs"
        sr, sc = self.stride_params() or [str(s) for s in self.strides]
        return f"pid * ((M - 1) * {sr} + (N - 1) * {sc} + 1) + rows * {sr} + cols * {sc}"


def _span(strides: tuple[int, int] | None, m: int, n: int) -> int:
    if strides is None:
        return m * n
    return (m - 1) * strides[0] + (n - 1) * strides[1] + 1


@dataclass(frozen=True)
class Atomic:
    """An atomic read-modify-write on its own buffer ``<name>_mem_ptr``; the old values go to
    ``<name>_old_ptr``.  Uncontended: one address per lane (old values and memory are fixed).
    Contended: one address per row of each program, every lane of the row adding (or maxing...)
    the same value, so the old values of a row are fixed as a multiset whatever the order."""

    name: str
    kind: str  # add, max, min, and, or, xor, xchg, cas
    dtype: DType
    contended: bool

    def params(self) -> list[str]:
        return [f"{self.name}_mem_ptr", f"{self.name}_old_ptr"] + ([f"{self.name}_cmp_ptr"] * (self.kind == "cas"))

    def cells(self, program: Program) -> int:
        """Elements of the memory (and compare) buffer."""
        per = program.m if self.contended else program.m * program.n
        return program.programs * per


@dataclass
class Stmt:
    """``lines`` compute ``result`` from ``uses``; a loop or if spans several lines.  A statement
    with an ``effect`` (an atomic) is kept even when the output does not depend on it."""

    result: Node
    lines: list[str]
    uses: tuple[str, ...]
    effect: bool = False


@dataclass
class Program:
    inputs: list[Input]
    stmts: list[Stmt] = field(default_factory=list)
    output: Node | None = None
    m: int = 4
    n: int = 8
    programs: int = 1
    num_warps: int = 4
    atomics: list[Atomic] = field(default_factory=list)
    out_strides: tuple[int, int] | None = None  # the store's (row, column) strides; None: row-major
    syncs: list[Any] = field(default_factory=list)  # sync.Sync: locks, tickets, flags (sync.py)

    def live(self) -> list[Stmt]:
        """The statements the output or an effect depends on, in order (dead code is dropped)."""
        assert self.output is not None
        needed = {self.output.name}
        kept: list[Stmt] = []
        for stmt in reversed(self.stmts):
            if stmt.result.name in needed or stmt.effect:
                kept.append(stmt)
                needed.update(stmt.uses)
        return kept[::-1]

    def used_inputs(self) -> set[str]:
        used = {u for s in self.live() for u in s.uses}
        assert self.output is not None
        used.add(self.output.name)
        return used

    def params(self) -> list[str]:
        return ([f"{i.name}_ptr" for i in self.inputs] + [p for a in self.atomics for p in a.params()]
                + [p for s in self.syncs for p in s.params()]
                + ["out_ptr", "n_valid", "trips", "flag"] + [p for i in self.inputs for p in i.stride_params()])

    def out_span(self) -> int:
        return _span(self.out_strides, self.m, self.n)

    def source(self) -> str:
        assert self.output is not None
        used = self.used_inputs()
        body = [
            "pid = tl.program_id(0)",
            "rows = tl.arange(0, M)[:, None]",
            "cols = tl.arange(0, N)[None, :]",
            "offs = pid * M * N + rows * N + cols",
            "valid = offs < n_valid",
        ]
        for i in self.inputs:
            if i.name not in used:
                continue
            mask = f", mask=valid, other={i.other}" if i.masked else ""
            body.append(f"{i.name} = tl.load({i.name}_ptr + {i.address()}{mask})")
        for stmt in self.live():
            body.extend(stmt.lines)
        out = self.output
        value = out.name if out.shape == "MN" else f"tl.broadcast_to({out.name}, (M, N))"
        where = Input("out", out.dtype, False, strides=self.out_strides).address()
        body.append(f"tl.store(out_ptr + {where}, {value}, mask=valid)")
        lines = ["@tiles.jit", f"def kernel({', '.join(self.params())}, M: tl.constexpr, N: tl.constexpr):"]
        lines += ["    " + line for line in body]
        return "\n".join(lines) + "\n"

    def module_source(self) -> str:
        return "import tiles\nimport tiles.language as tl\n\n\n" + self.source()

    @property
    def ulps(self) -> int:
        assert self.output is not None
        return self.output.ulps

    @property
    def zero_sign_free(self) -> bool:
        return any(s.result.zero_sign_free for s in self.live()) or bool(
            self.output and self.output.zero_sign_free)


def tl_name(dtype: DType) -> str:
    return f"tl.{dtype.name}"


def literal(value: bool | int | float) -> str:
    """Python source for a number (NaN and infinities included)."""
    if isinstance(value, bool) or isinstance(value, int):
        return repr(value)
    if value != value:
        return 'float("nan")'
    if value in (float("inf"), float("-inf")):
        return f'float("{value}")'
    return repr(float(value))
