"""Text form of the tile IR (``TILES_DUMP=ir``, ``kernel.ir(...)``)."""

from __future__ import annotations

import dataclasses

from .dtypes import DType
from .ir import Block, Instr, Kernel


def _show(value: object) -> str:
    return str(value) if isinstance(value, DType) else repr(value)  # a dtype by its name: float32


def _attrs(instr: Instr) -> str:
    a = instr.attrs
    if a is None:
        return ""
    if dataclasses.is_dataclass(a):
        parts = [f"{f.name}={_show(getattr(a, f.name))}" for f in dataclasses.fields(a)]
        return " {" + ", ".join(parts) + "}"
    return f" {{{a!r}}}"


def _instr(instr: Instr, indent: str, out: list[str]) -> None:
    lhs = ", ".join(f"{r!r}: {r.type}" for r in instr.results)
    rhs = f"{instr.op.value}({', '.join(map(repr, instr.operands))}){_attrs(instr)}"
    loc = f"  # {instr.loc.filename.rsplit('/', 1)[-1]}:{instr.loc.line}" if instr.loc.line else ""
    out.append(f"{indent}{lhs + ' = ' if lhs else ''}{rhs}{loc}")
    for i, region in enumerate(instr.regions):
        args = ", ".join(f"{a!r}: {a.type}" for a in region.args)
        out.append(f"{indent}  region {i} ({args}):")
        _block(region, indent + "    ", out)


def _block(block: Block, indent: str, out: list[str]) -> None:
    for instr in block.instrs:
        _instr(instr, indent, out)
    if block.yields:
        out.append(f"{indent}yield {', '.join(map(repr, block.yields))}")


def format_kernel(kernel: Kernel) -> str:
    params = ", ".join(
        f"{p.value!r} {p.name}: {p.value.type}" + (" (div 16)" if p.divisibility == 16 else "")
        for p in kernel.params
    )
    out = [f"kernel {kernel.name}({params}):"]
    _block(kernel.body, "  ", out)
    return "\n".join(out)
