"""Legalization: the IR's hard scalar cases rewritten into plain ops, once for every code generator.

``core/ops.py`` defines every op on every input (``core/semantics.py`` runs the
definitions).  Machines and C leave some inputs undefined or answer differently; this pass
(``Kernel -> Kernel``, the last of ``prepare.prepare``, just before the walk) spells those cases out
with ops whose inputs are always in range, so an emitter only writes raw operations:

* IDIV/MOD by 0 or -1: the divisor becomes 1 there, and a WHERE picks the defined answer
  (-1 / the dividend for 0; ``-a`` / 0 for -1, which also covers INT_MIN / -1).
* SHL/SHR by an amount outside [0, bits): the amount becomes 0 there, and a WHERE picks 0
  (or -1 for SHR of a negative signed value); a 64-bit amount is first clamped to 64 (NVPTX
  folds the guard into its own shift, which reads only the amount's low 32 bits).
* int1 arithmetic: the one-bit op it is (ADD/SUB -> XOR, MUL/MINIMUM -> AND, MAXIMUM -> OR,
  IDIV -> ``a | ~b``, MOD/SHL/SHR -> ``a & ~b``, NEG/ABS/FLOOR/CEIL -> a, UMULHI -> 0, FMA ->
  ``a & b | c``).  Integer MAXIMUM_NAN/MINIMUM_NAN become MAXIMUM/MINIMUM.
* per target (``Legality``): float -> int CAST of NaN (0).

Combines the walk writes itself (reductions, scans) take their op from ``legal_op``.

A divisor or shift amount that is a constant already in range is left alone.  After this
pass an emitter may assume: integer divisors are never 0 (nor -1 when signed), shift
amounts lie in [0, bits), int1 operands only reach AND/OR/XOR/NOT, WHERE and the
comparisons, and integers never reach MAXIMUM_NAN/MINIMUM_NAN.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...core import attrs as A  # noqa: N812
from ...core.dtypes import DType, int1, uint8, uint16, uint32, uint64
from ...core.ir import Block, Instr, Kernel, Loc, TileType, Value
from ...core.ops import Op


@dataclass(frozen=True)
class Legality:
    """What a target does natively beyond the raw ops (each False makes legalize expand it)."""

    float_to_int_nan_is_zero: bool = True  # its saturating float->int conversion gives 0 for NaN


INT1_FORM: dict[Op, Op] = {
    Op.ADD: Op.XOR, Op.SUB: Op.XOR, Op.MUL: Op.AND, Op.MAXIMUM: Op.OR, Op.MINIMUM: Op.AND,
    Op.MAXIMUM_NAN: Op.OR, Op.MINIMUM_NAN: Op.AND,
}
"""The one-bit op each int1 arithmetic op is (reductions of int1 combine with these too)."""

_INT_MINMAX = {Op.MAXIMUM_NAN: Op.MAXIMUM, Op.MINIMUM_NAN: Op.MINIMUM}
_IDENTITY_ON_INT1 = frozenset({Op.NEG, Op.ABS, Op.FLOOR, Op.CEIL})


def legal_op(op: Op, dtype: object) -> Op:
    """The raw op that computes ``op`` on operands of ``dtype`` (int1: its one-bit form;
    integers: MAXIMUM/MINIMUM for the NaN-propagating forms)."""
    if not isinstance(dtype, DType) or dtype.is_floating:
        return op
    return INT1_FORM.get(op, op) if dtype.is_bool else _INT_MINMAX.get(op, op)


class _Out:
    """The instructions replacing one instruction, built in order."""

    def __init__(self, instr: Instr) -> None:
        self.instr = instr
        self.instrs: list[Instr] = []
        self.shape = instr.results[0].type.shape

    @property
    def loc(self) -> Loc:
        return self.instr.loc

    def emit(self, op: Op, *operands: Value, dtype: DType | None = None, attrs: object = None,
             shape: tuple[int, ...] | None = None) -> Value:
        rtype = TileType(dtype if dtype is not None else operands[0].type.dtype,
                         self.shape if shape is None else shape)
        result = Value(rtype)
        self.instrs.append(Instr(op, tuple(operands), (result,), attrs, (), self.loc))
        return result

    def const(self, value: bool | int | float, dtype: DType, shape: tuple[int, ...] | None = None) -> Value:
        shape = self.shape if shape is None else shape
        return self.emit(Op.CONST, dtype=dtype, attrs=A.Const(value, dtype, shape), shape=shape)

    def broadcast(self, v: Value) -> Value:
        """``v`` at the result's shape (no-op when it has it)."""
        if v.type.shape == self.shape:
            return v
        return self.emit(Op.BROADCAST, v, attrs=A.Shape(self.shape))

    def final(self, op: Op, *operands: Value, attrs: object = None) -> list[Instr]:
        """The last instruction: it defines the original result, so every use stays valid."""
        self.instrs.append(Instr(op, tuple(operands), self.instr.results, attrs, (), self.loc))
        return self.instrs


