"""Software pipelining of ``tl.dot`` loops fed by tensor descriptors, through TMA (sm_90a, wgmma).

A ``FOR`` whose DOTs read DESC_LOADs that ``tma_claim.py`` kept (B or the ``x`` of B = ``x.T``,
and A unless A is already in registers: repacked from a previous product, or loop-invariant and
hoisted before the loop as in ``lowering/mma/pipeline.py``) gets ``num_stages`` rotating stage buffers in
the local-memory arena, laid out
exactly as ``wgmma`` reads its operands (``mma/smem.Swizzled``: column blocks of 128/64/32-byte
rows, 16-byte chunks XORed with the row), and one mbarrier per stage after them.  Thread 0
fills a stage with one ``cp.async.bulk.tensor`` per column block of each operand, using a
tensor map whose box is that block and whose swizzle mode is the tile's (the hardware
pattern and ``Swizzled.address`` are the same XOR of address bits 4-6 with bits 7-9), after
announcing the stage's bytes on its mbarrier (``expect_tx``); elements outside the tensor
arrive as zeros, which is DESC_LOAD's meaning.

The schedule is ``mma/pipeline.py``'s (Triton's): before the loop every mbarrier is initialized
and stages 0..S-2 are started; iteration i waits on stage ``i % S``'s mbarrier for phase
parity ``(i // S) % 2`` (the slot and the parity are carried), and thread 0 starts iteration
i + S - 1 into the stage iteration i - 1 read.  When the product only feeds the next
iteration's accumulator, its wgmma group stays in flight (``pipeline.kept_groups``): the refill then
goes after the MMAs and their ``wgmma.wait_group 1`` behind a barrier (the previous group,
complete in every warpgroup, read that stage); otherwise behind a barrier before the MMAs.
With one stage, each iteration copies its own tiles and waits for them.  A wait that gives up
(a copy that never lands) makes the next ones try once, and the kernel traps after the loop
rather than inside it (see ``mbarrier_wait_or_give_up``).  After the loop the mbarriers are
invalidated behind a barrier, so the arena is free again.  Loops this module does not take
go to the generic ``mma/rules.lower_for`` (cp.async pipelines and plain loops).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....core import dtypes as D  # noqa: N812
from ....core.descriptors import descriptor_operands
from ....core.dtypes import DType
from ....core.ir import Instr, Value, walk_block
from ....core.ops import Op
from ...lowering.emitter import Handle
from ...lowering.lower import loop_stages
from ...lowering.mma.base import TensorCoreLowering
from ...lowering.mma.pipeline import (
    Pipe,
    carried_values,
    finish_carried,
    hoistable,
    kept_groups,
    moves_nothing,
    rotated,
)
from ...lowering.mma.plan import WARP, MMALayout
from ...lowering.mma.rules import hoist_a, lower_carried_body, mma_handles
from ...lowering.mma.smem import Swizzled
from .tma import map_handle
from .tma_claim import TMAEmitter, dot_feeds
from .wgmma import operands

MBARRIER_BYTES = 8


@dataclass(frozen=True)
class Feed:
    load: Instr
    dot: Instr
    operand: int     # 0: A, 1: B
    tile: Swizzled   # how wgmma reads it
    at: int          # byte offset inside a stage


@dataclass
class TMAPipe:
    dots: list[Instr]
    feeds: list[Feed]
    hoisted: list[Instr]  # DOTs whose loop-invariant A is loaded into registers first
    slice: list[Instr]  # body instructions the feeds' offsets need, in order
    step: int
    stages: int
    stage_bytes: int
    base: int = 0  # byte offset of stage 0 in the arena (``persistent.py`` moves the ring to the top)
    stride: int = 0  # bytes from one stage to the next (0: ``stage_bytes``)

    @property
    def stage_stride(self) -> int:
        return self.stride or self.stage_bytes

    @property
    def tx_bytes(self) -> int:
        """Bytes TMA writes into one stage (whole boxes, zero-filled parts included)."""
        return sum(f.tile.rows * f.tile.cols * f.tile.itemsize for f in self.feeds)


def find_tma_pipe(lw: TensorCoreLowering, instr: Instr) -> TMAPipe | None:
    plan = lw.tc.plan
    if not plan.wgmma or not isinstance(lw.e, TMAEmitter):
        return None
    body = instr.regions[0]
    defs = lw.tc.defs
    step_def = defs.get(instr.operands[2])
    if step_def is None or step_def.op is not Op.CONST or not isinstance(step_def.attrs.value, int) \
            or step_def.attrs.value <= 0:
        return None
    stages = loop_stages(lw, instr)
    uses: dict[Value, int] = {}
    for i in lw.kernel.walk():
        for v in i.operands:
            uses[v] = uses.get(v, 0) + 1
    loads = dot_feeds(body, uses)
    if not loads:  # (every DESC_LOAD left in the prepared kernel is one TMA claimed)
        return None
    dots = [i for i in body.instrs if i.op is Op.DOT]
    if any(d not in plan.dots for d in dots):
        return None
    feeds: list[Feed] = []
    hoisted: list[Instr] = []
    at = 0
    by_result = {ld.result: ld for ld in loads}
    inside = {r for i in walk_block(body) for r in i.results} | set(body.args)
    for dot in dots:
        ops = operands(plan, dot)
        for n, tile in ((0, ops.a), (1, ops.b)):
            v = plan.b_rows.get(dot, dot.operands[1]) if n == 1 else dot.operands[0]
            load = by_result.get(v)
            if load is None and n == 0 and dot in plan.a_regs:
                continue  # A repacked from a previous product's registers
            if load is None and n == 0 and v not in inside and hoistable(plan, dot):
                hoisted.append(dot)  # a loop-invariant A, loaded into registers before the loop
                continue
            if load is None or (n == 1 and ops.b_k_major and dot not in plan.b_rows):
                return None  # B written transposed element by element: not a copy
            feeds.append(Feed(load, dot, n, tile, at))
            at += tile.nbytes
    producers = {r: i for i in body.instrs for r in i.results}
    needed: set[Instr] = set()
    todo = [o for f in feeds for o in descriptor_operands(f.load).offsets]
    carried = set(body.args[1:])
    while todo:
        v = todo.pop()
        if v in carried:
            return None
        p = producers.get(v)
        if p is None or p in needed:
            continue
        if p.regions or p.results[0].type.shape:  # offsets are scalars computed from the index
            return None
        needed.add(p)
        todo.extend(p.operands)
    for i in body.instrs:  # nothing else in the body may use local memory (it holds the stages)
        if i in dots or i in loads or i in needed or moves_nothing(lw, i, defs):
            continue
        if i not in plan.frag and i not in plan.absorbed:
            return None
    if any(v in plan.blocked for v in inside):
        return None
    return TMAPipe(dots, feeds, hoisted, [i for i in body.instrs if i in needed], step_def.attrs.value,
                   max(1, stages), at)


def stage_barriers(pipe: TMAPipe) -> tuple[int, int]:
    """Byte offsets of the stages' "full" mbarriers and of the "empty" ones a producer warp
    waits on (``tma_producer.py``), after the stages."""
    full = pipe.base + pipe.stages * pipe.stage_stride
    return full, full + pipe.stages * MBARRIER_BYTES


def next_stage(lw: TensorCoreLowering, slot: Handle, parity: Handle, stages: int) -> tuple[Handle, Handle]:
    """The stage after ``slot`` and its phase parity (flipped when the ring wraps)."""
    last = lw.e.binary(Op.EQ, slot, lw.const(stages - 1, D.int32), D.int32)
    one = lw.const(1, D.int32)
    return (lw.e.select(last, lw.const(0, D.int32), lw.e.binary(Op.ADD, slot, one, D.int32), D.int32),
            lw.e.select(last, lw.e.binary(Op.XOR, parity, one, D.int32), parity, D.int32))


def issue_copies(lw: TensorCoreLowering, pipe: TMAPipe, iv_arg: Value, iv: Handle, iv_dtype: DType,
                 slot: Handle, mbar_base: int, go: Handle) -> None:
    """The thread where ``go`` holds starts the copies of the iteration at ``iv`` into stage
    ``slot``; the slice computing their offsets runs in every thread."""
    e = lw.e
    assert isinstance(e, TMAEmitter)
    lw.env[iv_arg] = [iv]
    for ins in pipe.slice:
        for v, hs in zip(ins.results, lw.lower_instr(ins)):
            lw.env[v] = hs
    coords = [[lw.env[o][0] for o in descriptor_operands(f.load).offsets] for f in pipe.feeds]
    maps = [map_handle(lw, f.load, (f.tile.rows, f.tile.width // f.tile.itemsize), f.tile.width)
            for f in pipe.feeds]
    stage = lw.e.binary(Op.MUL, slot, lw.const(pipe.stage_stride, D.int32), D.int32)
    mbar = lw.e.binary(Op.MUL, slot, lw.const(MBARRIER_BYTES, D.int32), D.int32)

    def copies() -> None:
        e.mbarrier_expect_tx(mbar_base, pipe.tx_bytes, mbar)
        for f, (row, col), tensor_map in zip(pipe.feeds, coords, maps):
            per_block = f.tile.width // f.tile.itemsize
            for j in range(f.tile.cols // per_block):
                c = col if j == 0 else lw.e.binary(Op.ADD, col, lw.const(j * per_block, D.int32), D.int32)
                e.tma_load(pipe.base + f.at + j * f.tile.block_bytes, tensor_map, [c, row], mbar_base, stage,
                           mbar)
    lw.e.when(go, copies)


def init_stage_barriers(lw: TensorCoreLowering, pipe: TMAPipe, fed: bool) -> None:
    """Thread 0's part: each stage's "full" mbarrier (one arrival: the expect_tx) and, when a
    producer warp copies, its "empty" one (one arrival per consumer warp)."""
    e = lw.e
    assert isinstance(e, TMAEmitter)
    full, empty = stage_barriers(pipe)
    for s in range(pipe.stages):
        e.mbarrier_init(full + s * MBARRIER_BYTES, 1)
        if fed:
            e.mbarrier_init(empty + s * MBARRIER_BYTES, lw.threads // WARP)


def release_last(lw: TensorCoreLowering, pipe: TMAPipe, ran: Handle, slot: Handle) -> None:
    """After a loop whose product stayed in flight, each consumer warp releases the stage its last
    iteration read (the one before ``slot``) where the loop ran at all."""
    e = lw.e
    assert isinstance(e, TMAEmitter)
    i32 = D.int32
    read = e.binary(Op.MUL, rotated(lw, slot, pipe.stages - 1, pipe.stages), lw.const(MBARRIER_BYTES, i32), i32)
    e.when(e.binary(Op.AND, lane0(lw), ran, D.int1), lambda: e.mbarrier_arrive(stage_barriers(pipe)[1], read))


def lane0(lw: TensorCoreLowering) -> Handle:
    """Whether this thread is its warp's first."""
    i32 = D.int32
    return lw.e.binary(Op.EQ, lw.e.binary(Op.AND, lw.tid, lw.const(WARP - 1, i32), i32), lw.const(0, i32), i32)


