"""Software pipelining of K loops that feed ``tl.dot`` straight from global memory.

A ``FOR`` qualifies when its body holds one tensor-core DOT of 16-bit operands,
both operands are ``LOAD``s used only by that DOT (masked-off elements read as 0),
and the loads' pointers and masks are computed in the body from the induction
variable and loop-invariant values with ops that move no data between threads.
Then the loads never reach registers: each thread copies its 16-byte chunks with
``cp.async`` into one of ``num_stages`` rotating local-memory buffers.  Before the
loop, stages 0..S-2 are started; iteration i waits for its own group, synchronizes
once, starts the copies of iteration i+S-1 (pointers re-lowered at that induction
value) into the buffer iteration i-1 used, and runs the MMAs on its buffer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ....core import dtypes as D  # noqa: N812
from ....core.dtypes import DType
from ....core.ir import Block, Instr, Value
from ....core.ops import BINARY_ARITH, COMPARISON, Op
from ..emitter import Handle
from ..lower import RULES, Index, Lowering, rule
from ..memory import _groups
from .wgmma import operands

_SAFE = frozenset({*BINARY_ARITH, *COMPARISON, Op.CONST, Op.ARANGE, Op.ADDPTR, Op.HINT, Op.CAST,
                   Op.WHERE, Op.NOT, Op.NEG})
_PLAIN_LOAD = RULES[Op.LOAD]


@dataclass
class Pipe:
    dot: Instr
    loads: tuple[Instr, Instr]
    slice: list[Instr]
    step: int
    stages: int
    widths: tuple[int, int]


def _moves_nothing(instr: Instr) -> bool:
    if instr.regions:
        return False
    if instr.op is Op.BROADCAST:
        return instr.operands[0].type.numel == 1
    return instr.op in _SAFE


def _uses(block: Block, v: Value) -> int:
    n = sum(1 for y in block.yields if y is v)
    for instr in block.instrs:
        n += sum(1 for o in instr.operands if o is v)
        for region in instr.regions:
            n += _uses(region, v)
    return n


def find_pipe(lw: Lowering, instr: Instr, dots: dict[Instr, Any], defs: dict[Value, Instr]) -> Pipe | None:
    stages = getattr(lw.e, "num_stages", 1)
    step_def = defs.get(instr.operands[2])
    if stages < 2 or step_def is None or step_def.op is not Op.CONST:
        return None
    step = step_def.attrs.value
    if not isinstance(step, int) or step <= 0:
        return None
    body = instr.regions[0]
    mine = [i for i in body.instrs if i.op is Op.DOT and i in dots]
    if len(mine) != 1:
        return None
    dot = mine[0]
    producers = {r: i for i in body.instrs for r in i.results}
    loads = []
    for v in dot.operands[:2]:
        load = producers.get(v)
        if load is None or load.op is not Op.LOAD or v.type.element.itemsize != 2:
            return None
        if _uses(lw.kernel.body, v) != 1:
            return None
        if load.attrs.has_other:
            other = defs.get(load.operands[2])
            if other is None or other.op is not Op.CONST or other.attrs.value != 0:
                return None
        lay = lw.layout(v)
        if not all(lay.round_is_full(r) for r in range(lay.rounds)):
            return None
        loads.append(load)
    needed: set[Instr] = set()
    todo = [o for load in loads for o in load.operands[:2 if load.attrs.masked else 1]]
    carried = set(body.args[1:])
    while todo:
        v = todo.pop()
        if v in carried:
            return None
        p = producers.get(v)
        if p is None or p in needed:
            continue
        if not _moves_nothing(p):
            return None
        needed.add(p)
        todo.extend(p.operands)
    for i in body.instrs:  # nothing else in the body may use local memory (it holds the stages)
        if i is not dot and i not in loads and i not in needed and not _moves_nothing(i):
            return None
    widths = []
    for load in loads:
        groups = _groups(lw, load, 1 if load.attrs.masked else None, 2 if load.attrs.has_other else None)
        w = groups[0][1]
        if w * 2 not in (4, 8, 16):
            return None
        widths.append(w)
    return Pipe(dot, (loads[0], loads[1]), [i for i in body.instrs if i in needed], step, stages,
                (widths[0], widths[1]))


@rule(Op.LOAD)
def _load(lw: Lowering, instr: Instr) -> list[Any]:
    from .fragments import state
    if instr in state(lw).async_loads:
        return [None]  # copied by cp.async straight into the DOT's stage buffer
    return _PLAIN_LOAD(lw, instr)


Place = Callable[[Index, Index], Index]  # (row, col) of a loaded tile -> byte offset in the stage


def issue(lw: Lowering, pipe: Pipe, iv_arg: Value, iv: Handle, ub: Handle, iv_dtype: DType,
          slot_base: Handle, places: tuple[Place, Place]) -> None:
    """Start the copies of the iteration at induction value ``iv`` into the stage at
    ``slot_base`` (bytes); one commit group per call, empty when ``iv`` is past the end."""
    e = lw.e
    valid = e.binary(Op.LT, iv, ub, iv_dtype)
    lw.env[iv_arg] = [iv]
    for ins in pipe.slice:
        for v, hs in zip(ins.results, RULES[ins.op](lw, ins)):
            lw.env[v] = hs
    for load, place, w in zip(pipe.loads, places, pipe.widths):
        ptrs = lw.env[load.operands[0]]
        masks = lw.env[load.operands[1]] if load.attrs.masked else None
        lay = lw.layout(load.result)
        cols = lay.shape[-1]
        s = load.result.type.element.itemsize
        for j in range(0, lay.per_thread, w):
            flat = lw.flat_index(lay, j)
            at = place(lw.iop(Op.IDIV, flat, cols), lw.iop(Op.MOD, flat, cols))
            byte = e.binary(Op.ADD, slot_base, lw.idx(at), D.int32)
            mask = valid if masks is None else e.binary(Op.AND, valid, masks[j], D.int1)
            ok = e.cp_async(0, byte, ptrs[j], w * s, mask)
            assert ok
    e.cp_async_commit()


def _places(lw: Lowering, pipe: Pipe) -> tuple[int, tuple[Place, Place]]:
    """Stage size (bytes) and where each loaded tile's elements go in a stage."""
    from .fragments import state
    from .rules import geometry
    plan = state(lw).plan
    iop = lw.iop
    if plan.wgmma:
        ops = operands(plan, pipe.dot)
        return ops.nbytes, (lambda r, c: ops.a.address(lw, r, c),
                            lambda r, c: iop(Op.ADD, ops.b_offset, ops.b.address(lw, r, c)))
    lda, ldb, a_bytes, b_bytes = geometry(pipe.dot)
    s = pipe.dot.operands[0].type.element.itemsize
    return a_bytes + b_bytes, (lambda r, c: iop(Op.MUL, iop(Op.ADD, iop(Op.MUL, r, lda), c), s),
                               lambda r, c: iop(Op.ADD, a_bytes, iop(Op.MUL, iop(Op.ADD, iop(Op.MUL, r, ldb), c), s)))


