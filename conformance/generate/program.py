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
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass
class Stmt:
    """``lines`` compute ``result`` from ``uses``; a loop or if spans several lines."""

    result: Node
    lines: list[str]
    uses: tuple[str, ...]


@dataclass
class Program:
    inputs: list[tuple[str, DType, bool, str]]  # (name, dtype, masked, other literal)
    stmts: list[Stmt] = field(default_factory=list)
    output: Node | None = None
    m: int = 4
    n: int = 8
    programs: int = 1
    num_warps: int = 4

    def live(self) -> list[Stmt]:
        """The statements the output depends on, in order (dead code is dropped)."""
        assert self.output is not None
        needed = {self.output.name}
        kept: list[Stmt] = []
        for stmt in reversed(self.stmts):
            if stmt.result.name in needed:
                kept.append(stmt)
                needed.update(stmt.uses)
        return kept[::-1]

    def used_inputs(self) -> set[str]:
        used = {u for s in self.live() for u in s.uses}
        assert self.output is not None
        used.add(self.output.name)
        return used

    def source(self) -> str:
        assert self.output is not None
        used = self.used_inputs()
        params = [f"{name}_ptr" for name, *_ in self.inputs] + ["out_ptr", "n_valid", "trips", "flag"]
        body = [
            "pid = tl.program_id(0)",
            "offs = pid * M * N + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]",
            "valid = offs < n_valid",
        ]
        for name, _dtype, masked, other in self.inputs:
            if name not in used:
                continue
            if masked:
                body.append(f"{name} = tl.load({name}_ptr + offs, mask=valid, other={other})")
            else:
                body.append(f"{name} = tl.load({name}_ptr + offs)")
        for stmt in self.live():
            body.extend(stmt.lines)
        out = self.output
        value = out.name if out.shape == "MN" else f"tl.broadcast_to({out.name}, (M, N))"
        body.append(f"tl.store(out_ptr + offs, {value}, mask=valid)")
        lines = ["@tiles.jit", f"def kernel({', '.join(params)}, M: tl.constexpr, N: tl.constexpr):"]
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