class _Legalizer:
    def __init__(self, kernel: Kernel, legality: Legality) -> None:
        self.legality = legality
        self.stand_ins = kernel.stand_ins
        self.broadcasts: dict[Value, Value] = {  # tile -> the one-element value it repeats
            i.results[0]: i.operands[0] for i in kernel.walk()
            if i.op is Op.BROADCAST and i.operands[0].type.numel == 1}
        self.consts: dict[Value, A.Const] = {
            i.results[0]: i.attrs for i in kernel.walk() if i.op is Op.CONST}
        self.aliases: dict[Value, Value] = {}  # results that became one of their operands

    def block(self, block: Block) -> None:
        out: list[Instr] = []
        for instr in block.instrs:
            if self.aliases and any(v in self.aliases for v in instr.operands):
                instr = Instr(instr.op, tuple(self.aliases.get(v, v) for v in instr.operands),
                              instr.results, instr.attrs, instr.regions, instr.loc)
            for region in instr.regions:
                self.block(region)
            out.extend(self.instr(instr))
        block.instrs = out
        block.yields = [self.aliases.get(v, v) for v in block.yields]

    def instr(self, instr: Instr) -> list[Instr]:
        if not instr.operands or instr.regions or len(instr.results) != 1:
            return [instr]
        dt = instr.operands[0].type.dtype
        if not isinstance(dt, DType):
            return [instr]
        if instr.op is Op.CAST and dt.is_floating and not self.legality.float_to_int_nan_is_zero:
            if instr.attrs.dtype.is_int and not instr.attrs.dtype.is_bool:
                return self._nan_to_int(instr)
        if dt.is_bool:
            return self._int1(instr)
        if dt.is_floating:
            return [instr]
        if instr.op in _INT_MINMAX:
            return [Instr(_INT_MINMAX[instr.op], instr.operands, instr.results, None, (), instr.loc)]
        if instr.op in (Op.IDIV, Op.MOD) and not self._safe_divisor(instr.operands[1], dt):
            return self._divide(instr, dt)
        if instr.op in (Op.SHL, Op.SHR) and not self._safe_shift(instr.operands[1], dt):
            return self._shift(instr, dt)
        return [instr]

    # ------------------------------------------------------------ integers
    def _constant(self, v: Value) -> int | None:
        c = self.consts.get(v)
        return None if c is None else int(c.value)

    def _safe_divisor(self, b: Value, dt: DType) -> bool:
        value = self._constant(b)
        return value is not None and value != 0 and (value != -1 or not dt.is_signed)

    def _safe_shift(self, b: Value, dt: DType) -> bool:
        value = self._constant(b)
        return value is not None and 0 <= value < dt.bits

    def _divide(self, instr: Instr, dt: DType) -> list[Instr]:
        a, b = instr.operands
        o = _Out(instr)
        # A divisor that repeats one value (``x % N``) is guarded once, before it is broadcast.
        g = self.broadcasts.get(b, b)
        at = g.type.shape
        zero = o.emit(Op.EQ, g, o.const(0, dt, at), dtype=int1, shape=at)
        one = o.const(1, dt, at)
        safe = self._stands_for(g, o.emit(Op.WHERE, zero, one, g, dtype=dt, shape=at))
        by_minus_one: Value | None = None
        if dt.is_signed:
            by_minus_one = o.emit(Op.EQ, g, o.const(-1, dt, at), dtype=int1, shape=at)
            safe = self._stands_for(g, o.emit(Op.WHERE, by_minus_one, one, safe, dtype=dt, shape=at))
            by_minus_one = o.broadcast(by_minus_one)
        zero, safe = o.broadcast(zero), self._stands_for(b, o.broadcast(safe))
        r = raw = o.emit(instr.op, a, safe)  # MOD by the 1 standing in for -1 gives the defined 0
        self._stands_for(raw, instr.result)
        if instr.op is Op.IDIV:
            if by_minus_one is not None:
                r = self._stands_for(raw, o.emit(Op.WHERE, by_minus_one, o.emit(Op.NEG, a), r, dtype=dt))
            return o.final(Op.WHERE, zero, o.const(-1 if dt.is_signed else int(dt.max()), dt), r)
        return o.final(Op.WHERE, zero, a, r)

    def _stands_for(self, ordinary: Value, guarded: Value) -> Value:
        """``guarded`` equals ``ordinary`` on ordinary inputs: analyses (axisinfo) read its facts there."""
        self.stand_ins[guarded] = self.stand_ins.get(ordinary, ordinary)
        return guarded

    def _shift(self, instr: Instr, dt: DType) -> list[Instr]:
        a, b = instr.operands
        o = _Out(instr)
        unsigned = {8: uint8, 16: uint16, 32: uint32, 64: uint64}[dt.bits]
        amount = b if not dt.is_signed else o.emit(Op.CAST, b, dtype=unsigned, attrs=A.Cast(unsigned))
        in_range = b
        if dt.bits == 64:
            # NVPTX folds this guard into its own shift, which clamps amounts >= 64 but reads only
            # the amount's low 32 bits (2**32 would shift by 0): clamp to 64 first, which keeps it exact.
            amount = o.emit(Op.MINIMUM, amount, o.const(dt.bits, unsigned))
            in_range = amount if not dt.is_signed else o.emit(Op.CAST, amount, dtype=dt, attrs=A.Cast(dt))
        ok = o.emit(Op.LT, amount, o.const(dt.bits, unsigned), dtype=int1)
        zero = o.const(0, dt)
        r = o.emit(instr.op, a, self._stands_for(b, o.emit(Op.WHERE, ok, in_range, zero, dtype=dt)))
        self._stands_for(r, instr.result)
        fill = zero
        if instr.op is Op.SHR and dt.is_signed:
            fill = o.emit(Op.SHR, a, o.const(dt.bits - 1, dt))
        return o.final(Op.WHERE, ok, r, fill)

    # ------------------------------------------------------------ int1
    def _int1(self, instr: Instr) -> list[Instr]:
        op, xs = instr.op, instr.operands
        if op in INT1_FORM:
            return [Instr(INT1_FORM[op], xs, instr.results, None, (), instr.loc)]
        if op in _IDENTITY_ON_INT1:
            self.aliases[instr.results[0]] = xs[0]
            return []
        o = _Out(instr)
        if op is Op.IDIV:  # a / 1 = a, a / 0 = all ones
            return o.final(Op.OR, xs[0], o.emit(Op.NOT, xs[1]))
        if op in (Op.MOD, Op.SHL, Op.SHR):  # by 1: 0; by 0: a
            return o.final(Op.AND, xs[0], o.emit(Op.NOT, xs[1]))
        if op is Op.UMULHI:
            return o.final(Op.CONST, attrs=A.Const(False, xs[0].type.element, o.shape))
        if op is Op.FMA:
            return o.final(Op.OR, o.emit(Op.AND, xs[0], xs[1]), xs[2])
        return [instr]

    # ------------------------------------------------------------ floats, per target
    def _nan_to_int(self, instr: Instr) -> list[Instr]:
        (a,) = instr.operands
        o = _Out(instr)
        dst = instr.attrs.dtype
        converted = o.emit(Op.CAST, a, dtype=dst, attrs=instr.attrs)
        nan = o.emit(Op.ISNAN, a, dtype=int1)
        return o.final(Op.WHERE, nan, o.const(0, dst), converted)


def legalize(kernel: Kernel, legality: Legality | None = None) -> Kernel:
    """Rewrite ``kernel`` (in place) so that every op's inputs are in its raw range."""
    _Legalizer(kernel, legality or Legality()).block(kernel.body)
    return kernel
