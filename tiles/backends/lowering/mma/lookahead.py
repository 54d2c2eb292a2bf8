"""Carried state a software-pipelined loop's copies read, kept ``S - 1`` iterations ahead.

The pipeliner (``pipeline.py``) starts the copies of iteration ``i + S - 1`` in iteration
``i``; it evaluates their pointers and masks from the induction variable.  In Triton's flattened
persistent matmul (one loop over every (tile, k step) pair of a program) the pointers also read
values the loop carries: the k step ``ki`` (``tl.where(ki == k_tiles - 1, 0, ki + 1)``) and the
tile's coordinates, chosen under ``if ki == 0:``.  When the yields of those carried values are
computed from themselves, the induction variable and loop-invariant values by ops that move no
data between threads (branches of a run-time ``if`` included), the loop carries a second copy
of them, advanced by those ops one iteration ahead of each copy it starts: the prologue advances
it ``S - 1`` times from the initial values, each iteration once more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ....core.ir import Block, Instr, Value, walk_block
from ....core.ops import ATOMICS, SIDE_EFFECTS, Op
from ..emitter import Handle
from .base import TensorCoreLowering


@dataclass(frozen=True)
class Lookahead:
    positions: list[int]  # the carried values (index among the body's carried arguments) kept ahead
    update: list[Instr]   # the body's top-level instructions their yields need, in order


def inputs(instr: Instr) -> list[Value]:
    """The values ``instr`` reads: its operands and what its regions read from outside them."""
    if not instr.regions:
        return list(instr.operands)
    inside: set[Value] = set()
    read: list[Value] = list(instr.operands)
    for region in instr.regions:
        inside.update(region.args)
        for i in walk_block(region):
            inside.update(i.results)
            for r in i.regions:
                inside.update(r.args)
            read.extend(i.operands)
            for r in i.regions:
                read.extend(r.yields)
        read.extend(region.yields)
    return [v for v in read if v not in inside]


def find(body: Block, reads: set[Value], fragments: set[int],
         pure: Callable[[Instr], bool]) -> Lookahead | None:
    """The carried values the copies ``reads`` (closed under what their yields need) and the
    instructions that advance them, or None when one is a fragment or an advance is not ``pure``."""
    index = {a: k for k, a in enumerate(body.args[1:])}
    producers = {r: i for i in body.instrs for r in i.results}
    kept: set[int] = set()
    needed: set[Instr] = set()
    todo = list(reads)
    while todo:
        v = todo.pop()
        if v in index:
            k = index[v]
            if k in fragments:
                return None
            if k not in kept:
                kept.add(k)
                todo.append(body.yields[k])
            continue
        p = producers.get(v)
        if p is None or p in needed:
            continue  # the induction variable, or a value from before the loop
        if not pure(p):
            return None
        needed.add(p)
        todo.extend(inputs(p))
    return Lookahead(sorted(kept), [i for i in body.instrs if i in needed])


def bind(lw: TensorCoreLowering, body: Block, ahead: Lookahead, state: Sequence[Sequence[Handle]]) -> None:
    for k, hs in zip(ahead.positions, state):
        lw.env[body.args[1 + k]] = list(hs)


def advance(lw: TensorCoreLowering, body: Block, ahead: Lookahead, state: Sequence[Sequence[Handle]],
            iv: Handle) -> list[list[Handle]]:
    """The kept values one iteration after ``state`` (the iteration at induction value ``iv``)."""
    bind(lw, body, ahead, state)
    lw.env[body.args[0]] = [iv]
    for ins in ahead.update:
        for v, hs in zip(ins.results, lw.lower_instr(ins)):
            if hs is not None:
                lw.env[v] = hs
    return [list(lw.env[body.yields[k]]) for k in ahead.positions]


def _root(v: Value, defs: dict[Value, Instr]) -> Value:
    """The pointer ``v`` is offset from (through ``addptr``, broadcasts, reshapes and hints)."""
    d = defs.get(v)
    while d is not None and d.op in (Op.ADDPTR, Op.BROADCAST, Op.RESHAPE, Op.HINT):
        v = d.operands[0]
        d = defs.get(v)
    return v


def writes_apart(instr: Instr, loads: Sequence[Instr], params: set[Value], defs: dict[Value, Instr]) -> bool:
    """Whether the only writes under ``instr`` (a run-time IF in a pipelined body) are stores
    through kernel arguments other than those the pipelined ``loads`` read (copies started
    iterations early must not miss a store of the body: as Triton, distinct pointer arguments
    are taken not to overlap)."""
    read = {_root(ld.operands[0], defs) for ld in loads}
    for i in walk_block(Block(args=[], instrs=[instr], yields=[])):
        if i.op in SIDE_EFFECTS - {Op.STORE} or i.op in ATOMICS:
            return False
        if i.op is Op.STORE:
            at = _root(i.operands[0], defs)
            if at not in params or at in read:
                return False
    return True
