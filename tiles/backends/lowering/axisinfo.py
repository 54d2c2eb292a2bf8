"""What may be vectorized or computed once: contiguity, divisibility and constancy along each axis.

For every value, along an axis (a scalar counts as one axis of one element):

* ``contig``: it is made of runs of ``contig`` consecutive integers (+1 each),
  each run starting at an index that is a multiple of ``contig``;
* ``div``: the first value of every such run (every value, if contig == 1) is a
  multiple of ``div`` -- in bytes for pointers;
* ``const``: it is made of runs of ``const`` equal values, aligned likewise.

An ``AxisInfo``'s own fields are the facts along the last axis; ``lead`` holds the
facts along the axes before it (empty: nothing known there).  A load/store of ``w``
elements per chunk may become one vector access when the pointer is
``w``-contiguous and ``w * itemsize``-divisible and the mask is ``w``-constant; an
elementwise op whose result is constant over boxes of ``const`` elements along every
axis is computed once per box a thread holds (``slot_representatives``).  Facts start
from the launch specialization (``divisibility == 16``), ``tl.arange``, constants and
``tl.multiple_of`` / ``tl.max_contiguous``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ...core import attrs as A  # noqa: N812
from ...core.dtypes import DType, PointerType
from ...core.ir import Block, Instr, Kernel, Value
from ...core.ops import COMPARISON, ELEMENTWISE, Op
from .layout import Layout

_BIG = 1 << 30


@dataclass(frozen=True)
class AxisInfo:
    contig: int = 1
    div: int = 1
    const: int = 1
    ones: bool = False  # every element is the integer 1 (a unit stride)
    lead: tuple[AxisInfo, ...] = ()  # facts along axes 0 .. ndim-2 (their own ``lead`` empty); () unknown

    def along(self, ndim: int) -> list[AxisInfo]:
        """The facts along each of ``ndim`` axes (the last is this one's own)."""
        last = replace(self, lead=())
        if ndim <= 1:
            return [last]
        lead = list(self.lead) if len(self.lead) == ndim - 1 else [AxisInfo(ones=self.ones)] * (ndim - 1)
        return [*lead, last]

    def consts(self, ndim: int) -> tuple[int, ...]:
        return tuple(a.const for a in self.along(ndim))

    def every_element_div(self, ndim: int) -> int:
        """A power of two every element is a multiple of (along an axis with contig 1, every value is)."""
        return max([a.div for a in self.along(ndim) if a.contig == 1], default=1)


def _of_axes(axes: list[AxisInfo]) -> AxisInfo:
    last = axes[-1]
    ones = all(a.ones for a in axes)
    return AxisInfo(last.contig, last.div, last.const, ones,
                     tuple(replace(a, lead=(), ones=ones) for a in axes[:-1]))


def _pow2_factor(v: int) -> int:
    if v == 0:
        return _BIG
    return min(v & -v, _BIG)


def _shape(v: Value) -> tuple[int, ...]:
    return tuple(v.type.shape) or (1,)


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


def _meet1(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    contig = math.gcd(a.contig, b.contig)

    def div(x: AxisInfo) -> int:
        return x.div if x.contig == contig else math.gcd(x.div, contig)
    return AxisInfo(contig, math.gcd(div(a), div(b)), math.gcd(a.const, b.const), a.ones and b.ones)


def meet(a: AxisInfo, b: AxisInfo) -> AxisInfo:
    """What holds of a value that is either ``a`` or ``b`` (a run shortened to a divisor of its
    length starts at its old start plus multiples of the new length), along every axis."""
    ndim = max(len(a.lead), len(b.lead)) + 1
    return _of_axes([_meet1(x, y) for x, y in zip(a.along(ndim), b.along(ndim))])


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
            info[instr.result] = info[ordinary] if ordinary in info else axis_rule(instr, info)


def _operand_axes(fact: AxisInfo, v: Value, shape: tuple[int, ...]) -> list[AxisInfo]:
    """An elementwise operand's facts along the result's axes (a scalar is equal everywhere)."""
    if not v.type.shape:
        return [AxisInfo(1, fact.div, n, fact.ones) for n in shape]
    if len(v.type.shape) != len(shape):
        return [AxisInfo()] * len(shape)
    return fact.along(len(shape))


_INDEX_OPS = frozenset({Op.ADD, Op.SUB, Op.ADDPTR, Op.MUL, Op.MOD, *COMPARISON, Op.WHERE, Op.AND, Op.OR,
                        Op.XOR, Op.NOT})
_PURE = ELEMENTWISE - {Op.HINT}  # equal operands give equal results


def axis_rule(instr: Instr, info: dict[Value, AxisInfo]) -> AxisInfo:
    op, r = instr.op, instr.results[0]
    ops = [info.get(v, AxisInfo()) for v in instr.operands]
    shape = _shape(r)
    if op is Op.CONST:
        v = instr.attrs.value
        if isinstance(v, int) and not isinstance(v, bool) and v == 1:
            return _of_axes([AxisInfo(1, 1, n, ones=True) for n in shape])
        div = _pow2_factor(int(v)) if isinstance(v, int) else 1
        return _of_axes([AxisInfo(1, div, n) for n in shape])
    if op is Op.ARANGE:
        return AxisInfo(shape[-1], _pow2_factor(instr.attrs.start), 1)
    if op in (Op.PROGRAM_ID, Op.NUM_PROGRAMS):
        return AxisInfo()
    if op is Op.BROADCAST:
        return _broadcast(instr, ops[0], shape)
    if op is Op.RESHAPE:
        return _reshape(instr.operands[0], ops[0], shape)
    if op is Op.PERMUTE:
        src = ops[0].along(len(shape))
        return _of_axes([src[d] for d in instr.attrs.order]) if len(instr.attrs.order) == len(shape) else AxisInfo()
    if op is Op.HINT:
        return _hint(instr.attrs, ops[0], len(shape))
    if op in _INDEX_OPS or (op is Op.CAST and instr.attrs.dtype.is_int):
        per = [_operand_axes(o, v, shape) for o, v in zip(ops, instr.operands)]
        return _of_axes([_index_rule(instr, [p[d] for p in per]) for d in range(len(shape))])
    if op in _PURE:  # only constancy survives
        per = [_operand_axes(o, v, shape) for o, v in zip(ops, instr.operands)]
        return _of_axes([AxisInfo(1, 1, math.gcd(*(p[d].const for p in per))) for d in range(len(shape))])
    return AxisInfo()


def _broadcast(instr: Instr, src: AxisInfo, shape: tuple[int, ...]) -> AxisInfo:
    """Along a size-1 axis repeated ``n`` times: runs of ``n`` equal values, each a multiple of what
    every source element is a multiple of; along the other axes, the source's facts."""
    sshape = tuple(instr.operands[0].type.shape)
    if len(sshape) > len(shape):
        return AxisInfo()
    src_axes = src.along(len(sshape)) if sshape else []
    pad = len(shape) - len(sshape)
    every = src.every_element_div(max(1, len(sshape)))
    axes = []
    for d, n in enumerate(shape):
        if d < pad or sshape[d - pad] == 1:
            axes.append(AxisInfo(1, every, n, src.ones))
        else:
            axes.append(src_axes[d - pad])
    return _of_axes(axes)


def _reshape(v: Value, src: AxisInfo, shape: tuple[int, ...]) -> AxisInfo:
    """Size-1 axes added or dropped keep the other axes' facts; another reshape keeps the last
    axis's facts where its length does not change."""
    sshape = tuple(v.type.shape)
    if [n for n in sshape if n != 1] == [n for n in shape if n != 1]:
        src_axes = [a for a, n in zip(src.along(max(1, len(sshape))), sshape or (1,)) if n != 1]
        every = src.every_element_div(max(1, len(sshape)))
        it = iter(src_axes)
        return _of_axes([AxisInfo(1, every, 1, src.ones) if n == 1 else next(it) for n in shape])
    if (sshape[-1] if sshape else 1) == shape[-1]:
        return replace(src, lead=())
    return AxisInfo()


def _hint(hint: A.Hint, cur: AxisInfo, ndim: int) -> AxisInfo:
    values = list(hint.values) if len(hint.values) == ndim else [1] * (ndim - 1) + list(hint.values[-1:] or [1])
    axes = []
    for a, h in zip(cur.along(ndim), values):
        if hint.kind == "multiple_of":
            a = replace(a, div=max(a.div, h))
        elif hint.kind == "max_contiguous":
            a = replace(a, contig=max(a.contig, h))
        axes.append(a)
    return _of_axes(axes)


def _div_at(x: AxisInfo, run: int) -> int:
    """What ``x``'s values at the starts of runs of ``run`` elements are multiples of (``x.div``
    holds only at the starts of ``x``'s own runs: inside a run of 0, 1, 2, 3 it does not)."""
    if x.contig == 1 or run % x.contig == 0:
        return x.div
    return math.gcd(x.div, run) if x.contig % run == 0 else 1


def _index_rule(instr: Instr, ops: list[AxisInfo]) -> AxisInfo:
    """The facts along one axis of an integer, pointer or boolean elementwise op's result."""
    op = instr.op
    if op in (Op.ADD, Op.SUB, Op.ADDPTR):
        a, b = ops
        scale = 1
        if op is Op.ADDPTR:
            scale = instr.operands[0].type.dtype.element.itemsize  # type: ignore[union-attr]
        contig = math.gcd(a.contig, b.const)
        if op is not Op.SUB:
            contig = max(contig, math.gcd(b.contig, a.const))
        div = math.gcd(_div_at(a, contig), min(_div_at(b, contig) * scale, _BIG))
        return AxisInfo(contig, div, math.gcd(a.const, b.const))
    if op is Op.MUL:
        a, b = ops
        for x, y in ((a, b), (b, a)):
            if y.ones:  # a stride of one keeps runs
                return AxisInfo(x.contig, x.div, math.gcd(x.const, y.const), x.ones)
        return AxisInfo(1, min(_div_at(a, 1) * _div_at(b, 1), _BIG), math.gcd(a.const, b.const))
    if op is Op.MOD:
        # Runs of L = gcd(contig, div(x), div(m)) consecutive values start at multiples of L, so
        # a wrap (a multiple of m) can only fall on a run's first element: x % m keeps them.  As
        # in Triton's analysis, this assumes x >= 0 (C's remainder of a negative x wraps upward).
        a, b = ops
        div = math.gcd(a.div, _div_at(b, 1)) if a.contig > 1 else math.gcd(_div_at(a, 1), _div_at(b, 1))
        run = math.gcd(math.gcd(a.contig, div), b.const)
        if a.contig > 1:
            return AxisInfo(run, run, math.gcd(a.const, b.const))
        return AxisInfo(1, div, math.gcd(a.const, b.const))
    if op in COMPARISON:
        # A run of consecutive values starting at a multiple of L lies wholly on one side of a
        # bound that is a multiple of L: `x < c` and `x >= c` (`c > x`, `c <= x`) are constant on
        # it; `x <= c`, `x > c`, `==` and `!=` are not (`arange(0, 16) == 0` is True once).
        a, b = ops
        const = math.gcd(a.const, b.const)
        if op in (Op.LT, Op.GE) and b.const >= a.contig > 1:
            const = max(const, math.gcd(a.contig, math.gcd(a.div, b.div)))
        if op in (Op.GT, Op.LE) and a.const >= b.contig > 1:
            const = max(const, math.gcd(b.contig, math.gcd(a.div, b.div)))
        return AxisInfo(1, 1, const)
    if op is Op.WHERE:  # on runs where the condition is constant, one side's runs
        c, a, b = ops
        either = _meet1(a, b)
        contig = math.gcd(either.contig, c.const)
        div = either.div if contig == either.contig else math.gcd(either.div, contig)
        return AxisInfo(contig, div, math.gcd(c.const, either.const))
    if op in (Op.AND, Op.OR, Op.XOR, Op.NOT):
        return AxisInfo(1, 1, math.gcd(*(o.const for o in ops)) if len(ops) > 1 else ops[0].const)
    return ops[0]  # an integer cast


@lru_cache(maxsize=256)
def slot_representatives(layout: Layout, consts: tuple[int, ...]) -> tuple[int, ...] | None:
    """For each slot of a thread, the first slot that holds, in every thread, an element of the
    same box of ``consts`` elements along each axis (so of the same value, for a value that is
    constant over such boxes); None when every slot is its own."""
    if not layout.shape or len(consts) != len(layout.shape) or all(c == 1 for c in consts):
        return None
    rounds, threads, vec = layout.rounds, layout.threads, layout.vec
    chunk = (np.arange(rounds)[:, None] * threads + np.arange(threads)[None, :]) % layout.nchunks
    flat = chunk[:, :, None] * vec + np.arange(vec)[None, None, :]  # [round, thread, k]
    box = np.zeros_like(flat)
    scale = 1
    rest = flat.copy()
    for n, c in zip(reversed(layout.shape), reversed(consts)):  # box numbers, mixed radix
        c = min(max(c, 1), n)
        box += (rest % n) // c * scale
        scale *= -(-n // c)
        rest //= n
    columns = box.transpose(0, 2, 1).reshape(rounds * vec, threads)  # slot j = round * vec + k
    first: dict[bytes, int] = {}
    reps = tuple(first.setdefault(col.tobytes(), j) for j, col in enumerate(columns))
    return None if reps == tuple(range(len(reps))) else reps


def vector_width(lay_vec: int, ptr: AxisInfo, itemsize: int, *uniform: AxisInfo | None) -> int:
    """Elements per vector access for a chunk of ``lay_vec`` (1: no vectorization)."""
    w = math.gcd(lay_vec, ptr.contig)
    while w > 1 and ptr.div % (w * itemsize):
        w //= 2
    for u in uniform:
        if u is not None:
            w = math.gcd(w, u.const)
    return w


def mask_and_other(instr: Instr) -> tuple[Value | None, Value | None]:
    """The mask and ``other`` operands of a LOAD or STORE (None where it has none)."""
    a = instr.attrs
    if instr.op is Op.LOAD:
        return (instr.operands[1] if a.masked else None), (instr.operands[2] if a.has_other else None)
    return (instr.operands[2] if a.masked else None), None


def access_width(info: dict[Value, AxisInfo], vector_ok: Callable[[DType, int], bool], instr: Instr,
                 lay: Layout) -> int:
    """Elements per access of ``instr`` (a LOAD or STORE) from chunks of ``lay``: > 1 when they
    vectorize (the pointer's facts, the mask's and ``other``'s, and what the target's vectors hold)."""
    if not lay.shape or lay.vec == 1:
        return 1
    ptr = instr.operands[0]
    elem = ptr.type.dtype.element  # type: ignore[union-attr]
    infos = [info.get(v) if v is not None else None for v in mask_and_other(instr)]
    w = vector_width(lay.vec, info.get(ptr) or AxisInfo(), elem.itemsize, *infos)
    while w > 1 and not vector_ok(elem, w):
        w //= 2
    return w