def _keep(lw: Lowering, pipe: Pipe, body: Block) -> int:
    """wgmma groups that may stay in flight across iterations: one when the product is only
    fed back as the next iteration's accumulator (and a stage is left to spare)."""
    from .fragments import state
    dot = pipe.dot
    if not state(lw).plan.wgmma or pipe.stages < 3 or _uses(body, dot.result) != 1:
        return 0
    pos = [i for i, y in enumerate(body.yields) if y is dot.result]
    return 1 if pos and body.args[1 + pos[0]] is dot.operands[2] and _uses(body, dot.operands[2]) == 1 else 0


def lower_pipelined(lw: Lowering, instr: Instr, pipe: Pipe, pos: set[int]) -> list[Any]:
    from .fragments import publish, state
    from .rules import lower_carried_body, mma_handles
    st = state(lw)
    plan = st.plan
    e = lw.e
    lb, ub, step = (lw.env[v][0] for v in instr.operands[:3])
    (body,) = instr.regions
    iv_arg = body.args[0]
    iv_dtype: DType = instr.operands[0].type.element  # type: ignore[assignment]
    stage_bytes, places = _places(lw, pipe)
    S = pipe.stages  # noqa: N806
    keep = _keep(lw, pipe, body)
    ahead_by = S - 1 - keep  # stages in flight ahead of the one being read
    lw.reserve_local(S * stage_bytes)
    st.async_loads.update(pipe.loads)
    if keep:
        st.wg_keep[pipe.dot] = keep

    carried: list[tuple[Handle, Any]] = []
    sizes = []
    for i, v in enumerate(instr.operands[3:]):
        hs = mma_handles(lw, v, plan.values[instr.results[i]]) if i in pos else lw.env[v]
        carried += [(h, v.type.dtype) for h in hs]
        sizes.append(len(hs))
    carried.append((lw.const(0, D.int32), D.int32))  # the stage this iteration reads

    def i32(x: int) -> Handle:
        return lw.const(x, D.int32)

    def ivc(x: int) -> Handle:
        return lw.const(x, iv_dtype)

    for s in range(ahead_by):
        iv_s = lb if s == 0 else e.binary(Op.ADD, lb, ivc(s * pipe.step), iv_dtype)
        issue(lw, pipe, iv_arg, iv_s, ub, iv_dtype, i32(s * stage_bytes), places)

    def split(handles: list[Handle]) -> list[list[Handle]]:
        out, at = [], 0
        for size in sizes:
            out.append(list(handles[at:at + size]))
            at += size
        return out

    inner = Block(args=body.args, instrs=body.instrs,
                  yields=[y for i, y in enumerate(body.yields) if i not in pos])

    def run(iv: Handle, regs: list[Handle]) -> list[Handle]:
        slot = regs[-1]
        e.cp_async_wait(ahead_by - 1)
        if plan.wgmma:
            e.fence_async_shared()
        e.barrier()
        target = e.binary(Op.ADD, slot, i32(ahead_by), D.int32)
        wrapped = e.binary(Op.GE, target, i32(S), D.int32)
        target = e.select(wrapped, e.binary(Op.SUB, target, i32(S), D.int32), target, D.int32)
        ahead = e.binary(Op.ADD, iv, ivc(ahead_by * pipe.step), iv_dtype)
        issue(lw, pipe, iv_arg, ahead, ub, iv_dtype, e.binary(Op.MUL, target, i32(stage_bytes), D.int32), places)
        st.async_slot[pipe.dot] = e.binary(Op.MUL, slot, i32(stage_bytes), D.int32)
        lw.env[iv_arg] = [iv]
        flat = lower_carried_body(lw, body, inner, pos, plan, split(regs[:-1]))
        last = e.binary(Op.EQ, slot, i32(S - 1), D.int32)
        flat.append(e.select(last, i32(0), e.binary(Op.ADD, slot, i32(1), D.int32), D.int32))
        return flat

    outs = e.for_range(lb, ub, step, iv_dtype, carried, lw.in_scope(run))
    parts = split(outs[:-1])
    if keep:
        done = iter(e.wgmma_wait(0, [h for i in sorted(pos) for h in parts[i]]))
        parts = [[next(done) for _ in hs] if i in pos else hs for i, hs in enumerate(parts)]
    e.cp_async_wait(0)
    e.barrier()
    results: list[Any] = []
    for i, (res, hs) in enumerate(zip(instr.results, parts)):
        results.append(publish(lw, res, hs) if i in pos else hs)
    return results
