"""Shared IR passes (``Kernel -> Kernel``) and the pipeline that orders them."""

from __future__ import annotations

import dataclasses

from .. import config
from . import attrs as A
from .fold import common_subexpressions, constant_folding
from .ir import Block, Instr, Kernel, Value
from .ops import SIDE_EFFECTS, Op
from .verify import verify


def count_uses(block: Block, counts: dict[Value, int]) -> None:
    for instr in block.instrs:
        for v in instr.operands:
            counts[v] = counts.get(v, 0) + 1
        for region in instr.regions:
            count_uses(region, counts)
    for y in block.yields:
        counts[y] = counts.get(y, 0) + 1


def _has_effects(instr: Instr) -> bool:
    # a volatile load is an observable read (a spin-wait ``while tl.load(flag, volatile=True) == 0``
    # must stay), as in Triton, where it carries a write effect
    if instr.op in SIDE_EFFECTS or (instr.op is Op.LOAD and instr.attrs.volatile):
        return True
    return any(_has_effects(i) for r in instr.regions for i in r.instrs)


def dead_code_elimination(kernel: Kernel) -> Kernel:
    """Drop instructions without side effects whose results nobody uses.

    One backward sweep: an instruction dropped gives back its operands' uses (and those of its
    regions), so whatever only it used is dropped when the sweep reaches it (SSA: every use comes
    after its definition, regions inside their instruction)."""
    counts: dict[Value, int] = {}
    count_uses(kernel.body, counts)

    def release(block: Block) -> None:
        for instr in block.instrs:
            for v in instr.operands:
                counts[v] -= 1
            for region in instr.regions:
                release(region)
        for y in block.yields:
            counts[y] -= 1

    def sweep(block: Block) -> None:
        kept = []
        for instr in reversed(block.instrs):
            if not any(counts.get(r, 0) for r in instr.results) and not _has_effects(instr):
                for v in instr.operands:
                    counts[v] -= 1
                for region in instr.regions:
                    release(region)
                continue
            for region in instr.regions:
                sweep(region)
            kept.append(instr)
        if len(kept) != len(block.instrs):
            kept.reverse()
            block.instrs = kept

    sweep(kernel.body)
    return kernel


def mark_unused_atomics(kernel: Kernel) -> Kernel:
    """Tell backends which atomics' old values nobody reads (they can skip returning them)."""
    if not any(instr.op is Op.ATOMIC for instr in kernel.walk()):  # (most kernels: no use to count)
        return kernel
    counts: dict[Value, int] = {}
    count_uses(kernel.body, counts)

    def visit(block: Block) -> None:
        for i, instr in enumerate(block.instrs):
            if instr.op is Op.ATOMIC and isinstance(instr.attrs, A.Atomic) and instr.attrs.result_used \
                    and counts.get(instr.results[0], 0) == 0:
                block.instrs[i] = dataclasses.replace(
                    instr, attrs=dataclasses.replace(instr.attrs, result_used=False))
            for region in instr.regions:
                visit(region)

    visit(kernel.body)
    return kernel


PIPELINE = (constant_folding, common_subexpressions, dead_code_elimination, mark_unused_atomics)


def run_pipeline(kernel: Kernel) -> Kernel:
    check = config.check_ir()
    if check:
        verify(kernel)
    for p in PIPELINE:
        kernel = p(kernel)
        if check:
            verify(kernel)
    return kernel
