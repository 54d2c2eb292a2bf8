"""A loop-invariant A operand of a pipelined ``wgmma`` loop kept in local memory (attention's Q).

It is written once before the loop, as a swizzled tile after the stage buffers, and every
iteration's MMAs read it through a descriptor, as Triton's do.  Held in registers instead (as
``ldmatrix`` fragments, ``rules.hoist_a``) it took 16 registers per thread at head dim 64 and
32 at 128 for the whole loop: enough for ptxas to spill in attention's 128x128 and 4-warp
configurations.
"""

from __future__ import annotations

from ....core.ir import Instr
from .base import TensorCoreLowering
from .wgmma import operands


def resident_bytes(lw: TensorCoreLowering, dots: list[Instr]) -> int:
    """Local memory the A operands of ``dots`` take (each 1024-byte aligned)."""
    return sum(operands(lw.tc.plan, d).a.nbytes for d in dots)


def write_resident(lw: TensorCoreLowering, dots: list[Instr], at: int) -> dict[Instr, int]:
    """Store the A operand of each of ``dots`` at byte ``at`` (1024-byte aligned) onwards, fenced
    for wgmma's async proxy and behind a barrier: the byte offset of each."""
    e = lw.e
    where = {}
    for dot in dots:
        a = dot.operands[0]
        tile = operands(lw.tc.plan, dot).a
        tile.store(lw, lw.env[a], lw.layout(a), a.type.element, at)  # type: ignore[arg-type]
        where[dot] = at
        at += tile.nbytes
    e.fence_async_shared()
    e.barrier()
    return where
