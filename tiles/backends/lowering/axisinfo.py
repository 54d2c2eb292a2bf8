"""What may be vectorized: contiguity, divisibility and constancy along the last axis.

For every value, along its last axis (a scalar counts as one element):

* ``contig``: it is made of runs of ``contig`` consecutive integers (+1 each),
  each run starting at an index that is a multiple of ``contig``;
* ``div``: the first value of every such run (every value, if contig == 1) is a
  multiple of ``div`` -- in bytes for pointers;
* ``const``: it is made of runs of ``const`` equal values, aligned likewise.

A load/store of ``w`` elements per chunk may become one vector access when the
pointer is ``w``-contiguous and ``w * itemsize``-divisible and the mask is
``w``-constant.  Facts start from the launch specialization (``divisibility ==
16``), ``tl.arange`` and ``tl.multiple_of`` / ``tl.max_contiguous``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...core import attrs as A  # noqa: N812
from ...core.dtypes import PointerType
from ...core.ir import Block, Instr, Kernel, Value
from ...core.ops import COMPARISON, Op

_BIG = 1 << 30


@dataclass(frozen=True)
class AxisInfo:
    contig: int = 1
    div: int = 1
    const: int = 1
    ones: bool = False  # every element is the integer 1 (a unit stride)


def _pow2_factor(v: int) -> int:
    if v == 0:
        return _BIG
    return min(v & -v, _BIG)


def _last(v: Value) -> int:
    return v.type.shape[-1] if v.type.shape else 1


def analyze(kernel: Kernel) -> dict[Value, AxisInfo]:
    info: dict[Value, AxisInfo] = {}
    for p in kernel.params:
        dt = p.value.type.dtype
        base = dt.element.itemsize if isinstance(dt, PointerType) else 1
        info[p.value] = AxisInfo(1, max(base, p.divisibility), 1)
    _block(kernel.body, info, kernel.stand_ins)
    return info


def meet(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """What holds of a value that is either ``a`` or ``b`` (a run shortened to a divisor of its
    length starts at its old start plus multiples of the new length)."""
    contig = math.gcd(a.contig, b.contig)

    def div(x: AxisInfo) -> int:
        return x.div if x.contig == contig else math.gcd(x.div, contig)
    return AxisInfo(contig, math.gcd(div(a), div(b)), math.gcd(a.const, b.const), a.ones and b.ones)


_FIXPOINT_ROUNDS = 4


def _for(instr: Instr, info: dict[Value, AxisInfo], stand_ins: dict[Value, Value]) -> None:
    """A FOR's body with each carried value's facts those of its initial value met with those of
    what the body yields for it, to a fixpoint (nothing assumed when none is reached)."""
    body = instr.regions[0]
    lb, step = (info.get(v, AxisInfo()) for v in (instr.operands[0], instr.operands[2]))
    info[body.args[0]] = AxisInfo(1, math.gcd(lb.div, step.div), 1)
    inits = [info.get(v, AxisInfo()) for v in instr.operands[3:]]
    facts = list(inits)
    for _ in range(_FIXPOINT_ROUNDS):
        info.update(zip(body.args[1:], facts))
        _block(body, info, stand_ins)
        new = [meet(f, info.get(y, AxisInfo())) for f, y in zip(facts, body.yields)]
        if new == facts:
            break
        facts = new
    else:
        info.update((a, AxisInfo()) for a in body.args[1:])
        _block(body, info, stand_ins)
        facts = [AxisInfo()] * len(facts)
    info.update(zip(instr.results, facts))


def _block(block: Block, info: dict[Value, AxisInfo], stand_ins: dict[Value, Value]) -> None:
    for instr in block.instrs:
        if instr.op is Op.FOR:
            _for(instr, info, stand_ins)
            continue
        for region in instr.regions:
            _block(region, info, stand_ins)
        if instr.op is Op.IF:  # either branch's yield
            then, otherwise = instr.regions
            for r, a, b in zip(instr.results, then.yields, otherwise.yields):
                info[r] = meet(info.get(a, AxisInfo()), info.get(b, AxisInfo()))
        elif len(instr.results) == 1:
            ordinary = stand_ins.get(instr.result)  # a guard legalize.py built: as Triton, assume ordinary inputs
            info[instr.result] = info[ordinary] if ordinary in info else _rule(instr, info)


def _rule(instr: Instr, info: dict[Value, AxisInfo]) -> AxisInfo:
    op, r = instr.op, instr.results[0]
    ops = [info.get(v, AxisInfo()) for v in instr.operands]
    n = _last(r)
    if op is Op.CONST:
        v = instr.attrs.value
        if isinstance(v, int) and not isinstance(v, bool) and v == 1:
            return AxisInfo(1, 1, n, ones=True)
        return AxisInfo(1, _pow2_factor(int(v)) if isinstance(v, int) else 1, n)
    if op is Op.ARANGE:
        return AxisInfo(n, _pow2_factor(instr.attrs.start), 1)
    if op in (Op.PROGRAM_ID, Op.NUM_PROGRAMS):
        return AxisInfo()
    if op in (Op.ADD, Op.SUB, Op.ADDPTR):
        a, b = ops
        scale = 1
        if op is Op.ADDPTR:
            scale = instr.operands[0].type.dtype.element.itemsize  # type: ignore[union-attr]
        contig = math.gcd(a.contig, b.const)
        if op is not Op.SUB:
            contig = max(contig, math.gcd(b.contig, a.const))
        return AxisInfo(contig, math.gcd(a.div, min(b.div * scale, _BIG)), math.gcd(a.const, b.const))
    if op is Op.MUL:
        a, b = ops
        for x, y in ((a, b), (b, a)):
            if y.ones:  # a stride of one keeps runs
                return AxisInfo(x.contig, x.div, math.gcd(x.const, y.const))
        return AxisInfo(1, min(a.div * b.div, _BIG), math.gcd(a.const, b.const))
    if op is Op.MOD:
        # Runs of L = gcd(contig, div(x), div(m)) consecutive values start at multiples of L, so
        # a wrap (a multiple of m) can only fall on a run's first element: x % m keeps them.  As
        # in Triton's analysis, this assumes x >= 0 (C's remainder of a negative x wraps upward).
        a, b = ops
        div = math.gcd(a.div, b.div)
        run = math.gcd(math.gcd(a.contig, div), b.const)
        if a.contig > 1:
            return AxisInfo(run, run, math.gcd(a.const, b.const))
        return AxisInfo(1, div, math.gcd(a.const, b.const))
    if op in COMPARISON:
        a, b = ops
        const = math.gcd(a.const, b.const)
        if b.const >= a.contig > 1:
            const = max(const, math.gcd(a.contig, math.gcd(a.div, b.div)))
        if a.const >= b.contig > 1:
            const = max(const, math.gcd(b.contig, math.gcd(a.div, b.div)))
        return AxisInfo(1, 1, const)
    if op is Op.WHERE:  # on runs where the condition is constant, one side's runs
        c, a, b = ops
        either = meet(a, b)
        contig = math.gcd(either.contig, c.const)
        div = either.div if contig == either.contig else math.gcd(either.div, contig)
        return AxisInfo(contig, div, math.gcd(c.const, either.const))
    if op in (Op.AND, Op.OR, Op.XOR, Op.NOT):
        return AxisInfo(1, 1, math.gcd(*(o.const for o in ops)) if len(ops) > 1 else ops[0].const)
    if op is Op.CAST and instr.attrs.dtype.is_int:
        return ops[0]
    if op is Op.BROADCAST:
        src = instr.operands[0]
        if _last(src) == 1:
            return AxisInfo(1, ops[0].div, n, ops[0].ones)
        return ops[0]
    if op is Op.RESHAPE:
        return ops[0] if _last(instr.operands[0]) == n else AxisInfo()
    if op is Op.HINT:
        hint: A.Hint = instr.attrs
        cur = ops[0]
        last = hint.values[-1] if hint.values else 1
        if hint.kind == "multiple_of":
            return AxisInfo(cur.contig, max(cur.div, last), cur.const)
        if hint.kind == "max_contiguous":
            return AxisInfo(max(cur.contig, last), cur.div, cur.const)
        return cur
    return AxisInfo()


def vector_width(lay_vec: int, ptr: AxisInfo, itemsize: int, *uniform: AxisInfo | None) -> int:
    """Elements per vector access for a chunk of ``lay_vec`` (1: no vectorization)."""
    w = math.gcd(lay_vec, ptr.contig)
    while w > 1 and ptr.div % (w * itemsize):
        w //= 2
    for u in uniform:
        if u is not None:
            w = math.gcd(w, u.const)
    return w
