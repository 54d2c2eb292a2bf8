"""Software pipelining of loops that feed ``tl.dot`` straight from global memory.

A ``FOR`` qualifies when its body's tensor-core DOTs read 16-bit operands that are
``LOAD``s used only by that DOT (masked-off elements read as 0; B may be ``trans`` of
a load when the DOT absorbed it), and the loads' pointers and masks are computed in
the body from the induction variable and loop-invariant values with ops that move no
data between threads.  With ``mma.sync`` that is one DOT fed by two loads; with
``wgmma`` any number of DOTs whose A is a load or already in registers (repacked from
a previous product, or loop-invariant and hoisted), as long as nothing else in the
body needs local memory (row reductions and elementwise ops on fragments don't).
Then the loads never reach registers: each thread copies its 16-byte chunks with
``cp.async`` into one of ``num_stages`` rotating local-memory buffers.  Before the
loop, stages 0..S-2 are started; iteration i waits for its own group and synchronizes
once.  When a wgmma product only feeds the next iteration's accumulator, its group stays
in flight into the next iteration (``wgmma.wait_group 1``); the copies of iteration i+S-1
then go after this iteration's MMAs and that wait, and a second barrier, into the buffer
the previous group (now complete in every warpgroup) read: S-1 stages ahead with one MMA
group in flight, as Triton schedules it.  With several products (attention) the last may stay
in flight the same way (the extension's ``Warpgroup.kept_last``; CUDA: ``cuda/hopper/inflight.py``).
Otherwise the copies of iteration i+S-1 start right after the first barrier, into the buffer
iteration i-1 used, before the MMAs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ....core import dtypes as D  # noqa: N812
from ....core.dtypes import DType
from ....core.ir import Block, Instr, Value, walk_block
from ....core.ops import BINARY_ARITH, COMPARISON, Op
from ..emitter import Handle
from ..lower import RULES, Index, loop_stages
from ..memory import access_groups
from . import lookahead
from .base import TensorCoreLowering, tc_rule
from .lookahead import Lookahead
from .remat import can_remat, moves_data
from .running import running_feeds
from .smem import operands

_SAFE = frozenset({*BINARY_ARITH, *COMPARISON, Op.CONST, Op.ARANGE, Op.ADDPTR, Op.HINT, Op.CAST,
                   Op.WHERE, Op.NOT, Op.NEG})
_BYTES = D.PointerType(D.int8)
HOIST_LIMIT = 16  # A fragments (per thread, 4 registers each) a hoisted operand may take


@dataclass(frozen=True)
class Feed:
    load: Instr
    dot: Instr
    operand: int  # 0: A, 1: B
    width: int    # elements per cp.async


@dataclass
class Pipe:
    dots: list[Instr]
    feeds: list[Feed]
    hoisted: list[Instr]  # DOTs whose loop-invariant A is loaded into registers first
    slice: list[Instr]
    step: int
    stages: int
    ahead: Lookahead | None = None  # carried values the copies read, kept ahead (lookahead.py)
    scratch: bool = False  # an IF in the body needs local memory: it gets a region above the stages

    @property
    def loads(self) -> list[Instr]:
        return [f.load for f in self.feeds]


def moves_nothing(lw: TensorCoreLowering, instr: Instr, defs: dict[Value, Instr]) -> bool:
    """The op's lowering uses no local memory (a broadcast of an index expression is
    recomputed in place, see ``remat.py``; an IF whose branches hold only such ops)."""
    if instr.regions:
        return instr.op is Op.IF and all(moves_nothing(lw, i, defs) for r in instr.regions for i in r.instrs)
    if instr.op in (Op.BROADCAST, Op.RESHAPE):
        return not moves_data(lw, instr) or can_remat(instr.operands[0], defs, [24])
    return instr.op in _SAFE


def reads_value(instr: Instr, v: Value) -> bool:
    """Whether ``instr`` or an op in its regions reads ``v`` (a region's yield included)."""
    return any(o is v for o in instr.operands) or any(
        any(reads_value(i, v) for i in region.instrs) or any(y is v for y in region.yields)
        for region in instr.regions)


def _uses(block: Block, v: Value) -> int:
    n = sum(1 for y in block.yields if y is v)
    for instr in block.instrs:
        n += sum(1 for o in instr.operands if o is v)
        for region in instr.regions:
            n += _uses(region, v)
    return n


def _feed(lw: TensorCoreLowering, v: Value, producers: dict[Value, Instr], defs: dict[Value, Instr],
          k_major: bool) -> Instr | None:
    """The LOAD that produces ``v`` if cp.async can copy it into a stage, else None: 16-bit
    elements, or with wgmma tf32 and 8-bit ones as long as their rows run along K
    (``k_major``: A, or the x of a B = trans(x) the DOT absorbed)."""
    load = producers.get(v)
    if load is None or load.op is not Op.LOAD:
        return None
    s = v.type.element.itemsize
    if s != 2 and not (lw.tc.plan.wgmma and k_major and s in (1, 4)):
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
    return load


def find_pipe(lw: TensorCoreLowering, instr: Instr, dots: dict[Instr, Any], defs: dict[Value, Instr]) -> Pipe | None:
    plan = lw.tc.plan
    stages = loop_stages(lw, instr)
    step_def = defs.get(instr.operands[2])
    if stages < 2 or step_def is None or step_def.op is not Op.CONST:
        return None
    step = step_def.attrs.value
    if not isinstance(step, int) or step <= 0:
        return None
    body = instr.regions[0]
    mine = [i for i in body.instrs if i.op is Op.DOT and i in dots]
    if not mine or len(mine) > 1 and not plan.wgmma:
        return None
    producers = {r: i for i in body.instrs for r in i.results}
    inside = {r for i in walk_block(body) for r in i.results} | set(body.args)
    feeds: list[Feed] = []
    hoisted: list[Instr] = []
    for dot in mine:
        for idx in (0, 1):
            v = plan.b_rows.get(dot, dot.operands[1]) if idx == 1 else dot.operands[0]
            load = _feed(lw, v, producers, defs, idx == 0 or dot in plan.b_rows)
            if load is not None:
                groups = access_groups(lw, load)
                w = groups[0][1]
                if w * v.type.element.itemsize not in (4, 8, 16):
                    return None
                feeds.append(Feed(load, dot, idx, w))
            elif idx == 0 and plan.wgmma and dot in plan.a_regs:
                continue
            elif idx == 0 and plan.wgmma and v not in inside and hoistable(plan, dot):
                hoisted.append(dot)
            else:
                return None
    needed: set[Instr] = set()
    todo = [o for f in feeds for o in f.load.operands[:2 if f.load.attrs.masked else 1]]
    carried = set(body.args[1:])
    reads: set[Value] = set()
    while todo:
        v = todo.pop()
        if v in carried:
            reads.add(v)
            continue
        p = producers.get(v)
        if p is None or p in needed:
            continue
        if not moves_nothing(lw, p, defs):
            return None
        needed.add(p)
        todo.extend(lookahead.inputs(p))
    ahead = None
    if reads:
        ahead = lookahead.find(body, reads, plan.loops.get(instr, set()), lambda i: moves_nothing(lw, i, defs))
        if ahead is None:
            return None
    loads = {f.load for f in feeds}
    params = {p.value for p in lw.kernel.params}
    scratch = False
    for i in body.instrs:  # nothing else in the body may use local memory (it holds the stages)...
        if i in mine or i in loads or i in needed or moves_nothing(lw, i, defs):
            continue
        if i.op is Op.IF and lookahead.writes_apart(i, [f.load for f in feeds], params, lw.tc.defs):
            scratch = True  # ... but a run-time if (an epilogue), given a region above the stages
            continue
        if not plan.wgmma or i not in plan.frag and i not in plan.absorbed:
            return None
    # blocked copies of fragments go through local memory: only under an IF given the scratch region
    top = {r for i in body.instrs if not (scratch and i.op is Op.IF) for r in i.results} | set(body.args)
    if any(v in plan.blocked for v in (top if scratch else inside)):
        return None
    return Pipe(mine, feeds, hoisted, [i for i in body.instrs if i in needed], step, stages, ahead, scratch)


def hoistable(plan: Any, dot: Instr) -> bool:
    """A loop-invariant A operand small enough to keep in registers for the whole loop (with
    wgmma, 16-bit: its registers are ``ldmatrix`` fragments)."""
    from .plan import MMALayout
    if plan.wgmma and dot.operands[0].type.element.itemsize != 2:
        return False
    lay = plan.values[dot.result]
    assert isinstance(lay, MMALayout)
    return lay.batch * (dot.operands[0].type.shape[-1] // plan.dots[dot][2]) * lay.reps_m <= HOIST_LIMIT


@tc_rule(Op.LOAD)
def _load(lw: TensorCoreLowering, instr: Instr) -> list[Any]:
    if instr in lw.tc.async_loads:
        return [None]  # copied by cp.async straight into the DOT's stage buffer
    return RULES[Op.LOAD](lw, instr)


@dataclass(frozen=True)
class Place:
    """Where a fed tile's elements go in a stage: ``at(row, col)`` is the byte offset, ``shift(rows)``
    the bytes from an element to the one ``rows`` below it when that is the same for every
    element (else None)."""

    at: Callable[[Index, Index], Index]
    shift: Callable[[int], int | None]


def _evaluate(lw: TensorCoreLowering, pipe: Pipe, iv_arg: Value, iv: Handle) -> None:
    """Lower the pointer-and-mask slice of ``pipe`` at induction value ``iv`` into ``lw.env``."""
    lw.env[iv_arg] = [iv]
    for ins in pipe.slice:
        for v, hs in zip(ins.results, lw.lower_instr(ins)):
            lw.env[v] = hs


Running = dict[int, tuple[list[Handle], Handle]]  # feed -> (its pointers at the first copied iteration, bytes since)


def issue(lw: TensorCoreLowering, pipe: Pipe, iv_arg: Value, iv: Handle, ub: Handle, iv_dtype: DType,
          slot_base: Handle, places: list[Place], running: Running | None = None, evaluate: bool = True) -> None:
    """Start the copies of the iteration at induction value ``iv`` into the stage at
    ``slot_base`` (bytes); one commit group per call, empty when ``iv`` is past the end.
    A thread's chunk in a later round of the layout lies a whole number of rows below its chunk
    in round 0: when the place's shift for those rows is constant, the copy addresses the
    round-0 destination plus that constant (one address register per chunk position, not per
    chunk, as Triton's).  ``running`` feeds address their copies from a base and a byte offset
    (``running.py``).  ``evaluate`` False: the slice is already in ``lw.env``."""
    e = lw.e
    valid = e.binary(Op.LT, iv, ub, iv_dtype)
    if evaluate:
        _evaluate(lw, pipe, iv_arg, iv)
    for n, (feed, place) in enumerate(zip(pipe.feeds, places)):
        load, w = feed.load, feed.width
        ptrs = lw.env[load.operands[0]]
        if running and n in running:
            bases, offset = running[n]
            ptrs = [e.ptr_offset(p, offset, _BYTES, D.int64) for p in bases]
        masks = lw.env[load.operands[1]] if load.attrs.masked else None
        lay = lw.layout(load.result)
        cols = lay.shape[-1]
        s = load.result.type.element.itemsize
        round_rows = lay.threads * lay.vec // cols if lay.threads * lay.vec % cols == 0 else 0
        first: dict[int, Handle] = {}  # chunk position in a round -> its round-0 destination
        for j in range(0, lay.per_thread, w):
            rnd, pos = divmod(j, lay.vec)
            shift = place.shift(rnd * round_rows) if rnd and round_rows and pos in first else None
            if shift is None:
                flat = lw.flat_index(lay, j)
                at = place.at(lw.iop(Op.IDIV, flat, cols), lw.iop(Op.MOD, flat, cols))
                byte, shift = e.binary(Op.ADD, slot_base, lw.idx(at), D.int32), 0
                if rnd == 0:
                    first[pos] = byte
            else:
                byte = first[pos]
            mask = valid if masks is None else e.binary(Op.AND, valid, masks[j], D.int1)
            ok = e.cp_async(shift, byte, ptrs[j], w * s, mask)
            assert ok
    e.cp_async_commit()


@dataclass(frozen=True)
class Borrowed:
    """What the pipelined loop borrows from the tensor-core rules (``rules.py``, which imports
    this module and passes its functions in)."""

    geometry: Callable[..., tuple[int, int, int, int]]
    hoist_a: Callable[..., None]
    lower_carried_body: Callable[..., Any]
    mma_handles: Callable[..., list[Handle]]


def _layout(lw: TensorCoreLowering, pipe: Pipe, geometry: Callable[..., tuple[int, int, int, int]]
            ) -> tuple[int, list[Place], dict[tuple[Instr, int], int]]:
    """Stage size (bytes), where each fed tile's elements go in a stage, and the byte offset
    of each (DOT, operand) region inside a stage."""
    plan = lw.tc.plan
    iop = lw.iop
    if not plan.wgmma:
        lda, ldb, a_bytes, b_bytes = geometry(pipe.dots[0])
        s = pipe.dots[0].operands[0].type.element.itemsize

        def rows(at: int, ld: int) -> Place:
            return Place(lambda r, c: iop(Op.ADD, at, iop(Op.MUL, iop(Op.ADD, iop(Op.MUL, r, ld), c), s)),
                         lambda n: n * ld * s)
        by_operand = {0: rows(0, lda), 1: rows(a_bytes, ldb)}
        return a_bytes + b_bytes, [by_operand[f.operand] for f in pipe.feeds], {}
    places: list[Place] = []
    offsets: dict[tuple[Instr, int], int] = {}
    size = 0
    for feed in pipe.feeds:
        ops = operands(plan, feed.dot)
        tile = ops.a if feed.operand == 0 else ops.b
        offsets[(feed.dot, feed.operand)] = size
        places.append(_place(lw, tile, size))
        size += tile.nbytes
    return size, places, offsets


def _place(lw: TensorCoreLowering, tile: Any, at: int) -> Place:
    return Place(lambda r, c: lw.iop(Op.ADD, at, tile.address(lw, r, c)), tile.row_shift)


def kept_groups(lw: TensorCoreLowering, pipe: Pipe, body: Block) -> int:
    """wgmma groups that may stay in flight across iterations: one when the only product is
    only fed back as the next iteration's accumulator, directly or as ``acc + dot``."""
    if not lw.tc.plan.wgmma or len(pipe.dots) != 1:
        return 0
    plan = lw.tc.plan
    dot = pipe.dots[0]
    # `acc += tl.dot(a, b)`: the DOT accumulated into acc and the ADD only forwards its result
    add = next((a for a, d in plan.fused_adds.items() if d is dot and a in body.instrs), None)
    out = dot.result if add is None else add.result
    acc = plan.add_into.get(dot, dot.operands[2]) if add is not None else dot.operands[2]
    if out.type.element not in (D.float32, D.int32):
        return 0  # a narrower accumulator is converted right after the MMAs
    if _uses(body, out) != 1:
        return 1 if _through_if(lw, body, out, acc) else 0
    pos = [i for i, y in enumerate(body.yields) if y is out]
    return 1 if pos and body.args[1 + pos[0]] is acc and _uses(body, acc) == 1 else 0


def _through_if(lw: TensorCoreLowering, body: Block, out: Value, acc: Value) -> bool:
    """Whether the product ``out`` is read only inside one run-time IF whose result the loop
    yields as the accumulator ``acc`` and one branch of which yields ``out`` there (Triton's
    flattened persistent matmul: the tile stored and the accumulator reset when ``ki`` is the
    last k step).  The group may then stay in flight: a branch that reads it waits first
    (``rules._if``).  Marks ``out`` as such (``wg_pending``)."""
    users = [i for i in body.instrs if reads_value(i, out)]
    if len(users) != 1 or users[0].op is not Op.IF or _uses(body, acc) != 1 or out in users[0].operands:
        return False
    f = users[0]
    for p, r in enumerate(f.results):
        at = [k for k, y in enumerate(body.yields) if y is r]
        if len(at) == 1 and body.args[1 + at[0]] is acc and any(reg.yields[p] is out for reg in f.regions):
            if _uses(body, r) == 1:
                lw.tc.wg_pending.add(out)
                return True
    return False


def _fitting_stages(lw: TensorCoreLowering, pipe: Pipe, body: Block, stage_bytes: int) -> int:
    """``pipe.stages``, or fewer where the stages and the region above them that a run-time if
    in the body needs (its largest tile moved out of fragments) would not fit in the target's
    shared memory; 0 where not even two stages fit."""
    if not pipe.scratch:
        return pipe.stages
    plan = lw.tc.plan
    under_if = [r for i in body.instrs if i.op is Op.IF for region in i.regions
                for j in walk_block(region) for r in j.results if r in plan.blocked]
    under_if += [v for v, (f, _) in plan.sunk.items() if f in body.instrs]
    under_if += [j.operands[1] for i in body.instrs if i.op is Op.IF for region in i.regions
                 for j in walk_block(region) if j in lw.tc.stores]  # staged by the epilogue (epilogue.py)
    above = max((_blocked_copy_bytes(lw, v) for v in under_if), default=0)
    stages = pipe.stages
    while stages >= 2 and -(-stages * stage_bytes // 1024) * 1024 + above > lw.e.target.shared_memory:
        stages -= 1
    return stages if stages >= 2 else 0


def _blocked_copy_bytes(lw: TensorCoreLowering, v: Value) -> int:
    """Local memory that moving ``v`` out of its fragment layout takes (``staging.to_blocked``)."""
    from .plan import MMALayout
    from .staging import staging
    lay = lw.tc.plan.values.get(v)
    if isinstance(lay, MMALayout):
        return staging(lay, v.type.element, lw.options.codegen.stmatrix).nbytes  # type: ignore[arg-type]
    return v.type.numel * v.type.element.itemsize


def fits(lw: TensorCoreLowering, instr: Instr, pipe: Pipe, geometry: Callable[..., tuple[int, int, int, int]]
         ) -> bool:
    """Whether at least two stages of ``pipe`` fit beside what the loop body's epilogue needs."""
    return _fitting_stages(lw, pipe, instr.regions[0], _layout(lw, pipe, geometry)[0]) > 0


def rotated(lw: TensorCoreLowering, slot: Handle, by: int, stages: int) -> Handle:
    """Stage ``(slot + by) % stages`` (``0 <= by < stages``): the one iteration ``i + by`` uses."""
    e, to = lw.e, lw.e.binary(Op.ADD, slot, lw.const(by, D.int32), D.int32)
    wrapped = e.binary(Op.GE, to, lw.const(stages, D.int32), D.int32)
    return e.select(wrapped, e.binary(Op.SUB, to, lw.const(stages, D.int32), D.int32), to, D.int32)


@dataclass
class Carried:
    """A pipelined FOR's carried values as one flat list of (handle, dtype), MMA fragments at the
    positions ``pos``, with the loop's own counters appended by the caller."""

    handles: list[tuple[Handle, Any]]
    sizes: list[int]
    inner: Block  # the body without the fragment yields (the walk yields those itself)

    def split(self, flat: Sequence[Handle]) -> list[list[Handle]]:
        """``flat`` (the counters dropped) back into one handle list per carried value."""
        out, at = [], 0
        for size in self.sizes:
            out.append(list(flat[at:at + size]))
            at += size
        return out


def carried_values(lw: TensorCoreLowering, instr: Instr, pos: set[int], mma_handles: Any) -> Carried:
    plan = lw.tc.plan
    (body,) = instr.regions
    handles: list[tuple[Handle, Any]] = []
    sizes = []
    for i, v in enumerate(instr.operands[3:]):
        hs = mma_handles(lw, v, plan.values[instr.results[i]]) if i in pos else lw.env[v]
        handles += [(h, v.type.dtype) for h in hs]
        sizes.append(len(hs))
    inner = Block(args=body.args, instrs=body.instrs, yields=[y for i, y in enumerate(body.yields) if i not in pos])
    return Carried(handles, sizes, inner)


def finish_carried(lw: TensorCoreLowering, instr: Instr, pos: set[int], parts: list[list[Handle]], keep: int,
                   before_publish: Callable[[], None]) -> list[Any]:
    """The FOR's results from its final carried ``parts``: a kept wgmma group waited for first,
    then ``before_publish`` (the pipeline's own drain), then the fragments published."""
    from .fragments import publish
    if keep:
        done = iter(lw.e.wgmma_wait(0, [h for i in sorted(pos) for h in parts[i]]))
        parts = [[next(done) for _ in hs] if i in pos else hs for i, hs in enumerate(parts)]
    before_publish()
    return [publish(lw, res, hs) if i in pos else hs for i, (res, hs) in enumerate(zip(instr.results, parts))]


def lower_pipelined(lw: TensorCoreLowering, instr: Instr, pipe: Pipe, pos: set[int], rules: Borrowed) -> list[Any]:
    from .plan import MMALayout
    st = lw.tc
    plan = st.plan
    e = lw.e
    lb, ub, step = (lw.env[v][0] for v in instr.operands[:3])
    (body,) = instr.regions
    iv_arg = body.args[0]
    iv_dtype: DType = instr.operands[0].type.element  # type: ignore[assignment]
    for dot in pipe.hoisted:
        lay = plan.values[dot.result]
        assert isinstance(lay, MMALayout)
        rules.hoist_a(lw, dot, plan.dots[dot], lay)
    stage_bytes, places, offsets = _layout(lw, pipe, rules.geometry)
    S = _fitting_stages(lw, pipe, body, stage_bytes)  # noqa: N806
    keep = kept_groups(lw, pipe, body)
    wg = lw.ext.warpgroup
    kept, late = pipe.dots[0], None if wg is None else wg.kept_last(lw, pipe.dots, body, S)
    if late is not None:  # several products: the last one waited for by the next iteration's first
        assert wg is not None
        keep, kept = 1, late[0]
        lw.variants.add(wg.kept_variant)
    ahead_by = S - 1  # stages in flight ahead of the one being read
    # a run-time IF in the body (an epilogue) would put the copies of iteration i+S-1 in another
    # basic block than the MMAs: ptxas then cannot compute their addresses in the MMAs' shadow, so
    # they start right after the kept group's wait, before the rest of the body (as Triton orders it)
    early = bool(keep) and late is None and any(i.op is Op.IF for i in body.instrs)
    lw.reserve_local(S * stage_bytes)
    st.async_loads.update(pipe.loads)
    if keep:
        st.wg_keep[kept] = keep

    state = carried_values(lw, instr, pos, rules.mma_handles)
    la = pipe.ahead
    runs = [] if la else running_feeds([f.load for f in pipe.feeds], instr, st.defs)
    n_state = len(state.handles)
    far = [list(lw.env[instr.operands[3 + k]]) for k in la.positions] if la else []
    far_types = [body.args[1 + k].type.dtype for k in la.positions] if la else []
    # + the stage this iteration reads, + a byte offset per running feed, + the kept-ahead values
    carried = [*state.handles, (lw.const(0, D.int32), D.int32), *((lw.const(0, D.int64), D.int64) for _ in runs)]

    def i32(x: int) -> Handle:
        return lw.const(x, D.int32)

    def ivc(x: int) -> Handle:
        return lw.const(x, iv_dtype)

    for s in range(ahead_by):
        iv_s = lb if s == 0 else e.binary(Op.ADD, lb, ivc(s * pipe.step), iv_dtype)
        if la:
            lookahead.bind(lw, body, la, far)
        issue(lw, pipe, iv_arg, iv_s, ub, iv_dtype, i32(s * stage_bytes), places)
        if la:
            far = lookahead.advance(lw, body, la, far, iv_s)
    carried += [(h, t) for hs, t in zip(far, far_types) for h in hs]
    sizes = [len(hs) for hs in far]
    bases, strides = _running_starts(lw, pipe, iv_arg, e.binary(Op.ADD, lb, ivc(ahead_by * pipe.step), iv_dtype),
                                     ivc(pipe.step), iv_dtype, runs)

    def run(iv: Handle, regs: list[Handle]) -> list[Handle]:
        slot = regs[n_state]
        advanced = regs[n_state + 1:n_state + 1 + len(runs)]
        flat_kept = regs[n_state + 1 + len(runs):]
        now = [flat_kept[sum(sizes[:k]):sum(sizes[:k + 1])] for k in range(len(sizes))]
        running = {n: (bases[k], advanced[k]) for k, n in enumerate(runs)}
        e.cp_async_wait(ahead_by - 1)
        if plan.wgmma:
            # PTX: cp.async writes through the generic proxy, wgmma reads through the async one,
            # so a proxy fence goes between them (Triton 3.6 omits it, 3.9 has it; leaving it out
            # measured no faster on the H200, 2026-12-01)
            e.fence_async_shared()
        e.barrier()
        target = rotated(lw, slot, ahead_by, S)
        ahead = e.binary(Op.ADD, iv, ivc(ahead_by * pipe.step), iv_dtype)

        def start() -> None:
            if pipe.ahead:
                lookahead.bind(lw, body, pipe.ahead, now)
            issue(lw, pipe, iv_arg, ahead, ub, iv_dtype, e.binary(Op.MUL, target, i32(stage_bytes), D.int32),
                  places, running)
            if pipe.ahead:
                now[:] = lookahead.advance(lw, body, pipe.ahead, now, ahead)
        if not keep:
            start()
        elif early and pipe.ahead:
            copies = _advance_first(lw, pipe, body, now, iv_arg, ahead, lambda: issue(
                lw, pipe, iv_arg, ahead, ub, iv_dtype, e.binary(Op.MUL, target, i32(stage_bytes), D.int32),
                places, running, evaluate=False))
            lw.tc.after_wait[kept] = lambda: _apart(lw, copies)
        elif early:
            lw.tc.after_wait[kept] = lambda: _apart(lw, start)
        here = e.binary(Op.MUL, slot, i32(stage_bytes), D.int32)
        if plan.wgmma:
            for (dot, operand), at in offsets.items():
                st.wg_staged.setdefault(dot, {})[operand] = e.binary(Op.ADD, here, i32(at), D.int32)
        else:
            st.async_slot[pipe.dots[0]] = here
        lw.env[iv_arg] = [iv]
        st.wg_inflight = [late[1]] if late is not None else []
        outer = (st.scratch_base, dict(st.unshifted))
        if pipe.scratch:  # the body's other users of local memory go above the stages
            st.scratch_base = e.local_base + -(-S * stage_bytes // 1024) * 1024
            st.unshifted.update((d, e.local_base) for d in pipe.dots)
        try:
            flat = rules.lower_carried_body(lw, body, state.inner, pos, plan, state.split(regs[:n_state]))
        finally:
            st.scratch_base, st.unshifted = outer
        pending = lw.tc.after_wait.pop(kept, None) if early else None
        if pending is not None:  # not run by the DOT: here, after the body
            pending()
        elif keep and not early:  # the MMAs' wait completed the previous group, which read `target`
            _apart(lw, start)
        last = e.binary(Op.EQ, slot, i32(S - 1), D.int32)
        flat.append(e.select(last, i32(0), e.binary(Op.ADD, slot, i32(1), D.int32), D.int32))
        return [*flat, *(e.running_add(off, stride) for off, stride in zip(advanced, strides)),
                *(h for hs in now for h in hs)]

    outs = e.for_range(lb, ub, step, iv_dtype, carried, lw.in_scope(run))

    def drain() -> None:
        e.cp_async_wait(0)
        e.barrier()
    return finish_carried(lw, instr, pos, state.split(outs[:n_state]), keep, drain)


def _advance_first(lw: TensorCoreLowering, pipe: Pipe, body: Block, now: list[list[Handle]], iv_arg: Value,
                   ahead: Handle, copies: Callable[[], None]) -> Callable[[], None]:
    """Advance the kept-ahead values ``now`` here (their run-time IFs, a tile switch under
    ``if ki == 0``, branch before the MMAs, as Triton places them) and return what starts the
    copies: the rest of the address slice, from the values bound here, then ``copies``."""
    la = pipe.ahead
    assert la is not None
    old = [list(hs) for hs in now]
    saved = dict(lw.env)

    def advance() -> dict[Value, list[Handle]]:
        now[:] = lookahead.advance(lw, body, la, old, ahead)
        return {r: lw.env[r] for ins in la.update for r in ins.results if r in lw.env}
    try:
        known = lw.in_scope(advance)()
    finally:
        lw.env.clear()
        lw.env.update(saved)

    def start() -> None:
        lookahead.bind(lw, body, la, old)
        lw.env[iv_arg] = [ahead]
        lw.env.update(known)
        for ins in pipe.slice:
            if not all(r in known for r in ins.results):
                for v, hs in zip(ins.results, lw.lower_instr(ins)):
                    lw.env[v] = hs
        copies()
    return start


def _apart(lw: TensorCoreLowering, start: Callable[[], None]) -> None:
    """The barrier after the kept wgmma group's wait (the group that read the stage the copies
    overwrite is complete in every warpgroup), then ``start``, leaving the body's bindings as they
    were (it binds the carried values, the induction variable and the address slice ahead)."""
    lw.e.barrier()
    saved = dict(lw.env)
    try:
        lw.in_scope(start)()
    finally:
        lw.env.clear()
        lw.env.update(saved)


def _running_starts(lw: TensorCoreLowering, pipe: Pipe, iv_arg: Value, first: Handle, step: Handle,
                    iv_dtype: DType, runs: list[int]) -> tuple[list[list[Handle]], list[Handle]]:
    """Per running feed, its pointers at induction value ``first`` (the first iteration the loop
    copies) and the bytes they advance per iteration (the same for every element)."""
    if not runs:
        return [], []
    e = lw.e
    _evaluate(lw, pipe, iv_arg, first)
    bases = [list(lw.env[pipe.feeds[n].load.operands[0]]) for n in runs]
    _evaluate(lw, pipe, iv_arg, e.binary(Op.ADD, first, step, iv_dtype))
    strides = []
    for n, base in zip(runs, bases):
        ptr = pipe.feeds[n].load.operands[0].type.dtype
        assert isinstance(ptr, D.PointerType)
        after = lw.env[pipe.feeds[n].load.operands[0]][0]
        strides.append(e.binary(Op.SUB, e.ptr_to_int(after, ptr), e.ptr_to_int(base[0], ptr), D.int64))
    return bases, strides
