"""Last-axis scans through warp shuffles: no local-memory rounds where a row's chunks sit on lanes.

A scan's ``units`` are its rows' chunks (``vec`` consecutive elements a thread first scans in
registers, ``reductions._scan``); chunk ``c`` is on thread ``c % threads``.  Two row shapes map
onto lanes without gaps:

- a row of ``units`` chunks, a power of two no wider than a warp, lies on an aligned group of that
  many lanes: xor shuffles over the group give each lane the combination of the lanes before it,
  and nothing goes through local memory;
- a row of whole rounds (``units`` a multiple of the threads) is cut into warp *segments*, one per
  (round, warp): shuffles scan each segment, lane 0 publishes its total, and after one barrier each
  thread combines the totals of the segments before its own;
- a row of whole warps inside a round (``units`` a multiple of the warp, not of the threads: Mamba's
  16x256 tile on 4 warps, two warps a row) is cut the same way, one segment per warp of each round:
  lane 0 of each segment publishes its total, and after one barrier each thread combines the totals
  of the segments before its own in its row (``units / warp - 1`` reads a round), where the
  local-memory rounds took ``log2(units)`` barriers.

The shuffle scan keeps a lane's group total and the exclusive prefix of the lanes before it; at the
step over bit ``b``, the lane whose partner comes earlier (bit set; clear when reversed) takes the
partner's total as the left operand, so a custom combine sees its operands in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core import dtypes as D  # noqa: N812
from ...core.dtypes import ScalarType
from ...core.ops import Op
from .emitter import Handle
from .layout import Layout
from .lower import Lowering

Combine = Callable[[list[Handle], list[Handle]], list[Handle]]
Maybe = tuple[list[Handle], Handle | None]  # values, and int1 "holds a value" (None: always)


def warp_scan(lw: Lowering, lay: Layout, units: int, reverse: bool, types: Sequence[ScalarType],
              combine: Combine, totals: list[list[Handle]]) -> list[Maybe] | None:
    """For each of this thread's chunks (``totals``: each chunk's own total), the combination of the
    chunks before it in its row (after it, reversed), with whether there are any; None where the
    row shape does not fit (module doc) or the target has no shuffle."""
    e, threads = lw.e, lw.threads
    warp = e.target.warp_size
    if warp <= 1 or warp & (warp - 1) or threads % warp:
        return None
    if units <= warp and not units & (units - 1):
        lanes = units
    elif units % warp == 0:
        lanes = warp
    else:
        return None
    lane = lw.idx(lw.iop(Op.MOD, lw.tid, lanes))
    scanned = []
    for total in totals:
        done = _lanes_scan(lw, lane, lanes, reverse, types, combine, total)
        if done is None:
            return None
        scanned.append(done)
    if lanes == units:
        return [excl for excl, _ in scanned]
    if units % threads == 0:
        return _across_segments(lw, lay, units, reverse, types, combine, scanned)
    return _within_rounds(lw, lay, units, reverse, types, combine, scanned)


def _lanes_scan(lw: Lowering, lane: Handle, lanes: int, reverse: bool, types: Sequence[ScalarType],
                combine: Combine, value: list[Handle]) -> tuple[Maybe, list[Handle]] | None:
    """(exclusive prefix over the group of ``lanes`` lanes, the group's total) by xor shuffles."""
    e = lw.e
    zero = lw.const(0, D.int32)
    total, excl, has = value, value, None
    bit = 1
    while bit < lanes:
        other = [e.shuffle_xor(v, bit, t) for v, t in zip(total, types)]
        if any(o is None for o in other):
            return None
        # the partner comes before this lane in scan order
        later = e.binary(Op.EQ if reverse else Op.NE, e.binary(Op.AND, lane, lw.const(bit, D.int32), D.int32),
                         zero, D.int32)
        taken = other if has is None and bit == 1 else _select(lw, has, combine(other, excl), other, types)
        excl = _select(lw, later, taken, excl, types)
        has = later if has is None else e.binary(Op.OR, has, later, D.int1)
        total = _select(lw, later, combine(other, total), combine(total, other), types)
        bit *= 2
    return (excl, has), total


def _across_segments(lw: Lowering, lay: Layout, units: int, reverse: bool, types: Sequence[ScalarType],
                     combine: Combine, scanned: list[tuple[Maybe, list[Handle]]]) -> list[Maybe]:
    """Rows of whole rounds: each (round, warp) segment's total through local memory, then every
    thread combines the totals of the segments before its own with its exclusive prefix in it."""
    e, threads = lw.e, lw.threads
    warp = e.target.warp_size
    nwarps, per_row = threads // warp, units // threads
    offsets, off = [], 0
    for t in types:
        offsets.append(off)
        off += lw.local_size(t, lay.rounds * nwarps)
    lw.reserve_local(off)
    warp_id = lw.idx(lw.iop(Op.IDIV, lw.tid, warp))
    lane0 = e.binary(Op.EQ, lw.idx(lw.iop(Op.MOD, lw.tid, warp)), lw.const(0, D.int32), D.int32)
    for r, (_, total) in enumerate(scanned):
        at = lw.idx(lw.iop(Op.ADD, warp_id, r * nwarps))
        for o, h, t in zip(offsets, total, types):
            e.local_store(o, at, h, t, lane0)
    e.barrier()
    out: list[Maybe] = []
    for row in range(lay.rounds // per_row):
        rounds = [row * per_row + k for k in range(per_row)]
        before: list[Handle] | None = None  # the whole rounds before this one, in scan order
        prefix: dict[int, Maybe] = {}
        for r in reversed(rounds) if reverse else rounds:
            part, part_has = before, None if before is not None else lw.const(False, D.int1)
            for w in range(nwarps - 1, -1, -1) if reverse else range(nwarps):
                seg = [e.local_load(o, lw.const(r * nwarps + w, D.int32), t) for o, t in zip(offsets, types)]
                ahead = e.binary(Op.GT if reverse else Op.LT, lw.const(w, D.int32), warp_id, D.int32)
                taken = seg if part is None else _select(lw, part_has, combine(part, seg), seg, types)
                part = taken if part is None else _select(lw, ahead, taken, part, types)
                part_has = None if part_has is None else e.binary(Op.OR, part_has, ahead, D.int1)
                before = seg if before is None else combine(before, seg)
            assert part is not None
            prefix[r] = (part, part_has)
        for r in rounds:
            (excl, has), (seg_prefix, seg_has) = scanned[r][0], prefix[r]
            out.append(_join(lw, types, combine, (seg_prefix, seg_has), (excl, has)))
    e.barrier()
    return out


def _within_rounds(lw: Lowering, lay: Layout, units: int, reverse: bool, types: Sequence[ScalarType],
                   combine: Combine, scanned: list[tuple[Maybe, list[Handle]]]) -> list[Maybe]:
    """Rows of whole warps, fewer chunks than threads: segment ``s`` is chunks ``s * warp ..`` (one
    warp's chunks of one round, never crossing a row).  Each segment's total goes to local memory
    (by lane 0 of its owner), and after one barrier every thread combines the totals of the segments
    before its own in its row (after it, reversed) with its exclusive prefix in its segment."""
    e = lw.e
    warp = e.target.warp_size
    per_row = units // warp  # segments a row
    offsets, off = [], 0
    for t in types:
        offsets.append(off)
        off += lw.local_size(t, lay.nchunks // warp)
    lw.reserve_local(off)
    lane0 = e.binary(Op.EQ, lw.idx(lw.iop(Op.MOD, lw.tid, warp)), lw.const(0, D.int32), D.int32)
    firsts, places = [], []
    for r, (_, total) in enumerate(scanned):
        chunk = lw.chunk(lay, r * lay.vec)
        seg = lw.idx(lw.iop(Op.IDIV, chunk, warp))
        owner = lw.owner(lay, r * lay.vec)
        store = lane0 if owner is None else e.binary(Op.AND, lane0, owner, D.int1)
        for o, h, t in zip(offsets, total, types):
            e.local_store(o, seg, h, t, store)
        # the segment's place in its row; the same in every full round when rows divide the threads
        if lay.round_is_full(r) and lay.threads % units == 0:
            place = lw.iop(Op.IDIV, lw.iop(Op.MOD, lw.tid, units), warp)
        else:
            place = lw.iop(Op.IDIV, lw.iop(Op.MOD, chunk, units), warp)
        places.append(lw.idx(place))
        firsts.append(lw.idx(lw.iop(Op.SUB, seg, place)))
    e.barrier()
    out: list[Maybe] = []
    for ((excl, has), _), first, place in zip(scanned, firsts, places):
        part: list[Handle] | None = None
        part_has: Handle | None = None
        for k in range(per_row - 1, 0, -1) if reverse else range(per_row - 1):
            at = e.binary(Op.ADD, first, lw.const(k, D.int32), D.int32)
            seg_total = [e.local_load(o, at, t) for o, t in zip(offsets, types)]
            # segment k comes before this thread's in scan order
            ahead = e.binary(Op.GT if reverse else Op.LT, lw.const(k, D.int32), place, D.int32)
            if part is None:
                part, part_has = seg_total, ahead
            else:
                assert part_has is not None
                part = _select(lw, part_has, _select(lw, ahead, combine(part, seg_total), part, types),
                               seg_total, types)
                part_has = e.binary(Op.OR, part_has, ahead, D.int1)
        assert part is not None
        out.append(_join(lw, types, combine, (part, part_has), (excl, has)))
    e.barrier()
    return out


def _join(lw: Lowering, types: Sequence[ScalarType], combine: Combine, first: Maybe, second: Maybe) -> Maybe:
    """``first`` then ``second``, each of which may hold nothing."""
    (a, a_has), (b, b_has) = first, second
    both = combine(a, b)
    if a_has is None:
        return (both if b_has is None else _select(lw, b_has, both, a, types)), None
    if b_has is None:
        return _select(lw, a_has, both, b, types), None
    value = _select(lw, a_has, _select(lw, b_has, both, a, types), b, types)
    return value, lw.e.binary(Op.OR, a_has, b_has, D.int1)


def _select(lw: Lowering, cond: Handle | None, a: list[Handle], b: list[Handle],
            types: Sequence[ScalarType]) -> list[Handle]:
    if cond is None:
        return a
    return [lw.e.select(cond, x, y, t) for x, y, t in zip(a, b, types)]
