"""Ops that combine elements along an axis: reduce, argreduce, scan, sort,
histogram and dot.

Reductions have two paths.  *Per-thread rows*: when the whole tile reduces to
one element, or the axis is the last one and every round of the layout lies in
one row, each thread first combines the elements it holds (no data moves), then
the threads combine their partials in a tree through local memory.  Otherwise
(*staged*), the source goes to local memory and each result element is combined
serially by the threads that hold it.  Sort, histogram and dot are staged; scans run
Hillis-Steele rounds over the staged tile.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core import dtypes as D  # noqa: N812
from ...core.dtypes import DType, ScalarType
from ...core.ir import Instr, Value
from ...core.kinds import ReduceKind
from ...core.ops import Op
from .emitter import Handle
from .layout import Layout, row_major_strides
from .legalize import legal_op
from .lower import Index, Lowering, rule
from .relayout import stage
from .warp_scan import Combine, warp_scan


def _wide(dt: ScalarType, kind: ReduceKind) -> ScalarType:
    """16-bit float sums and products accumulate in float32."""
    if isinstance(dt, DType) and dt.is_floating and dt.bits < 32 and kind in (ReduceKind.SUM, ReduceKind.PROD):
        return D.float32
    return dt


def combiner(lw: Lowering, instr: Instr) -> tuple[list[ScalarType], Combine]:
    """The operand types the combine works in, and the combine itself."""
    if instr.op is Op.ARGREDUCE:
        vdt = instr.operands[0].type.element
        return [vdt, D.int32], _arg_combine(lw, instr.attrs.kind, vdt)
    kind = instr.attrs.kind
    if kind is ReduceKind.CUSTOM:
        (region,) = instr.regions

        def custom(a: list[Handle], b: list[Handle]) -> list[Handle]:
            for v, h in zip(region.args, [*a, *b]):
                lw.env[v] = [h]
            return [hs[0] for hs in lw.lower_block(region)]
        return [v.type.dtype for v in instr.operands], custom
    types = [_wide(v.type.dtype, kind) for v in instr.operands]
    ops = [legal_op(kind.op, t) for t in types]
    return types, lambda a, b: [lw.e.binary(op, x, y, t) for x, y, t, op in zip(a, b, types, ops)]


def _arg_combine(lw: Lowering, kind: ReduceKind, vdt: DType) -> Combine:
    e = lw.e
    better = Op.GT if kind is ReduceKind.MAX else Op.LT

    def combine(a: list[Handle], b: list[Handle]) -> list[Handle]:
        (va, ia), (vb, ib) = a, b
        lower = e.binary(Op.LT, ib, ia, D.int32)
        take = e.binary(Op.OR, e.binary(better, vb, va, vdt),
                        e.binary(Op.AND, e.binary(Op.EQ, vb, va, vdt), lower, D.int1), D.int1)
        if vdt.is_floating:
            na, nb = e.unary(Op.ISNAN, va, vdt), e.unary(Op.ISNAN, vb, vdt)
            both = e.binary(Op.AND, na, nb, D.int1)
            take = e.select(na, e.select(both, lower, e.constant(True, D.int1), D.int1),
                            e.binary(Op.AND, take, e.unary(Op.NOT, nb, D.int1), D.int1), D.int1)
        return [e.select(take, vb, va, vdt), e.select(take, ib, ia, D.int32)]
    return combine


def _inputs(lw: Lowering, instr: Instr, types: Sequence[ScalarType]) -> list[list[Handle]]:
    """Per operand, the per-thread elements in the combine's types (argreduce: + index)."""
    src = instr.operands[0]
    lay = lw.layout(src)
    if instr.op is Op.ARGREDUCE:
        axis = instr.attrs.axis
        inner = row_major_strides(src.type.shape)[axis]
        idx = [lw.idx(lw.iop(Op.MOD, lw.iop(Op.IDIV, lw.flat_index(lay, j), inner), src.type.shape[axis]))
               for j in range(lay.per_thread)]
        return [lw.env[src], idx]
    out = []
    for v, t in zip(instr.operands, types):
        hs = lw.env[v]
        out.append(hs if v.type.dtype == t else [lw.e.cast(h, v.type.element, t) for h in hs])  # type: ignore[arg-type]
    return out


