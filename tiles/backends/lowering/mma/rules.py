"""``tl.dot`` on tensor cores, and loops that carry MMA accumulators.

DOT: both operands are written to local memory (A as M x K rows; B as K x N rows
for 16-bit types, read with ``ldmatrix.trans``, else transposed to N x K rows),
padded against bank conflicts; each warp then loads its A fragments (16 rows x 32
bytes, ``ldmatrix.x4``) and B fragments (two 8-column blocks per ``ldmatrix.x4``)
for every 32-byte step of K and issues one ``mma`` per 16x8 accumulator fragment.
The accumulator stays in the MMA layout (see ``plan.py``); a 16-bit float
accumulator is widened to fp32 around the multiply.  DOTs the emitter cannot run
on tensor cores, and every FOR without MMA-carried values, keep their usual rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....core import dtypes as D  # noqa: N812
from ....core.dtypes import DType
from ....core.ir import Block, Instr, Value, walk_block
from ....core.ops import MEMORY, SIDE_EFFECTS, Op
from .. import sorting  # noqa: F401  (registers the serial DOT rule first)
from ..emitter import Handle
from ..lower import RULES
from .base import TensorCoreLowering, tc_rule
from .convert import Lanes, align16, padded, stage
from .fragments import a_from_regs, blocked_copy, frag_handles, publish
from .lookahead import inputs
from .pipeline import Borrowed, find_pipe, fits, hoistable, lower_pipelined
from .plan import Frag, MMALayout


def mma_handles(lw: TensorCoreLowering, v: Value, lay: Frag) -> list[Handle]:
    return frag_handles(lw, v, lay)


@tc_rule(Op.DOT)
def _dot(lw: TensorCoreLowering, instr: Instr) -> list[Any]:
    st = lw.tc
    shape = st.plan.dots.get(instr)
    if shape is None:
        return RULES[Op.DOT](lw, instr)
    a, b, acc = instr.operands
    lay = st.plan.values[instr.result]
    assert isinstance(lay, MMALayout)
    out_dt: DType = acc.type.element  # type: ignore[assignment]
    c = mma_handles(lw, st.plan.add_into.get(instr, acc), lay)
    wide = D.int32 if out_dt.is_int else D.float32
    if out_dt != wide:
        c = [lw.e.cast(h, out_dt, wide) for h in c]
    if st.plan.wgmma:
        assert lw.ext.warpgroup is not None
        d = lw.ext.warpgroup.dot(lw, instr, lay, c, st.plan, a_in_registers(lw, instr), st.wg_staged.get(instr),
                                 st.wg_keep.get(instr, 0))
        then = st.after_wait.pop(instr, None)
        if then is not None:
            then()  # the pipeline's next copies, in the MMAs' basic block (pipeline.lower_pipelined)
    else:
        d = mma_dot(lw, instr, shape, lay, c)
    if out_dt != wide:
        d = [lw.e.cast(h, wide, out_dt) for h in d]
    return [publish(lw, instr.result, d)]


def a_in_registers(lw: TensorCoreLowering, instr: Instr) -> list[list[list[Handle]]] | None:
    """The DOT's A fragments when they are already in registers (hoisted before the loop, or
    repacked from a previous product), else None (A is read from local memory)."""
    st = lw.tc
    afr = st.afrags.get(instr)
    if afr is None and instr in st.plan.a_regs:
        a = instr.operands[0]
        la = st.plan.values[a]
        assert isinstance(la, MMALayout)
        afr = a_from_regs(lw, frag_handles(lw, a, la), la, a.type.element)  # type: ignore[arg-type]
    return afr


def _staged(lw: TensorCoreLowering, v: Value, adt: DType) -> list[Handle]:
    from ..sorting import to_tf32
    hs = lw.env.get(v, [])
    return [to_tf32(lw, h) for h in hs] if adt == D.float32 else hs


def _a_frags(lw: TensorCoreLowering, instr: Instr, shape: tuple[int, int, int], lay: MMALayout,
             slot: Handle | None) -> list[list[list[Handle]]]:
    """ldmatrix.x4 of every A fragment [batch][k step][mi] from the staged A."""
    e, iop = lw.e, lw.iop
    a = instr.operands[0]
    s = a.type.element.itemsize
    *_, m, k = a.type.shape
    lda = geometry(instr)[0]
    lanes = Lanes(lw, lay)
    quarter, r8 = iop(Op.IDIV, lanes.lane, 8), iop(Op.MOD, lanes.lane, 8)
    lo, hi = iop(Op.MOD, quarter, 2), iop(Op.IDIV, quarter, 2)
    # lane address of A: row (warp rows) + lo*8 + r8, bytes hi*16
    a_row = iop(Op.ADD, iop(Op.ADD, iop(Op.MUL, lanes.warp_m, lay.warp_rows), iop(Op.MUL, lo, 8)), r8)
    a_lane = lw.idx(iop(Op.ADD, iop(Op.MUL, a_row, lda * s), iop(Op.MUL, hi, 16)))
    if slot is not None:
        a_lane = e.binary(Op.ADD, a_lane, slot, D.int32)
    return [[[e.ldmatrix((bat * m + mi * lay.rep_rows) * lda * s + kk * 32, a_lane, 4, False)
              for mi in range(lay.reps_m)] for kk in range(k // shape[2])] for bat in range(lay.batch)]


def hoist_a(lw: TensorCoreLowering, instr: Instr, shape: tuple[int, int, int], lay: MMALayout) -> None:
    """Load the fragments of a loop-invariant A operand once, before the loop."""
    a = instr.operands[0]
    adt: DType = a.type.element  # type: ignore[assignment]
    lda, _, a_bytes, _ = geometry(instr)
    lw.reserve_local(a_bytes)
    stage(lw, _staged(lw, a, adt), lw.layout(a), adt, 0, lda)
    lw.e.barrier()
    lw.tc.afrags[instr] = _a_frags(lw, instr, shape, lay, None)
    lw.e.barrier()


def mma_dot(lw: TensorCoreLowering, instr: Instr, shape: tuple[int, int, int], lay: MMALayout,
            c: list[Handle]) -> list[Handle]:
    e = lw.e
    st = lw.tc
    a, b, _ = instr.operands
    adt: DType = a.type.element  # type: ignore[assignment]
    s = adt.itemsize
    *_, m, k = a.type.shape
    n = b.type.shape[-1]
    b_src = st.plan.b_rows.get(instr)
    lda, ldb, a_bytes, b_bytes = geometry(instr, b_src is not None)
    trans_b = s == 2 and b_src is None   # K x N rows + ldmatrix.trans; else N x K rows
    afr = a_in_registers(lw, instr)
    slot = st.async_slot.get(instr)
    if slot is None:
        lw.reserve_local(a_bytes + b_bytes)
        if afr is None:
            stage(lw, _staged(lw, a, adt), lw.layout(a), adt, 0, lda)
        if b_src is not None:
            stage(lw, _staged(lw, b_src, adt), lw.layout(b_src), adt, a_bytes, ldb)
        else:
            stage(lw, _staged(lw, b, adt), lw.layout(b), adt, a_bytes, ldb, transpose=not trans_b)
        e.barrier()
    if afr is None:
        afr = _a_frags(lw, instr, shape, lay, slot)

    lanes = Lanes(lw, lay)
    iop = lw.iop
    quarter, r8 = iop(Op.IDIV, lanes.lane, 8), iop(Op.MOD, lanes.lane, 8)
    lo, hi = iop(Op.MOD, quarter, 2), iop(Op.IDIV, quarter, 2)
    n_first = iop(Op.MUL, lanes.warp_n, lay.reps_n * 8)
    if trans_b:   # rows k: lo*8 + r8; columns n: warp cols + hi*8
        b_lane = iop(Op.ADD, iop(Op.MUL, iop(Op.ADD, iop(Op.MUL, lo, 8), r8), ldb * s),
                     iop(Op.MUL, iop(Op.ADD, n_first, iop(Op.MUL, hi, 8)), s))
    else:         # rows n: warp cols + hi*8 + r8; bytes lo*16
        b_lane = iop(Op.ADD, iop(Op.MUL, iop(Op.ADD, iop(Op.ADD, n_first, iop(Op.MUL, hi, 8)), r8), ldb * s),
                     iop(Op.MUL, lo, 16))
    b_lane_h = lw.idx(b_lane) if slot is None else e.binary(Op.ADD, lw.idx(b_lane), slot, D.int32)
    kstep = shape[2]
    d = list(c)
    for bat in range(lay.batch):
        for kk in range(k // kstep):
            afrag = afr[bat][kk]
            bfrag: list[Sequence[Handle]] = []
            for ni in range(0, lay.reps_n, 2):
                count = 4 if ni + 1 < lay.reps_n else 2
                if trans_b:
                    off = a_bytes + (bat * k + kk * kstep) * ldb * s + ni * 8 * s
                else:
                    off = a_bytes + (bat * n + ni * 8) * ldb * s + kk * 32
                regs = e.ldmatrix(off, b_lane_h, count, trans_b)
                bfrag += [regs[0:2], regs[2:4]] if count == 4 else [regs]
            for mi in range(lay.reps_m):
                for ni in range(lay.reps_n):
                    at = lay.slot(bat, mi, ni, 0)
                    d[at:at + 4] = e.mma(shape, afrag[mi], bfrag[ni], d[at:at + 4], adt)
    if slot is None:
        e.barrier()
    return d


def geometry(instr: Instr, b_rows: bool = False) -> tuple[int, int, int, int]:
    """Row strides of the staged A and B (elements) and their sizes (bytes) for a DOT
    (``b_rows``: B staged as N x K rows whatever its type)."""
    a, b, _ = instr.operands
    s = a.type.element.itemsize
    *batch, m, k = a.type.shape
    n = b.type.shape[-1]
    nb = batch[0] if batch else 1
    trans_b = s == 2 and not b_rows
    lda = padded(k, s)
    ldb = padded(n, s) if trans_b else padded(k, s)
    return (lda, ldb, align16(nb * m * lda * s), align16(nb * (k if trans_b else n) * ldb * s))


def loads_first(instrs: list[Instr]) -> list[Instr]:
    """A loop body without side effects, its global loads (and what their pointers and
    masks need) moved to the front, so they are in flight during the MMAs."""
    if any(i.op in SIDE_EFFECTS or i.op in MEMORY and i.op is not Op.LOAD or i.regions for i in instrs):
        return instrs
    producers = {r: i for i in instrs for r in i.results}
    need: set[Instr] = set()
    todo = [i for i in instrs if i.op is Op.LOAD]
    while todo:
        i = todo.pop()
        if i in need:
            continue
        need.add(i)
        todo += [producers[o] for o in i.operands if o in producers]
    return [i for i in instrs if i in need] + [i for i in instrs if i not in need]


@tc_rule(Op.FOR)
def _for(lw: TensorCoreLowering, instr: Instr) -> list[Any]:
    """A FOR: the extension's copy engine first (``MMAExtension.pipelined_loop``; CUDA's TMA
    pipelines, ``cuda/hopper/tma_pipeline.py``), else ``lower_for``."""
    take = lw.ext.pipelined_loop
    taken = None if take is None else take(lw, instr)
    return lower_for(lw, instr) if taken is None else taken


def lower_for(lw: TensorCoreLowering, instr: Instr) -> list[Any]:
    """A FOR the extension's copy engine does not take: cp.async pipelined where ``find_pipe``
    finds a pipe, else a plain loop carrying MMA fragments (or the shared rule)."""
    st = lw.tc
    pos = st.plan.loops.get(instr)
    if not pos:
        return RULES[Op.FOR](lw, instr)
    pipe = find_pipe(lw, instr, st.plan.dots, st.defs)
    if pipe is not None and fits(lw, instr, pipe, geometry):
        return lower_pipelined(lw, instr, pipe, pos, Borrowed(geometry, hoist_a, lower_carried_body, mma_handles))
    lb, ub, step = (lw.env[v][0] for v in instr.operands[:3])
    (body,) = instr.regions
    iv_dtype: DType = instr.operands[0].type.element  # type: ignore[assignment]
    plan = st.plan
    carried: list[tuple[Handle, D.ScalarType]] = []
    sizes = []
    for i, v in enumerate(instr.operands[3:]):
        res = instr.results[i]
        hs = mma_handles(lw, v, plan.values[res]) if i in pos else lw.env[v]
        carried += [(h, v.type.dtype) for h in hs]
        sizes.append(len(hs))
    inside = {r for i in walk_block(body) for r in i.results} | set(body.args)
    for dot in body.instrs:
        if dot in plan.dots and dot not in plan.a_regs and dot.operands[0] not in inside and hoistable(plan, dot):
            lay = plan.values[dot.result]
            assert isinstance(lay, MMALayout)
            hoist_a(lw, dot, plan.dots[dot], lay)

    def split(handles: Sequence[Handle]) -> list[list[Handle]]:
        out, at = [], 0
        for size in sizes:
            out.append(list(handles[at:at + size]))
            at += size
        return out

    inner = Block(args=body.args, instrs=loads_first(body.instrs),
                  yields=[y for i, y in enumerate(body.yields) if i not in pos])

    def run(iv: Handle, regs: list[Handle]) -> list[Handle]:
        lw.env[body.args[0]] = [iv]
        return lower_carried_body(lw, body, inner, pos, plan, split(regs))

    outs = lw.e.for_range(lb, ub, step, iv_dtype, carried, lw.in_scope(run))
    results: list[list[Handle] | None] = []
    for i, (res, hs) in enumerate(zip(instr.results, split(outs))):
        results.append(publish(lw, res, hs) if i in pos else hs)
    return results


def lower_carried_body(lw: TensorCoreLowering, body: Any, inner: Any, pos: Any, plan: Any,
                       carried: Any) -> list[Handle]:
    """Bind a FOR body's carried values (fragment-layout ones published where the blocked
    layout needs them) and lower it: the new carried handles, fragments flattened."""
    for i, (arg, hs) in enumerate(zip(body.args[1:], carried)):
        if i in pos:
            blocked = publish(lw, arg, hs)
            if blocked is not None:
                lw.env[arg] = blocked
        else:
            lw.env[arg] = hs
    plain = iter(lw.lower_block(inner))
    flat: list[Handle] = []
    for i, (arg, y) in enumerate(zip(body.args[1:], body.yields)):
        flat += frag_handles(lw, y, plan.values[arg]) if i in pos else next(plain)
    return flat


@tc_rule(Op.IF)
def _if(lw: TensorCoreLowering, instr: Instr) -> list[Any]:
    """An IF whose results the plan keeps in fragment layouts (an accumulator stored and reset
    under a run-time ``if``): each branch yields those results' fragment registers."""
    plan = lw.tc.plan
    lays: list[Frag | None] = [plan.values.get(r) for r in instr.results]
    if all(lo is None for lo in lays):
        return RULES[Op.IF](lw, instr)
    sizes = [lw.layout(r).per_thread if lo is None else lo.per_thread for r, lo in zip(instr.results, lays)]
    types = [r.type.dtype for r, n in zip(instr.results, sizes) for _ in range(n)]

    def branch(b: int, block: Block) -> Any:
        def run() -> list[Handle]:
            st = lw.tc
            # a product still in flight (pipeline._through_if): waited for where the branch reads it
            read = [v for v in st.wg_pending if any(v in inputs(i) for i in block.instrs)]
            saved = {v: st.mma[v] for v in read}
            for v in read:
                st.mma[v] = lw.e.wgmma_wait(0, st.mma[v])
            sunk = [v for v, at in plan.sunk.items() if at == (instr, b)]
            for v in sunk:  # needed blocked only here (plan._sink_into_branches)
                lw.env[v] = blocked_copy(lw, v, st.mma[v])
            try:
                inner = Block(args=block.args, instrs=block.instrs,
                              yields=[y for y, lo in zip(block.yields, lays) if lo is None])
                plain = iter(lw.lower_block(inner))
                flat: list[Handle] = []
                for y, lo in zip(block.yields, lays):
                    flat += next(plain) if lo is None else frag_handles(lw, y, lo)
                return flat
            finally:
                st.mma.update(saved)
                for v in sunk:
                    del lw.env[v]
        return lw.in_scope(run)

    outs = lw.e.if_else(lw.env[instr.operands[0]][0], types, branch(0, instr.regions[0]), branch(1, instr.regions[1]))
    results: list[Any] = []
    at = 0
    for r, lo, n in zip(instr.results, lays, sizes):
        hs = list(outs[at:at + n])
        at += n
        results.append(hs if lo is None else publish(lw, r, hs))
    return results
