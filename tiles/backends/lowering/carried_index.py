"""Loop-carried index tiles rebuilt from carried scalars (``Kernel -> Kernel``).

Triton's flattened persistent matmul (tutorial 09) assigns its row and column offsets under
``if ki == 0:`` (``rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)``) and so carries them
through its one loop as tiles.  A carried tile keeps its own blocked layout: every
``rows[:, None]`` that builds the loads' pointers is then a gather through local memory with two
barriers, each iteration, and the tensor-core pipeliner, which computes the addresses of later
iterations ahead of time, cannot see what the tile holds.

For a carried integer tile ``X`` whose yield is an IF result, one branch of which yields ``X``
itself while the other builds it from scalars and index ops (``tl.arange``, constants,
broadcasts, elementwise ops and hints: what ``mma/remat.py`` recomputes at any
coordinate), with an initial value ``X0`` that is such an expression too, the loop carries
instead the scalars the expression starts from (those the loop computes) and a flag, false on
entry and set where that branch runs; in the body ``X`` becomes
``where(flag, expression(carried scalars), X0)``, the same value as an index expression.
"""

from __future__ import annotations

import dataclasses

from ...core import attrs as A  # noqa: N812
from ...core import dtypes as D  # noqa: N812
from ...core.fold import replace_uses
from ...core.ir import Block, Instr, Kernel, TileType, Value, walk_block
from ...core.ops import BINARY_ARITH, COMPARISON, Op
from .induction import Emit, defined_in

_INDEX_OPS = BINARY_ARITH | COMPARISON | {Op.ADDPTR, Op.CAST, Op.NEG, Op.NOT, Op.WHERE, Op.ARANGE, Op.CONST,
                                          Op.BROADCAST, Op.RESHAPE, Op.HINT}
_BUDGET = 32  # instructions an expression may take


def _expression(v: Value, producers: dict[Value, Instr], inside: set[Value], chain: list[Instr],
                leaves: list[Value], budget: list[int]) -> bool:
    """Collect into ``chain`` (dependencies first) the instructions that compute ``v`` from
    scalars, and into ``leaves`` the scalars among them the loop computes; False when ``v``
    is not such an expression."""
    if v not in inside:
        return True
    if not v.type.shape:
        if not (v.type.dtype.is_int or v.type.dtype.is_bool):
            return False
        if v not in leaves:
            leaves.append(v)
        return True
    instr = producers.get(v)
    budget[0] -= 1
    if instr is None or instr.op not in _INDEX_OPS or instr.regions or budget[0] < 0:
        return False
    if instr in chain:
        return True
    if not all(_expression(o, producers, inside, chain, leaves, budget) for o in instr.operands):
        return False
    chain.append(instr)
    return True


def _outer_index(v: Value, defs: dict[Value, Instr], budget: list[int]) -> bool:
    """Whether ``v`` (defined before the loop) is an index expression of scalars."""
    budget[0] -= 1
    if not v.type.shape:
        return True
    instr = defs.get(v)
    if instr is None or instr.op not in _INDEX_OPS or budget[0] < 0:
        return False
    return all(_outer_index(o, defs, budget) for o in instr.operands)


@dataclasses.dataclass
class _Candidate:
    arg: Value
    init: Value
    branch_if: Instr
    position: int    # of the IF result the loop yields
    builds: int      # the IF region (0 or 1) that builds the tile
    chain: list[Instr]
    leaves: list[Value]


def _candidates(loop: Instr, defs: dict[Value, Instr]) -> list[_Candidate]:
    body = loop.regions[0]
    inside = defined_in(body)
    producers = {r: i for i in walk_block(body) for r in i.results}
    top = {r: i for i in body.instrs for r in i.results}
    out = []
    for arg, init, y in zip(body.args[1:], loop.operands[3:], body.yields):
        if not arg.type.shape or not arg.type.dtype.is_int or not _outer_index(init, defs, [_BUDGET]):
            continue
        f = top.get(y)
        if f is None or f.op is not Op.IF:
            continue
        p = f.results.index(y)
        ys = [region.yields[p] for region in f.regions]
        if ys.count(arg) != 1:
            continue
        builds = 1 - ys.index(arg)
        chain: list[Instr] = []
        leaves: list[Value] = []
        if not _expression(ys[builds], producers, inside, chain, leaves, [_BUDGET]):
            continue
        at = body.instrs.index(f)
        visible = {*body.args, *(r for i in body.instrs[:at] for r in i.results),
                   *(r for i in f.regions[builds].instrs for r in i.results)}
        if any(lf not in visible for lf in leaves):
            continue  # a scalar computed where the IF's branch cannot yield it from
        out.append(_Candidate(arg, init, f, p, builds, chain, leaves))
    return out


