"""What the tensor-core loop of a PTX kernel does, in a form tests and ``benchmarks/gemm_codegen.py``
compare: its synchronization and tensor-core instructions in order, the wgmma shapes, the
``cp.async`` sizes.  Reads both llvmlite's PTX and Triton's (which spells operands with spaces
and sizes in hex)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_LABEL = re.compile(r"^(\$L__BB\d+_\d+):", re.M)
_EVENT = re.compile(r"cp\.async\.wait_group\s+\d+|bar\.sync|fence\.proxy\.async|wgmma\.mma_async|"
                    r"wgmma\.commit_group|wgmma\.wait_group\.sync\.aligned\s+\d+|"
                    r"cp\.async\.\w+\.shared\.global|cp\.async\.commit_group")
_COPY = re.compile(r"cp\.async\.(\w+)\.shared\.global\s*\[[^\]]*\],\s*\[[^\]]*\],\s*(0x[0-9a-fA-F]+|\d+)")
_SHAPE = re.compile(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)\.(\w+)\.(\w+)")


def mma_loop(ptx: str) -> str:
    """The body of the first single-block loop (a label up to the branch back to it) that issues
    ``wgmma``, or ``""`` when there is none."""
    for m in _LABEL.finditer(ptx):
        back = re.search(rf"bra(\.uni)?\s+{re.escape(m.group(1))};", ptx[m.end():])
        if back is None:
            continue
        body = ptx[m.end():m.end() + back.start()]
        if "wgmma.mma_async" in body and not _LABEL.search(body):
            return body
    return ""


def loop_events(loop: str) -> list[str]:
    """Synchronization, copy and MMA instructions in order (repeats merged, whitespace and the
    copy's cache kind dropped): ``["cp.async.wait_group 1", "bar.sync", "wgmma.mma_async", ...]``."""
    out: list[str] = []
    for m in _EVENT.finditer(loop):
        ev = re.sub(r"\s+", " ", re.sub(r"cp\.async\.\w+\.shared\.global", "cp.async", m.group(0)))
        if not out or out[-1] != ev:
            out.append(ev)
    return out


@dataclass(frozen=True)
class LoopSummary:
    events: list[str]
    wgmma: Counter[str]   # "m64n256k16.f32.f16" -> count per iteration
    copies: Counter[str]  # "cg 16" -> count per iteration
    instructions: int     # PTX instruction lines in the body (inline-asm markers and comments left out)

    def line(self) -> str:
        shapes = ", ".join(f"{n}x {s}" for s, n in sorted(self.wgmma.items()))
        copies = ", ".join(f"{n}x {c}B" for c, n in sorted(self.copies.items()))
        return f"{self.instructions} instrs | wgmma {shapes} | cp.async {copies} | " + " > ".join(self.events)


def summarize(ptx: str) -> LoopSummary | None:
    loop = mma_loop(ptx)
    if not loop:
        return None
    copies = Counter(f"{kind} {int(size, 0)}" for kind, size in _COPY.findall(loop))
    shapes = Counter(".".join(m) for m in _SHAPE.findall(loop))
    lines = [t for t in (raw.strip() for raw in loop.splitlines())
             if t and t not in ("{", "}") and not t.startswith(("//", ".loc", "$L__tmp")) and "inline asm" not in t]
    return LoopSummary(loop_events(loop), shapes, copies, len(lines))
