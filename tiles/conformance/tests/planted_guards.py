"""Planted defects in ``lowering/legalize.py``'s guards and the dialect's saturating conversion.

Each replaces one method (or table) of the legalizer while the OpenCL backend compiles, like
``planted.py``; a method replacement is the original with one edit (its knob below), so it must
follow legalize.py when that changes.  ``test_planted.CAUGHT_BY`` names the ``guards`` cases
that report each.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from tiles.backends.lowering import legalize as L  # noqa: N812
from tiles.core import attrs as A  # noqa: N812
from tiles.core.dtypes import int1, uint8, uint16, uint32, uint64
from tiles.core.ops import Op

from .planted import DIALECT, Planted, _dialect

LEGALIZER = "tiles.backends.lowering.legalize:_Legalizer"


def _divide(minus_one_guard: bool = True, zero_quotient: bool = True, mod_zero_dividend: bool = True) -> Any:
    """``_Legalizer._divide`` with one of its three answers left out (each knob False drops one)."""
    def divide(self: Any, instr: Any, dt: Any) -> list:
        a, b = instr.operands
        o = L._Out(instr)
        g = self.broadcasts.get(b, b)
        at = g.type.shape
        zero = o.emit(Op.EQ, g, o.const(0, dt, at), dtype=int1, shape=at)
        one = o.const(1, dt, at)
        safe = o.emit(Op.WHERE, zero, one, g, dtype=dt, shape=at)
        by_minus_one = None
        if dt.is_signed and minus_one_guard:
            by_minus_one = o.emit(Op.EQ, g, o.const(-1, dt, at), dtype=int1, shape=at)
            safe = o.emit(Op.WHERE, by_minus_one, one, safe, dtype=dt, shape=at)
            by_minus_one = o.broadcast(by_minus_one)
        zero, safe = o.broadcast(zero), o.broadcast(safe)
        r = o.emit(instr.op, a, safe)
        if instr.op is Op.IDIV:
            if by_minus_one is not None:
                r = o.emit(Op.WHERE, by_minus_one, o.emit(Op.NEG, a), r, dtype=dt)
            if not zero_quotient:
                return o.final(Op.WHERE, zero, r, r)
            return o.final(Op.WHERE, zero, o.const(-1 if dt.is_signed else int(dt.max()), dt), r)
        return o.final(Op.WHERE, zero, a if mod_zero_dividend else r, r)
    return divide


def _shift(bound: Op = Op.LT, unsigned_amount: bool = True, sign_fill: bool = True) -> Any:
    """``_Legalizer._shift`` with one edit: the range test ``bound``, the amount compared as
    unsigned (a negative amount is huge), the sign fill of an arithmetic shift."""
    def shift(self: Any, instr: Any, dt: Any) -> list:
        a, b = instr.operands
        o = L._Out(instr)
        unsigned = {8: uint8, 16: uint16, 32: uint32, 64: uint64}[dt.bits]
        amount = b
        if dt.is_signed and unsigned_amount:
            amount = o.emit(Op.CAST, b, dtype=unsigned, attrs=A.Cast(unsigned))
        limit = o.const(dt.bits, unsigned if amount is not b else dt)
        ok = o.emit(bound, amount, limit, dtype=int1)
        zero = o.const(0, dt)
        r = o.emit(instr.op, a, o.emit(Op.WHERE, ok, b, zero, dtype=dt))
        fill = zero
        if instr.op is Op.SHR and dt.is_signed and sign_fill:
            fill = o.emit(Op.SHR, a, o.const(dt.bits - 1, dt))
        return o.final(Op.WHERE, ok, r, fill)
    return shift


class _LegalizerMethod(Planted):
    method: Any = None

    @classmethod
    def replace(cls, original: Any) -> Any:
        return cls.method


class DivideByMinusOneUnguarded(_LegalizerMethod):
    """Signed ``//`` and ``%`` by -1 reach C unguarded: ``INT_MIN / -1`` overflows (SIGFPE on x86)."""
    name = "planted-div-minus-one-unguarded"
    target_name = f"{LEGALIZER}._divide"
    method = _divide(minus_one_guard=False)


class DivideByZeroGivesDividend(_LegalizerMethod):
    """``x // 0`` keeps the quotient by the 1 standing in for 0 (the dividend), not -1 / the maximum."""
    name = "planted-div-zero-quotient"
    target_name = f"{LEGALIZER}._divide"
    method = _divide(zero_quotient=False)


class ModByZeroGivesZero(_LegalizerMethod):
    """``x % 0`` keeps the remainder by the 1 standing in for 0 (0), not the dividend."""
    name = "planted-mod-zero-remainder"
    target_name = f"{LEGALIZER}._divide"
    method = _divide(mod_zero_dividend=False)


class ShiftGuardOffByOne(_LegalizerMethod):
    """Shift amounts are in range up to and including the bit width (``<=`` for ``<``)."""
    name = "planted-shift-guard-off-by-one"
    target_name = f"{LEGALIZER}._shift"
    method = _shift(bound=Op.LE)


class NegativeShiftUnguarded(_LegalizerMethod):
    """A signed shift amount is compared as signed: negative amounts pass the range test."""
    name = "planted-shift-negative-amount"
    target_name = f"{LEGALIZER}._shift"
    method = _shift(unsigned_amount=False)


class ShiftRightFillsZeros(_LegalizerMethod):
    """``>>`` by the bit width or more gives 0 for negative signed values too (not -1)."""
    name = "planted-shr-fill-zero"
    target_name = f"{LEGALIZER}._shift"
    method = _shift(sign_fill=False)


class Int1AddAsOr(Planted):
    """int1 ``+`` as OR (``True + True`` is True): the int1 table's ADD row is wrong."""
    name = "planted-int1-add-or"
    target_name = "tiles.backends.lowering.legalize:INT1_FORM"
    replace = staticmethod(lambda table: {**table, Op.ADD: Op.OR})


class NanToIntUnguarded(Planted):
    """The OpenCL dialect claims its saturating conversion gives 0 for NaN, so legalize leaves
    NaN -> int to it (NVIDIA's 64-bit conversions give INT64_MIN)."""
    name = "planted-nan-to-int-unguarded"
    target_name = "tiles.backends.opencl.emit_c:OpenCLEmitter.legality"
    replace = staticmethod(lambda legality: dataclasses.replace(legality, float_to_int_nan_is_zero=True))


class FloatToIntWraps(Planted):
    """The dialect converts float -> int without ``_sat``: out-of-range values and infinities are
    undefined in OpenCL C instead of saturating."""
    name = "planted-float-to-int-no-sat"
    target_name = DIALECT
    replace = staticmethod(_dialect(float_to_int=lambda text: text.replace("_sat", "")))


class IntAbsBuiltin(Planted):
    """Integer ``abs`` as OpenCL's ``abs()``, which LLVM takes as never negative: a clamp after it is
    folded away and ``abs(INT_MIN)`` (INT_MIN in the IR) escapes it (found by a generated program)."""
    name = "planted-int-abs-builtin"
    target_name = DIALECT
    replace = staticmethod(_dialect(int_abs=lambda _: "abs({a})"))


DEFECTS: tuple[type[Planted], ...] = (
    DivideByMinusOneUnguarded, DivideByZeroGivesDividend, ModByZeroGivesZero, ShiftGuardOffByOne,
    NegativeShiftUnguarded, ShiftRightFillsZeros, Int1AddAsOr, NanToIntUnguarded, FloatToIntWraps, IntAbsBuiltin,
)