def _const(emit: Emit, value: bool | int, dtype: D.DType) -> Value:
    return emit(Op.CONST, [], TileType(dtype), A.Const(value, dtype, ()))


def _rebuild(emit: Emit, c: _Candidate, flag: Value, leaves: dict[Value, Value]) -> Value:
    """``where(flag, expression(leaves), X0)`` appended to ``emit``."""
    clone: dict[Value, Value] = dict(leaves)
    for instr in c.chain:
        res = Value(instr.result.type)
        emit.instrs.append(dataclasses.replace(
            instr, operands=tuple(clone.get(o, o) for o in instr.operands), results=(res,)))
        clone[instr.result] = res
    tile = c.branch_if.regions[c.builds].yields[c.position]
    shape = c.arg.type.shape
    mask = emit(Op.BROADCAST, [flag], TileType(D.int1, shape), A.Shape(shape))
    return emit(Op.WHERE, [mask, clone.get(tile, tile), c.init], c.arg.type)


def _rewrite(loop: Instr, defs: dict[Value, Instr]) -> tuple[list[Instr], Instr]:
    """Constants to put before ``loop`` and the loop rewritten (unchanged without candidates)."""
    found = _candidates(loop, defs)
    if not found:
        return [], loop
    body = loop.regions[0]
    before = Emit(loop.loc)
    false, true = _const(before, False, D.int1), _const(before, True, D.int1)
    new_inits: list[Value] = []
    new_args: list[Value] = []
    new_yields: list[Value] = []
    mapping: dict[Value, Value] = {}
    top = Emit(loop.loc)  # the carried tiles from the carried scalars, first in the body
    after: dict[int, Emit] = {}  # IF (by id) -> the tiles it yields, rebuilt right after it
    extra: dict[int, list[tuple[Value, Value, Value]]] = {}  # IF (by id) -> (built, kept, result)
    for c in found:
        key = id(c.branch_if)
        flag = Value(TileType(D.int1))
        carried = {lf: Value(lf.type) for lf in c.leaves}
        new_inits += [false, *(_const(before, False if lf.type.element.is_bool else 0, lf.type.element)
                                for lf in c.leaves)]
        new_args += [flag, *carried.values()]
        outs = [Value(TileType(D.int1)), *(Value(lf.type) for lf in c.leaves)]
        extra.setdefault(key, []).extend(zip([true, *c.leaves], [flag, *carried.values()], outs))
        new_yields += outs
        mapping[c.arg] = _rebuild(top, c, flag, carried)
        result = c.branch_if.results[c.position]
        mapping[result] = _rebuild(after.setdefault(key, Emit(c.branch_if.loc)), c, outs[0],
                                   dict(zip(c.leaves, outs[1:])))
    at = {id(c.branch_if): body.instrs.index(c.branch_if) for c in found}
    builds = {id(c.branch_if): c.builds for c in found}
    replace_uses(body, mapping)  # keeps each instruction's position
    for key, rows in extra.items():
        instr = body.instrs[at[key]]
        for r, region in enumerate(instr.regions):
            region.yields = [*region.yields, *(b if r == builds[key] else k for b, k, _ in rows)]
        body.instrs[at[key]] = dataclasses.replace(instr, results=(*instr.results, *(o for _, _, o in rows)))
    for key in sorted(after, key=lambda k: -at[k]):
        n = at[key] + 1
        body.instrs[n:n] = after[key].instrs
    body.instrs = [*top.instrs, *body.instrs]
    body.args = [*body.args, *new_args]
    body.yields = [*body.yields, *new_yields]
    results = tuple(Value(v.type) for v in new_args)
    return before.instrs, dataclasses.replace(loop, operands=(*loop.operands, *new_inits),
                                              results=(*loop.results, *results))


def carry_index_scalars(kernel: Kernel) -> Kernel:
    defs = {r: i for i in kernel.walk() for r in i.results}

    def visit(block: Block) -> None:
        n = 0
        while n < len(block.instrs):
            instr = block.instrs[n]
            for region in instr.regions:
                visit(region)
            if instr.op is Op.FOR:
                consts, block.instrs[n] = _rewrite(instr, defs)
                block.instrs[n:n] = consts
                n += len(consts)
            n += 1

    visit(kernel.body)
    return kernel