def _finish(lw: Lowering, instr: Instr, values: list[list[Handle]]) -> list[list[Handle]]:
    if instr.op is Op.ARGREDUCE:
        return [values[1]]
    return [hs if t == v.type.dtype else [lw.e.cast(h, t, v.type.element) for h in hs]  # type: ignore[arg-type]
            for v, hs, t in zip(instr.operands, values, combiner(lw, instr)[0])]


@rule(Op.REDUCE, Op.ARGREDUCE)
def _reduce(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    types, combine = combiner(lw, instr)
    src = instr.operands[0]
    lay, dst = lw.layout(src), lw.layout(instr.results[0])
    axis = instr.attrs.axis
    length = src.type.shape[axis]
    inputs = _inputs(lw, instr, types)
    last = axis == len(src.type.shape) - 1
    if dst.numel == 1 or (last and length % (lay.threads * lay.vec) == 0):
        return _finish(lw, instr, _tree(lw, lay, dst, length, types, combine, inputs))
    grouped = _row_groups(lw, lay, dst, length, types, combine, inputs) if last else None
    if grouped is not None:
        return _finish(lw, instr, grouped)
    return _finish(lw, instr, _staged(lw, instr, types, combine, inputs))


def _row_groups(lw: Lowering, lay: Layout, dst: Layout, length: int, types: Sequence[ScalarType],
                combine: Combine, inputs: list[list[Handle]]) -> list[list[Handle]] | None:
    """A last-axis reduction whose rows are shorter than a round of the layout: a row's chunks lie
    on ``length / vec`` consecutive threads (a power of two).  Each thread combines its chunk,
    butterfly shuffles over the lanes of its row's group combine the group's (at most a warp's),
    and the groups' totals meet in local memory, where every thread combines the parts of the rows
    it holds.  None where the target has no shuffle or a chunk would straddle two rows."""
    e, threads = lw.e, lw.threads
    warp = e.target.warp_size
    per_row = length // lay.vec  # chunks, hence threads of one round, per row
    if length % lay.vec or per_row >= threads or warp <= 1 or threads % warp or warp & (warp - 1):
        return None
    lanes = min(per_row, warp)
    parts = per_row // lanes  # warps one row spans
    totals = []
    for r in range(lay.rounds):
        values = [ins[r * lay.vec] for ins in inputs]
        for k in range(1, lay.vec):
            values = combine(values, [ins[r * lay.vec + k] for ins in inputs])
        total = _butterfly(lw, values, types, combine, lanes)
        if total is None:
            return None
        totals.append(total)
    sizes = [lw.local_size(t, dst.numel * parts) for t in types]
    base = lw.exchanges.start(sum(sizes))
    offsets = [base + sum(sizes[:k]) for k in range(len(types))]
    lw.reserve_local(base + sum(sizes))
    first_lane = e.binary(Op.EQ, lw.idx(lw.iop(Op.MOD, lw.tid, lanes)), lw.const(0, D.int32), D.int32)
    for r, values in enumerate(totals):
        chunk = lw.chunk(lay, r * lay.vec)
        at = lw.idx(lw.iop(Op.IDIV, chunk, lanes))  # row * parts + the part of the row this warp holds
        own = lw.owner(lay, r * lay.vec)
        mask = first_lane if own is None else e.binary(Op.AND, first_lane, own, D.int1)
        for o, h, t in zip(offsets, values, types):
            e.local_store(o, at, h, t, mask)
    e.barrier()
    outs: list[list[Handle]] = [[] for _ in types]
    for j in range(dst.per_thread):
        row = lw.iop(Op.MUL, lw.flat_index(dst, j), parts)
        acc = [e.local_load(o, lw.idx(row), t) for o, t in zip(offsets, types)]
        for p in range(1, parts):
            acc = combine(acc, [e.local_load(o, lw.idx(lw.iop(Op.ADD, row, p)), t) for o, t in zip(offsets, types)])
        for k, h in enumerate(acc):
            outs[k].append(h)
    lw.exchanges.end(offsets[0], sum(sizes))
    return outs


def _tree(lw: Lowering, lay: Layout, dst: Layout, length: int, types: Sequence[ScalarType],
          combine: Combine, inputs: list[list[Handle]]) -> list[list[Handle]]:
    e, threads = lw.e, lw.threads
    rows = dst.numel
    active = min(threads, lay.nchunks)          # threads holding at least one owned element
    width = 1 << (active - 1).bit_length()
    partial: dict[int, list[Handle]] = {}
    for j in range(lay.per_thread):
        r, _ = lay.slot(j)
        row = 0 if rows == 1 else (r * threads * lay.vec) // length
        x = [ins[j] for ins in inputs]
        if row not in partial:
            partial[row] = x
            continue
        merged = combine(partial[row], x)
        own = lw.owner(lay, j)
        partial[row] = merged if own is None else [
            e.select(own, m, p, t) for m, p, t in zip(merged, partial[row], types)]
    if active == threads:
        shuffled = _across_warps(lw, dst, rows, types, combine, partial)
        if shuffled is not None:
            return shuffled
    sizes = [lw.local_size(t, rows * width) for t in types]
    base = lw.exchanges.start(sum(sizes))
    offsets = [base + sum(sizes[:k]) for k in range(len(types))]
    lw.reserve_local(base + sum(sizes))
    in_tree = None if active == threads else e.binary(Op.LT, lw.tid, lw.const(active, D.int32), D.int32)
    for row in range(rows):
        for o, h, t in zip(offsets, partial[row], types):
            e.local_store(o, lw.idx(lw.iop(Op.ADD, lw.tid, row * width)), h, t, in_tree)
    e.barrier()
    levels = e.tree_levels_per_barrier
    step = width // 2
    while step:
        first_alone = step * 2 > active  # the first level, where some slots hold no partial
        n = 1 if first_alone else min(levels, step.bit_length())  # levels before the next barrier
        spacing = step >> (n - 1)
        if levels > 1 and spacing == 1 and not first_alone:
            break  # every thread combines the last levels itself, below

        def level(n: int = n, spacing: int = spacing) -> None:
            for row in range(rows):
                at = [lw.idx(lw.iop(Op.ADD, lw.tid, row * width + m * spacing)) for m in range(2 ** n)]
                for o, h, t in zip(offsets, _gather(lw, offsets, types, combine, at), types):
                    e.local_store(o, at[0], h, t, None)
        cond = e.binary(Op.LT, lw.tid, lw.const(spacing, D.int32), D.int32)
        if first_alone:
            cond = e.binary(Op.AND, cond, e.binary(Op.LT, lw.tid, lw.const(active - step, D.int32),
                                                   D.int32), D.int1)
        e.when(cond, lw.in_scope(level))
        e.barrier()
        step = spacing // 2
    outs: list[list[Handle]] = [[] for _ in types]
    for j in range(dst.per_thread):
        at = lw.iop(Op.MUL, lw.flat_index(dst, j), width)
        last = [lw.idx(lw.iop(Op.ADD, at, m)) for m in range(2 * step or 1)]
        for k, h in enumerate(_gather(lw, offsets, types, combine, last)):
            outs[k].append(h)
    lw.exchanges.end(base, sum(sizes))
    return outs


def _gather(lw: Lowering, offsets: Sequence[int], types: Sequence[ScalarType], combine: Combine,
            at: Sequence[Handle]) -> list[Handle]:
    """The partials at indices ``at`` (a power of two of them) in local memory, combined as
    len(at) / 2, then len(at) / 4... threads of the tree would: the same order, the same roundings."""
    values = [[lw.e.local_load(o, i, t) for o, t in zip(offsets, types)] for i in at]
    while len(values) > 1:
        half = len(values) // 2
        values = [combine(values[m], values[m + half]) for m in range(half)]
    return values[0]


def _across_warps(lw: Lowering, dst: Layout, rows: int, types: Sequence[ScalarType], combine: Combine,
                  partial: dict[int, list[Handle]]) -> list[list[Handle]] | None:
    """Butterfly shuffles inside each warp, then one value per warp through local memory.

    Every thread owns distinct elements here, so each warp's lanes hold disjoint partials;
    after log2(warp) shuffle steps every lane has its warp's total.  Lane 0 of each warp
    publishes it, and every thread combines the warps' totals of the rows it needs.
    """
    e, threads = lw.e, lw.threads
    warp = e.target.warp_size
    if warp <= 1 or threads % warp or warp & (warp - 1):
        return None
    totals: dict[int, list[Handle]] = {}
    for row, values in partial.items():
        total = _butterfly(lw, values, types, combine, warp)
        if total is None:
            return None
        totals[row] = total
    nwarps = threads // warp
    if nwarps == 1 and rows == 1:
        return [[totals[0][k]] * dst.per_thread for k in range(len(types))]
    offsets, off = [], 0
    for t in types:
        offsets.append(off)
        off += lw.local_size(t, rows * nwarps)
    lw.reserve_local(off)
    warp_id = lw.iop(Op.IDIV, lw.tid, warp)
    lane0 = e.binary(Op.EQ, lw.idx(lw.iop(Op.MOD, lw.tid, warp)), lw.const(0, D.int32), D.int32)
    for row, values in totals.items():
        at = lw.idx(lw.iop(Op.ADD, warp_id, row * nwarps))
        for o, h, t in zip(offsets, values, types):
            e.local_store(o, at, h, t, lane0)
    e.barrier()
    outs: list[list[Handle]] = [[] for _ in types]
    for j in range(dst.per_thread):
        base = lw.iop(Op.MUL, lw.flat_index(dst, j), nwarps) if rows > 1 else 0
        acc = [e.local_load(o, lw.idx(base), t) for o, t in zip(offsets, types)]
        for w in range(1, nwarps):
            acc = combine(acc, [e.local_load(o, lw.idx(lw.iop(Op.ADD, base, w)), t)
                                for o, t in zip(offsets, types)])
        for k, h in enumerate(acc):
            outs[k].append(h)
    e.barrier()
    return outs


def _butterfly(lw: Lowering, values: list[Handle], types: Sequence[ScalarType], combine: Combine,
               lanes: int) -> list[Handle] | None:
    """``values`` combined over each aligned group of ``lanes`` lanes (a power of two, at most a
    warp) by xor shuffles: every lane of a group ends with the group's total.  None when the
    target has no shuffle."""
    step = lanes // 2
    while step:
        other = [lw.e.shuffle_xor(v, step, t) for v, t in zip(values, types)]
        if any(o is None for o in other):
            return None
        values = combine(values, other)
        step //= 2
    return values


def _stage_all(lw: Lowering, src: Value, types: Sequence[ScalarType],
               inputs: list[list[Handle]]) -> tuple[list[int], int]:
    """Every element of each input in local memory (an exchange's start): the offsets, the bytes."""
    lay = lw.layout(src)
    sizes = [lw.local_size(t, lay.numel) for t in types]
    base = lw.exchanges.start(sum(sizes))
    offsets = [base + sum(sizes[:k]) for k in range(len(types))]
    for o, t, hs in zip(offsets, types, inputs):
        stage(lw, hs, lay, t, o)
    lw.reserve_local(base + sum(sizes))
    lw.e.barrier()
    return offsets, sum(sizes)


def _row_start(lw: Lowering, shape: tuple[int, ...], axis: int, flat: Index, keep_axis: bool) -> Index:
    """Row-major index of element 0 along ``axis`` of the row that ``flat`` is in."""
    outer_shape = shape[:axis] + shape[axis + 1:] if not keep_axis else shape
    cs = lw.coords(outer_shape, flat)
    if keep_axis:
        cs[axis] = 0
        return lw.flatten(shape, cs)
    return lw.flatten(shape, [*cs[:axis], 0, *cs[axis:]])


def _staged(lw: Lowering, instr: Instr, types: Sequence[ScalarType], combine: Combine,
            inputs: list[list[Handle]]) -> list[list[Handle]]:
    src = instr.operands[0]
    axis = instr.attrs.axis
    shape = src.type.shape
    stride, length = row_major_strides(shape)[axis], shape[axis]
    dst = lw.layout(instr.results[0])
    offsets, nbytes = _stage_all(lw, src, types, inputs)
    e = lw.e
    outs: list[list[Handle]] = [[] for _ in types]
    for j in range(dst.per_thread):
        base = _row_start(lw, shape, axis, lw.flat_index(dst, j), keep_axis=False)
        b = lw.idx(base)
        init = [e.local_load(o, b, t) for o, t in zip(offsets, types)]

        def body(k: Handle, acc: list[Handle], b: Handle = b) -> list[Handle]:
            at = e.binary(Op.ADD, b, e.binary(Op.MUL, k, lw.const(stride, D.int32), D.int32), D.int32)
            return combine(acc, [e.local_load(o, at, t) for o, t in zip(offsets, types)])
        res = e.for_range(lw.const(1, D.int32), lw.const(length, D.int32), lw.const(1, D.int32),
                          D.int32, list(zip(init, types)), lw.in_scope(body))
        for k, h in enumerate(res):
            outs[k].append(h)
    lw.exchanges.end(offsets[0], nbytes)
    return outs


@rule(Op.SCAN)
def _scan(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    """Along the last axis, each thread first scans the ``vec`` elements of each chunk it holds;
    then the chunks' totals (the elements themselves on other axes) run Hillis-Steele rounds in
    local memory (ceil(log2 n) rounds of a run-time loop; two buffers and one barrier a round for
    chunk totals, one buffer and two barriers for elements): in round r every unit combines with
    the one 2**r before it along the axis (after it, reversed).
    Last, each element combines its unit's exclusive prefix (the neighbour's total) with its own
    partial.  The earlier partial is always the left operand (the later one, reversed), so a
    custom combine sees its operands in order."""
    types, combine = combiner(lw, instr)
    src = instr.operands[0]
    axis, reverse = instr.attrs.axis, instr.attrs.reverse
    shape = src.type.shape
    stride, length = row_major_strides(shape)[axis], shape[axis]
    lay = lw.layout(src)
    values = _inputs(lw, instr, types)
    if length == 1:
        return _finish(lw, instr, values)
    e, width = lw.e, len(types)
    group = lay.vec if stride == 1 and length % lay.vec == 0 else 1  # elements scanned in registers
    units = length // group  # per row
    step_units = 1 if group > 1 else stride
    partial = [[ins[j] for ins in values] for j in range(lay.per_thread)]  # per slot, per type
    keys, positions, owners, totals = [], [], [], []
    for r in range(lay.per_thread // group):
        first = r * group
        order = range(first + group - 1, first - 1, -1) if reverse else range(first, first + group)
        for previous, j in zip(order, order[1:]):
            partial[j] = combine(partial[previous], partial[j])
        totals.append(partial[order[-1]])
        key = lw.chunk(lay, first) if group > 1 else lw.flat_index(lay, first)
        keys.append(lw.idx(key))
        positions.append(lw.idx(lw.iop(Op.MOD, key, units) if group > 1 else lw.coords(shape, key)[axis]))
        owners.append(lw.owner(lay, first))
    if stride == 1 and group == lay.vec:
        prefixes = warp_scan(lw, lay, units, reverse, types, combine, totals)
        if prefixes is not None:
            scanned: list[list[Handle]] = [[] for _ in types]
            for u, (before, has) in enumerate(prefixes):
                for j in range(u * group, (u + 1) * group):
                    done = combine(before, partial[j])
                    for k, (m, x, t) in enumerate(zip(done, partial[j], types)):
                        scanned[k].append(m if has is None else e.select(has, m, x, t))
            return _finish(lw, instr, scanned)
    count = lay.numel // group
    buffers = 2 if group > 1 else 1  # one buffer (and two barriers a round) where units are elements
    offsets, off = [], 0
    for t in types:
        offsets.append(off)
        off += lw.local_size(t, buffers * count)
    lw.reserve_local(off)
    for key, own, total in zip(keys, owners, totals):
        for o, h, t in zip(offsets, total, types):
            e.local_store(o, key, h, t, own)
    e.barrier()

    def neighbour(pos: Handle, key: Handle, distance: Handle, buffer: Handle) -> tuple[Handle, list[Handle]]:
        """(whether the unit ``distance`` before, after when reversed, is in the row; its value)."""
        if reverse:
            has = e.binary(Op.LT, e.binary(Op.ADD, pos, distance, D.int32), lw.const(units, D.int32), D.int32)
            at = e.binary(Op.ADD, key, e.binary(Op.MUL, distance, lw.const(step_units, D.int32), D.int32), D.int32)
        else:
            has = e.binary(Op.GE, pos, distance, D.int32)
            at = e.binary(Op.SUB, key, e.binary(Op.MUL, distance, lw.const(step_units, D.int32), D.int32), D.int32)
        at = e.binary(Op.ADD, e.select(has, at, key, D.int32), buffer, D.int32)
        return has, [e.local_load(o, at, t) for o, t in zip(offsets, types)]

    def round_(r: Handle, acc: list[Handle]) -> list[Handle]:
        distance = e.binary(Op.SHL, lw.const(1, D.int32), r, D.int32)
        read = write = lw.const(0, D.int32)
        if buffers == 2:
            parity = e.binary(Op.AND, r, lw.const(1, D.int32), D.int32)
            read = e.binary(Op.MUL, parity, lw.const(count, D.int32), D.int32)
            write = e.binary(Op.SUB, lw.const(count, D.int32), read, D.int32)
        merged = []
        for u, (key, pos) in enumerate(zip(keys, positions)):
            own = acc[u * width:(u + 1) * width]
            has, other = neighbour(pos, key, distance, read)
            merged += [e.select(has, m, x, t) for m, x, t in zip(combine(other, own), own, types)]
        if buffers == 1:
            e.barrier()
        for u, (key, owner) in enumerate(zip(keys, owners)):
            at = e.binary(Op.ADD, key, write, D.int32)
            for k, (o, t) in enumerate(zip(offsets, types)):
                e.local_store(o, at, merged[u * width + k], t, owner)
        e.barrier()
        return merged
    rounds = (units - 1).bit_length()
    carried = [(h, t) for total in totals for h, t in zip(total, types)]
    if rounds:
        e.for_range(lw.const(0, D.int32), lw.const(rounds, D.int32), lw.const(1, D.int32), D.int32, carried,
                    lw.in_scope(round_))
    final = lw.const((rounds % 2) * count if buffers == 2 else 0, D.int32)
    outs: list[list[Handle]] = [[] for _ in types]
    for u, (key, pos) in enumerate(zip(keys, positions)):
        has, before = neighbour(pos, key, lw.const(1, D.int32), final)
        for j in range(u * group, (u + 1) * group):
            for k, (m, x, t) in enumerate(zip(combine(before, partial[j]), partial[j], types)):
                outs[k].append(e.select(has, m, x, t))
    e.barrier()
    return _finish(lw, instr, outs)
