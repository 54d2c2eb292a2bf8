"""Loop-carried pointers and offsets advanced by a loop-invariant step become closed forms of the
induction variable (``Kernel -> Kernel``).

Triton's tutorials advance pointer tiles inside the K loop (``a_ptrs += BLOCK_K * stride_ak``).
Carried that way, the pointer of iteration ``i`` depends on the previous iteration, so the
tensor-core pipeliner cannot compute the pointers of a later iteration ahead of time.  For a
carried value ``v`` whose yield is ``v + inc`` (``addptr`` or integer ``add``) with ``inc``
loop-invariant, every use of ``v`` in the body is rewritten to ``init + ((iv - lb) // step) * inc``,
which is the same value (integer arithmetic wraps identically either way; a pointer's offset is
taken in int64, as each ``addptr`` step sign-extends its own); the carried copy is dropped when
nothing after the loop reads it.  Values carried unchanged (what a block
pointer's base, shape and strides become) are replaced by their initial value the same way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ...core import attrs as A
from ...core import dtypes as D  # noqa: N812
from ...core.fold import PURE, replace_uses
from ...core.ir import Block, Instr, Kernel, TileType, Value, walk_block
from ...core.ops import Op


def defined_in(block: Block) -> set[Value]:
    inside = set(block.args)
    for instr in walk_block(block):
        inside.update(instr.results)
        for region in instr.regions:
            inside.update(region.args)
    return inside


def _invariant_chain(v: Value, producers: dict[Value, Instr], inside: set[Value]) -> list[Instr] | None:
    """The body's instructions computing ``v`` from values defined before the loop, or None if
    ``v`` depends on anything the loop changes."""
    if v not in inside:
        return []
    instr = producers.get(v)
    if instr is None or instr.op not in PURE or instr.regions or instr.op is Op.PROGRAM_ID:
        return None
    chain: list[Instr] = []
    for operand in instr.operands:
        sub = _invariant_chain(operand, producers, inside)
        if sub is None:
            return None
        chain.extend(i for i in sub if i not in chain)
    return [*chain, instr]


def _unhinted(v: Value, producers: dict[Value, Instr]) -> Value:
    """``v`` with ``tl.multiple_of``/``max_contiguous`` hints looked through."""
    instr = producers.get(v)
    while instr is not None and instr.op is Op.HINT:
        v = instr.operands[0]
        instr = producers.get(v)
    return v


def _step_of(y: Value, arg: Value, producers: dict[Value, Instr]) -> Value | None:
    """``inc`` when ``y`` is ``arg + inc`` (pointer advance or integer add; ``arg`` possibly
    through hints, which stay on the closed form), else None."""
    instr = producers.get(y)
    if instr is None:
        return None
    if instr.op is Op.ADDPTR and _unhinted(instr.operands[0], producers) is arg:
        return instr.operands[1]
    if instr.op is Op.ADD and arg.type.dtype.is_int:
        a, b = (_unhinted(o, producers) for o in instr.operands)
        if a is arg and b is not arg:
            return instr.operands[1]
        if b is arg and a is not arg:
            return instr.operands[0]
    return None


class Emit:
    """Appends typed instructions, all at one source location, to ``instrs``."""

    def __init__(self, loc: object) -> None:
        self.instrs: list[Instr] = []
        self.loc = loc

    def __call__(self, op: Op, operands: Sequence[Value], type: TileType, attrs: object = None) -> Value:
        out = Value(type)
        self.instrs.append(Instr(op, tuple(operands), (out,), attrs, loc=self.loc))  # type: ignore[arg-type]
        return out


def _closed_form(emit: Emit, loop: Instr, body: Block, init: Value, inc: Value,
                 defs: dict[Value, Instr], cache: dict[str, Value]) -> Value:
    iv = body.args[0]
    lb, step = loop.operands[0], loop.operands[2]
    if "count" not in cache:
        count = iv
        lb_def, step_def = defs.get(lb), defs.get(step)
        if not (lb_def is not None and lb_def.op is Op.CONST and lb_def.attrs.value == 0):
            count = emit(Op.SUB, [count, lb], iv.type)
        if not (step_def is not None and step_def.op is Op.CONST and step_def.attrs.value == 1):
            count = emit(Op.IDIV, [count, step], iv.type)
        cache["count"] = count
    count = cache["count"]
    idx_dtype = inc.type.dtype
    if isinstance(init.type.dtype, D.PointerType) and idx_dtype.itemsize < 8:
        # each ``addptr`` step sign-extends its offset, so n steps add n * inc in 64 bits
        idx_dtype = D.int64
        inc = emit(Op.CAST, [inc], TileType(idx_dtype, inc.type.shape), A.Cast(idx_dtype))
    if count.type.dtype != idx_dtype:
        count = emit(Op.CAST, [count], TileType(idx_dtype), A.Cast(idx_dtype))
    if inc.type.shape:
        count = emit(Op.BROADCAST, [count], inc.type, A.Shape(inc.type.shape))
    offset = emit(Op.MUL, [count, inc], inc.type)
    return emit(Op.ADDPTR if isinstance(init.type.dtype, D.PointerType) else Op.ADD,
                [init, offset], init.type)


def _rewrite_loop(loop: Instr, uses_after: set[Value], defs: dict[Value, Instr]) -> Instr:
    body = loop.regions[0]
    inside = defined_in(body)
    producers = {r: i for i in body.instrs for r in i.results}
    hoist: list[Instr] = []
    emit = Emit(loop.loc)
    mapping: dict[Value, Value] = {}
    cache: dict[str, Value] = {}
    for arg, init, y in zip(body.args[1:], loop.operands[3:], body.yields):
        if y is arg or y is init:  # carried unchanged (a block pointer's base, shape and strides)
            mapping[arg] = init
            continue
        inc = _step_of(y, arg, producers)
        if inc is None or arg.type != init.type:
            continue
        chain = _invariant_chain(inc, producers, inside)
        if chain is None:
            continue
        hoist.extend(i for i in chain if i not in hoist)
        mapping[arg] = _closed_form(emit, loop, body, init, inc, defs, cache)
    if not mapping:
        return loop
    moved = set(map(id, hoist))
    order = {id(i): n for n, i in enumerate(body.instrs)}
    hoist.sort(key=lambda i: order[id(i)])
    rest = [i for i in body.instrs if id(i) not in moved]
    body.instrs = rest
    replace_uses(body, mapping)
    body.instrs = [*hoist, *emit.instrs, *body.instrs]
    return _drop_dead_carried(loop, uses_after, set(mapping))


def _drop_dead_carried(loop: Instr, uses_after: set[Value], rewritten: set[Value]) -> Instr:
    """Remove carried values that were rewritten and that nothing reads after the loop."""
    body = loop.regions[0]
    keep = [k for k, (arg, result) in enumerate(zip(body.args[1:], loop.results))
            if arg not in rewritten or result in uses_after]
    if len(keep) == len(loop.results):
        return loop
    body.args = [body.args[0], *(body.args[1 + k] for k in keep)]
    body.yields = [body.yields[k] for k in keep]
    operands = (*loop.operands[:3], *(loop.operands[3 + k] for k in keep))
    return dataclasses.replace(loop, operands=operands, results=tuple(loop.results[k] for k in keep))


def _used(block: Block, out: set[Value]) -> None:
    for instr in block.instrs:
        out.update(instr.operands)
        for region in instr.regions:
            _used(region, out)
    out.update(block.yields)


def close_induction_pointers(kernel: Kernel) -> Kernel:
    used: set[Value] = set()
    _used(kernel.body, used)
    defs = {r: i for i in kernel.walk() for r in i.results}

    def visit(block: Block) -> None:
        for n, instr in enumerate(block.instrs):
            for region in instr.regions:
                visit(region)
            if instr.op is Op.FOR:
                block.instrs[n] = _rewrite_loop(instr, used, defs)

    visit(kernel.body)
    from ...core.passes import dead_code_elimination
    return dead_code_elimination(kernel)
