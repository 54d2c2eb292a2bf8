"""Constant folding and common-subexpression elimination (``Kernel -> Kernel`` passes).

Folding evaluates elementwise ops whose operands are all CONSTs with the
IR's scalar semantics (``core/semantics.py``, which the interpreter runs too), so a folded
kernel computes exactly what the unfolded one would.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from . import attrs as A
from . import semantics
from .ir import Block, Instr, Kernel, Value
from .ops import BINARY_ARITH, COMPARISON, MATH, SIDE_EFFECTS, Op

_FOLDABLE = BINARY_ARITH | COMPARISON | MATH | {Op.NEG, Op.NOT, Op.CAST, Op.WHERE, Op.FMA, Op.ISNAN,
                                                Op.MATH_FN, Op.BROADCAST, Op.BITCAST}
PURE = _FOLDABLE | {Op.CONST, Op.ARANGE, Op.PROGRAM_ID, Op.NUM_PROGRAMS, Op.BITCAST, Op.ADDPTR,
                     Op.RESHAPE, Op.PERMUTE, Op.JOIN, Op.CAT, Op.PTR_TO_INT, Op.INT_TO_PTR, Op.HINT}


def replace_uses(block: Block, mapping: dict[Value, Value]) -> None:
    for i, instr in enumerate(block.instrs):
        if any(v in mapping for v in instr.operands):
            block.instrs[i] = instr = dataclasses.replace(
                instr, operands=tuple(mapping.get(v, v) for v in instr.operands))
        for region in instr.regions:
            replace_uses(region, mapping)
    block.yields = [mapping.get(v, v) for v in block.yields]


def constant_folding(kernel: Kernel) -> Kernel:
    """Replace elementwise ops on constants by the constant they compute."""
    consts: dict[Value, A.Const] = {}

    def visit(block: Block) -> None:
        for i, instr in enumerate(block.instrs):
            operands = instr.operands
            if instr.op is Op.CONST:
                consts[instr.result] = instr.attrs
            elif (operands and operands[0] in consts and instr.op in _FOLDABLE
                  and all(v in consts for v in operands)
                  and not instr.regions and not instr.result.type.dtype.is_ptr):
                folded = _fold(instr, [consts[v] for v in operands])
                if folded is not None:
                    block.instrs[i] = Instr(Op.CONST, (), instr.results, folded, (), instr.loc)
                    consts[instr.result] = folded
            for region in instr.regions:
                visit(region)

    visit(kernel.body)
    return kernel


def _fold(instr: Instr, values: list[A.Const]) -> A.Const | None:
    rt = instr.result.type
    if instr.op is Op.BROADCAST:
        return A.Const(values[0].value, values[0].dtype, rt.shape)
    if instr.op is Op.BITCAST and not (rt.element.is_int and values[0].dtype.is_int):
        return None  # integers only: the tracer reinterprets them for Triton's >> (semantic.shift)
    try:
        args = [semantics.constant(c.value, c.dtype).reshape(()) for c in values]
        with np.errstate(all="ignore"):
            out = semantics.apply(instr.op, instr.attrs, args, rt.with_shape(()))
    except Exception:  # anything the scalar rules refuse stays for run time
        return None
    value = np.asarray(out).reshape(()).item()
    if not isinstance(value, (bool, int, float)):  # raw storage (float8e4b15's bytes): not a number to keep
        return None
    if isinstance(value, float) and rt.element.is_int:
        return None
    return A.Const(value, rt.element, rt.shape)


def _key(instr: Instr) -> tuple[Any, ...] | None:
    if instr.op not in PURE or instr.regions or instr.op in SIDE_EFFECTS:
        return None
    attrs: Any = instr.attrs
    if instr.op is Op.CONST and isinstance(attrs.value, float):
        attrs = (attrs, math.copysign(1.0, attrs.value))  # 0.0 == -0.0 (and hash alike): keep them apart
    return (instr.op, tuple(map(id, instr.operands)), attrs, tuple(r.type for r in instr.results))


def common_subexpressions(kernel: Kernel) -> Kernel:
    """Reuse the result of an identical pure instruction that dominates this one."""
    mapping: dict[Value, Value] = {}

    def visit(block: Block, seen: dict[tuple[Any, ...], Instr]) -> None:
        scope = dict(seen)
        kept = []
        for instr in block.instrs:
            if mapping and any(v in mapping for v in instr.operands):
                instr = dataclasses.replace(instr, operands=tuple(mapping.get(v, v) for v in instr.operands))
            key = _key(instr)
            if key is not None:
                try:
                    first = scope.setdefault(key, instr)
                except TypeError:  # attributes that cannot be hashed: never merged
                    first = instr
                if first is not instr:
                    for old, new in zip(instr.results, first.results):
                        mapping[old] = new
                    continue
            for region in instr.regions:
                visit(region, scope)
            kept.append(instr)
        block.instrs = kept
        if mapping:
            block.yields = [mapping.get(v, v) for v in block.yields]

    visit(kernel.body, {})
    return kernel
