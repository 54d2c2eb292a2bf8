"""Backends with one planted defect each: the interpreter run on rewritten tile IR.

Each rewrite maps one instruction to a sequence that computes the wrong thing into
the same result value, so the interpreter itself stays untouched.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from tiles.backends.base import CompiledKernel, Options
from tiles.backends.interpreter import InterpreterBackend
from tiles.core import attrs as A
from tiles.core.dtypes import int32
from tiles.core.ir import Block, Instr, Kernel, TileType, Value
from tiles.core.ops import Op
from tiles.core.typerules import infer

Rewrite = Callable[[Instr], "list[Instr] | None"]


def emit(out: list[Instr], op: Op, operands: list[Value], attrs: Any = None,
         result: Value | None = None) -> Value:
    """Append ``op`` to ``out``; its result is ``result`` when given (it must have the inferred type)."""
    (rtype,) = infer(op, [v.type for v in operands], attrs)
    value = result if result is not None else Value(rtype)
    assert value.type == rtype, (op, value.type, rtype)
    out.append(Instr(op, tuple(operands), (value,), attrs))
    return value


def const(out: list[Instr], value: Any, like: TileType) -> Value:
    return emit(out, Op.CONST, [], A.Const(value, like.dtype, like.shape))


def rewrite_block(block: Block, rewrite: Rewrite) -> Block:
    instrs: list[Instr] = []
    for instr in block.instrs:
        if instr.regions:
            instr = dataclasses.replace(instr, regions=tuple(rewrite_block(r, rewrite) for r in instr.regions))
        replaced = rewrite(instr)
        instrs.extend(replaced if replaced is not None else [instr])
    return Block(block.args, instrs, block.yields)


class DefectiveBackend(InterpreterBackend):
    """The interpreter, after ``rewrite`` has planted the defect in the kernel's IR."""

    name = "defective"

    def rewrite(self, instr: Instr) -> list[Instr] | None:
        raise NotImplementedError

    def compile(self, kernel: Kernel, options: Options) -> CompiledKernel:
        broken = dataclasses.replace(kernel, body=rewrite_block(kernel.body, self.rewrite))
        return super().compile(broken, options)


class ModRoundsLikePython(DefectiveBackend):
    """``%`` takes the divisor's sign (Python) instead of the dividend's (C)."""

    name = "defect-mod-python"

    def rewrite(self, instr: Instr) -> list[Instr] | None:
        if instr.op is not Op.MOD:
            return None
        a, b = instr.operands
        t = a.type
        out: list[Instr] = []
        r = emit(out, Op.MOD, [a, b])
        zero = const(out, 0 if t.dtype.is_int else 0.0, t)
        nonzero = emit(out, Op.NE, [r, zero])
        signs_differ = emit(out, Op.NE, [emit(out, Op.LT, [r, zero]), emit(out, Op.LT, [b, zero])])
        fix = emit(out, Op.AND, [nonzero, signs_differ])
        emit(out, Op.WHERE, [fix, emit(out, Op.ADD, [r, b]), r], result=instr.result)
        return out


class MaxPropagatesNan(DefectiveBackend):
    """``maximum`` and max reductions return NaN when an operand is NaN."""

    name = "defect-max-nan"

    def rewrite(self, instr: Instr) -> list[Instr] | None:
        if instr.op is Op.MAXIMUM:
            return [dataclasses.replace(instr, op=Op.MAXIMUM_NAN)]
        if instr.op is Op.REDUCE and instr.attrs.kind == "max":
            return [dataclasses.replace(instr, attrs=dataclasses.replace(instr.attrs, kind="max_nan"))]
        return None


_IDENTITY = {"sum": lambda t: 0, "xor": lambda t: 0, "or": lambda t: 0, "and": lambda t: -1,
             "prod": lambda t: 1,
             "max": lambda t: -math.inf if t.is_floating else t.min(),
             "min": lambda t: math.inf if t.is_floating else t.max()}


class ReductionDropsLast(DefectiveBackend):
    """Built-in reductions ignore the last element along their axis."""

    name = "defect-reduce-drops-last"

    def rewrite(self, instr: Instr) -> list[Instr] | None:
        if instr.op is not Op.REDUCE or instr.attrs.kind not in _IDENTITY or len(instr.operands) != 1:
            return None
        (x,) = instr.operands
        axis, shape = instr.attrs.axis, x.type.shape
        out: list[Instr] = []
        index = emit(out, Op.ARANGE, [], A.Arange(0, shape[axis]))
        last = const(out, shape[axis] - 1, TileType(int32, (shape[axis],)))
        keep = emit(out, Op.LT, [index, last])
        along = tuple(n if i == axis else 1 for i, n in enumerate(shape))
        keep = emit(out, Op.BROADCAST, [emit(out, Op.RESHAPE, [keep], A.Shape(along))], A.Shape(shape))
        identity = const(out, _IDENTITY[instr.attrs.kind](x.type.element), x.type)
        masked = emit(out, Op.WHERE, [keep, x, identity])
        out.append(dataclasses.replace(instr, operands=(masked,)))
        return out


class StoreIgnoresMask(DefectiveBackend):
    """Masked stores write every lane."""

    name = "defect-store-ignores-mask"

    def rewrite(self, instr: Instr) -> list[Instr] | None:
        if instr.op is not Op.STORE or not instr.attrs.masked:
            return None
        return [dataclasses.replace(instr, operands=instr.operands[:2],
                                    attrs=dataclasses.replace(instr.attrs, masked=False))]


class AtomicAddLosesUpdates(DefectiveBackend):
    """``atomic_add`` is a plain load, add and store: concurrent programs overwrite each other."""

    name = "defect-atomic-add-racy"

    def rewrite(self, instr: Instr) -> list[Instr] | None:
        if instr.op is not Op.ATOMIC or instr.attrs.kind != "add":
            return None
        ptr, value, *mask = instr.operands
        out: list[Instr] = []
        if mask:
            other = const(out, 0, value.type)
            old = emit(out, Op.LOAD, [ptr, mask[0], other], A.Load(True, True), result=instr.result)
        else:
            old = emit(out, Op.LOAD, [ptr], A.Load(False, False), result=instr.result)
        new = emit(out, Op.ADD, [old, value])
        out.append(Instr(Op.STORE, (ptr, new, *mask), (), A.Store(bool(mask))))
        return out


DEFECTS = (ModRoundsLikePython, MaxPropagatesNan, ReductionDropsLast, StoreIgnoresMask, AtomicAddLosesUpdates)
assert all(d.name != InterpreterBackend.name for d in DEFECTS)


class CrashesOnIntegerDivision(DefectiveBackend):
    """The process dies (a segfault) when a kernel divides integers: a run must survive it."""

    name = "defect-segfault-idiv"

    def rewrite(self, instr: Instr) -> list[Instr] | None:
        if instr.op is Op.IDIV:
            import ctypes
            ctypes.string_at(0)  # reads address 0: SIGSEGV
        return None


class HangsOnIntegerDivision(DefectiveBackend):
    """Compiling a kernel that divides integers never finishes: a run must time it out."""

    name = "defect-hang-idiv"

    def rewrite(self, instr: Instr) -> list[Instr] | None:
        while instr.op is Op.IDIV:
            pass
        return None