def _issue(lw: TensorCoreLowering, pipe: TMAPipe, iv_arg: Value, iv: Handle, ub: Handle, iv_dtype: DType,
           slot: Handle, mbar_base: int, first: Handle) -> None:
    """Thread 0 starts the copies of the iteration at ``iv`` into stage ``slot`` (nothing past
    the loop's end)."""
    go = lw.e.binary(Op.AND, first, lw.e.binary(Op.LT, iv, ub, iv_dtype), D.int1)
    issue_copies(lw, pipe, iv_arg, iv, iv_dtype, slot, mbar_base, go)


def lower_tma_pipelined(lw: TensorCoreLowering, instr: Instr, pipe: TMAPipe, pos: set[int]) -> list[Any]:
    st = lw.tc
    plan = st.plan
    e = lw.e
    assert isinstance(e, TMAEmitter)
    lb, ub, step = (lw.env[v][0] for v in instr.operands[:3])
    (body,) = instr.regions
    iv_arg = body.args[0]
    iv_dtype: DType = instr.operands[0].type.element  # type: ignore[assignment]
    for dot in pipe.hoisted:
        lay = plan.values[dot.result]
        assert isinstance(lay, MMALayout)
        hoist_a(lw, dot, plan.dots[dot], lay)
    S = pipe.stages  # noqa: N806
    keep = kept_groups(lw, Pipe(pipe.dots, [], [], [], pipe.step, S), body) if S >= 2 else 0
    fed = st.producer is not None and instr in st.producer.loops  # a producer warp copies (tma_producer.py)
    ring = st.persistent  # the programs' loop (persistent.py) initialized the stages' mbarriers once
    ahead_by = 0 if fed else S - 1  # stages this program's thread 0 copies ahead of the one read
    mbar_base, empty_base = stage_barriers(pipe)
    if ring is None:
        lw.reserve_local(empty_base + (S * MBARRIER_BYTES if fed else 0))
    st.async_loads.update(f.load for f in pipe.feeds)
    if keep:
        st.wg_keep[pipe.dots[0]] = keep

    def i32(x: int) -> Handle:
        return lw.const(x, D.int32)

    def ivc(x: int) -> Handle:
        return lw.const(x, iv_dtype)

    first = lw.e.binary(Op.EQ, lw.e.thread_id(), i32(0), D.int32)

    def inval() -> None:
        for s in range(S):
            e.mbarrier_inval(mbar_base + s * MBARRIER_BYTES)
            if fed:
                e.mbarrier_inval(empty_base + s * MBARRIER_BYTES)
    if ring is None:
        e.fence_proxy_async()  # generic accesses of the arena before TMA writes it
        lw.e.when(first, lambda: init_stage_barriers(lw, pipe, fed))
        if fed:
            e.join_barrier(lw.threads + WARP)  # the producer warp starts copying after this
        else:
            lw.e.barrier()
    for s in range(ahead_by):
        iv_s = lb if s == 0 else lw.e.binary(Op.ADD, lb, ivc(s * pipe.step), iv_dtype)
        _issue(lw, pipe, iv_arg, iv_s, ub, iv_dtype, i32(s), mbar_base, first)

    state = carried_values(lw, instr, pos, mma_handles)
    # + the stage read, its parity, whether a wait gave up (trapped on after the loop)
    slot0, parity0 = (i32(0), i32(0)) if ring is None else ring.state
    carried = [*state.handles, (slot0, D.int32), (parity0, D.int32), (i32(0), D.int32)]

    def run(iv: Handle, regs: list[Handle]) -> list[Handle]:
        slot, parity, failed = regs[-3:]
        mbar = lw.e.binary(Op.MUL, slot, i32(MBARRIER_BYTES), D.int32)

        def refill() -> None:  # iteration i + S - 1 into the stage iteration i - 1 read
            ahead = lw.e.binary(Op.ADD, iv, ivc(ahead_by * pipe.step), iv_dtype)
            _issue(lw, pipe, iv_arg, ahead, ub, iv_dtype, rotated(lw, slot, ahead_by, S), mbar_base, first)
        if not ahead_by and not fed:  # one stage: copy this iteration's tiles and wait for them
            lw.e.barrier()  # every warp is past the MMAs that read it
            _issue(lw, pipe, iv_arg, iv, ub, iv_dtype, slot, mbar_base, first)
        gave_up = e.mbarrier_wait_or_give_up(mbar_base, parity, failed, mbar)
        if ahead_by and not keep and not fed:
            lw.e.barrier()  # every warp is past the MMAs (all waited for) that read that stage
            refill()
        here = lw.e.binary(Op.ADD, lw.e.binary(Op.MUL, slot, i32(pipe.stage_stride), D.int32), i32(pipe.base),
                           D.int32)
        for f in pipe.feeds:
            st.wg_staged.setdefault(f.dot, {})[f.operand] = lw.e.binary(Op.ADD, here, i32(f.at), D.int32)
        lw.env[iv_arg] = [iv]
        flat = lower_carried_body(lw, body, state.inner, pos, plan, state.split(regs[:-3]))
        if fed:  # this warp's MMAs that read the stage (the previous one's, if in flight) are done
            first_lane = lane0(lw)
            if keep:  # the stage the previous iteration read
                read = lw.e.binary(Op.MUL, rotated(lw, slot, S - 1, S), i32(MBARRIER_BYTES), D.int32)
                not_first = lw.e.binary(Op.NE, iv, lb, iv_dtype)
                lw.e.when(lw.e.binary(Op.AND, first_lane, not_first, D.int1),
                          lambda: e.mbarrier_arrive(empty_base, read))
            else:
                lw.e.when(first_lane, lambda: e.mbarrier_arrive(empty_base, mbar))
        elif keep:  # the MMAs' wait completed the previous group, which read that stage ...
            lw.e.barrier()  # ... in every warpgroup
            refill()
        flat.extend(next_stage(lw, slot, parity, S))
        flat.append(gave_up)
        return flat

    outs = lw.e.for_range(lb, ub, step, iv_dtype, carried, lw.in_scope(run))
    if ring is not None:
        ring.state = (outs[-3], outs[-2])

    def drain() -> None:  # (no wgmma group in flight any more)
        lw.e.when(lw.e.binary(Op.NE, outs[-1], i32(0), D.int32), e.trap)  # a copy never landed
        if ring is not None:  # the stages stay for the next loop and program; the one still held goes back
            if keep:
                release_last(lw, pipe, lw.e.binary(Op.LT, lb, ub, iv_dtype), outs[-3])
            lw.e.barrier()
            return
        lw.e.barrier()
        lw.e.when(first, inval)
        lw.e.barrier()
    return finish_carried(lw, instr, pos, state.split(outs[:-3]), keep, drain)


def pipelined_loop(lw: TensorCoreLowering, instr: Instr) -> list[Any] | None:
    """The FOR's results when TMA feeds its DOTs (the producer's loops, or ``find_tma_pipe``'s),
    else None: the generic lowering's cp.async pipeline or plain loop takes it
    (``MMAExtension.pipelined_loop``)."""
    pos = lw.tc.plan.loops.get(instr)
    producer = lw.tc.producer
    pipe = (producer.loops[instr] if producer is not None and instr in producer.loops
            else find_tma_pipe(lw, instr) if pos else None)
    if pipe is None:
        return None
    assert pos is not None
    return lower_tma_pipelined(lw, instr, pipe, pos)

