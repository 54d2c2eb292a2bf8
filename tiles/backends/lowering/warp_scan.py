"""Last-axis scans through warp shuffles: no local-memory rounds where a row's chunks sit on lanes.

A scan's ``units`` are its rows' chunks (``vec`` consecutive elements a thread first scans in
registers, ``reductions._scan``); chunk ``c`` is on thread ``c % threads``.  Row shapes that map
onto lanes without gaps:

- a row of ``units`` chunks, a power of two no wider than a warp, lies on an aligned group of that
  many lanes: shuffles over the group give each lane the combination of the lanes before it, and
  nothing goes through local memory;
- a row of whole warps (``units`` a multiple of the warp) is cut into warp *segments*, segment
  ``s`` being chunks ``s * warp ..`` (one warp's chunks of one round): shuffles scan each segment
  and its last lane in scan order publishes its total; after one barrier each thread combines the
  totals of the segments before its own in its row.  Where the tile has at most a warp's segments,
  lane ``s`` of every warp reads segment ``s``'s total, the lanes scan the totals in groups of a
  row's segments and each thread takes its segment's prefix from lane ``s`` by an indexed shuffle
  (``_segments_on_lanes``: one read a thread).  Otherwise a row of whole rounds (``units`` a
  multiple of the threads) reads the totals of its rounds (``_across_segments``), and a row inside
  a round the ``units / warp - 1`` totals before its own (``_within_rounds``).

Within a group of lanes the scan is Hillis-Steele over indexed shuffles (``_lanes_scan_up``): at
distance ``d`` a lane takes the running value of the lane ``d`` before it in scan order as the left
operand, so a custom combine sees its operands in order, and one more shuffle gives the exclusive
prefix; only the running value stays live.  Targets with butterfly shuffles only use
``_lanes_scan_xor``, which keeps the group total and the exclusive prefix at each step.
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
    lane = lw.idx(lw.iop(Op.MOD, lw.tid, warp))  # groups of lanes are aligned: a lane's low bits place it
    scanned = []
    indexed = True  # indexed shuffles move every type (else butterflies only)
    for total in totals:
        done = _lanes_scan(lw, lane, lanes, reverse, types, combine, total, indexed)
        if done is None and indexed:
            indexed = False
            done = _lanes_scan(lw, lane, lanes, reverse, types, combine, total, indexed)
        if done is None:
            return None
        scanned.append(done)
    if lanes == units:
        return [excl for excl, _ in scanned]
    if indexed and lay.nchunks // warp <= warp and not (units // warp) & (units // warp - 1):
        return _segments_on_lanes(lw, lay, units, reverse, types, combine, scanned)
    if units % threads == 0:
        return _across_segments(lw, lay, units, reverse, types, combine, scanned)
    return _within_rounds(lw, lay, units, reverse, types, combine, scanned)


def _lanes_scan(lw: Lowering, lane: Handle, lanes: int, reverse: bool, types: Sequence[ScalarType],
                combine: Combine, value: list[Handle], indexed: bool) -> tuple[Maybe, list[Handle]] | None:
    """(exclusive prefix over the aligned group of ``lanes`` lanes ``lane`` is in, the group's total)
    by indexed shuffles (else butterflies); the total is exact in the group's last lane in scan order
    (``last_lane``), the one that publishes it."""
    if lanes == 1:
        return (value, lw.const(False, D.int1)), value
    if indexed:
        return _lanes_scan_up(lw, lane, lanes, reverse, types, combine, value)
    return _lanes_scan_xor(lw, lane, lanes, reverse, types, combine, value)


def last_lane(lw: Lowering, lane: Handle, lanes: int, reverse: bool) -> Handle:
    """int1: this lane is its group's last in scan order (it holds the group's total)."""
    pos = lw.e.binary(Op.AND, lane, lw.const(lanes - 1, D.int32), D.int32)
    return lw.e.binary(Op.EQ, pos, lw.const(0 if reverse else lanes - 1, D.int32), D.int32)


def _lanes_scan_up(lw: Lowering, lane: Handle, lanes: int, reverse: bool, types: Sequence[ScalarType],
                   combine: Combine, value: list[Handle]) -> tuple[Maybe, list[Handle]] | None:
    """Hillis-Steele over the group's lanes by indexed shuffles: at distance ``d`` each lane with a
    lane ``d`` before it in scan order takes that lane's running value as its left operand; one
    more shuffle moves the inclusive values one lane on (the exclusive prefix).  Only the running
    value stays live (an xor scan keeps each round's partner values for the exclusive prefix)."""
    e = lw.e
    pos = e.binary(Op.AND, lane, lw.const(lanes - 1, D.int32), D.int32)
    warp_mask = lw.const(e.target.warp_size - 1, D.int32)

    def source(d: int) -> tuple[Handle, Handle]:
        """(the lane ``d`` before this one in scan order, modulo the warp; whether it is in the group)."""
        if reverse:
            src = e.binary(Op.ADD, lane, lw.const(d, D.int32), D.int32)
            ok = e.binary(Op.LT, pos, lw.const(lanes - d, D.int32), D.int32)
        else:
            src = e.binary(Op.SUB, lane, lw.const(d, D.int32), D.int32)
            ok = e.binary(Op.GE, pos, lw.const(d, D.int32), D.int32)
        return e.binary(Op.AND, src, warp_mask, D.int32), ok

    inclusive = value
    d = 1
    while d < lanes:
        src, ok = source(d)
        other = _shuffled(lw, inclusive, src, types)
        if other is None:
            return None
        inclusive = _select(lw, ok, combine(other, inclusive), inclusive, types)
        d *= 2
    src, ok = source(1)
    excl = _shuffled(lw, inclusive, src, types)
    assert excl is not None
    return (excl, ok), inclusive


def _shuffled(lw: Lowering, values: list[Handle], lane: Handle, types: Sequence[ScalarType]) -> list[Handle] | None:
    """Each value from lane ``lane`` of the warp; None where the target cannot move one."""
    out = []
    for v, t in zip(values, types):
        moved = lw.e.shuffle_index(v, lane, t)
        if moved is None:
            return None
        out.append(moved)
    return out


def _lanes_scan_xor(lw: Lowering, lane: Handle, lanes: int, reverse: bool, types: Sequence[ScalarType],
                    combine: Combine, value: list[Handle]) -> tuple[Maybe, list[Handle]] | None:
    """(exclusive prefix, the group's total in every lane) by xor shuffles (targets without an
    indexed shuffle)."""
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
    publisher = last_lane(lw, lw.idx(lw.iop(Op.MOD, lw.tid, warp)), warp, reverse)
    for r, (_, total) in enumerate(scanned):
        at = lw.idx(lw.iop(Op.ADD, warp_id, r * nwarps))
        for o, h, t in zip(offsets, total, types):
            e.local_store(o, at, h, t, publisher)
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
    (by its owner's last lane in scan order), and after one barrier every thread combines the totals of the segments
    before its own in its row (after it, reversed) with its exclusive prefix in its segment."""
    e = lw.e
    warp = e.target.warp_size
    per_row = units // warp  # segments a row
    offsets, off = [], 0
    for t in types:
        offsets.append(off)
        off += lw.local_size(t, lay.nchunks // warp)
    lw.reserve_local(off)
    publisher = last_lane(lw, lw.idx(lw.iop(Op.MOD, lw.tid, warp)), warp, reverse)
    firsts, places = [], []
    for r, (_, total) in enumerate(scanned):
        chunk = lw.chunk(lay, r * lay.vec)
        seg = lw.idx(lw.iop(Op.IDIV, chunk, warp))
        owner = lw.owner(lay, r * lay.vec)
        store = publisher if owner is None else e.binary(Op.AND, publisher, owner, D.int1)
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


def _segments_on_lanes(lw: Lowering, lay: Layout, units: int, reverse: bool, types: Sequence[ScalarType],
                       combine: Combine, scanned: list[tuple[Maybe, list[Handle]]]) -> list[Maybe]:
    """At most a warp's segments in the whole tile, a power of two of them a row: the last lane of
    each segment's owner publishes its total, and after one barrier lane ``s`` of every warp reads
    segment ``s``'s total, the lanes scan them in groups of a row's segments, and each thread takes
    its segment's exclusive prefix from lane ``s`` (one indexed shuffle a chunk)."""
    e = lw.e
    warp = e.target.warp_size
    nseg, per_row = lay.nchunks // warp, units // warp
    offsets, off = [], 0
    for t in types:
        offsets.append(off)
        off += lw.local_size(t, nseg)
    lane = lw.idx(lw.iop(Op.MOD, lw.tid, warp))
    segs = []
    for r in range(len(scanned)):
        segs.append(lw.idx(lw.iop(Op.IDIV, lw.chunk(lay, r * lay.vec), warp)))
    lw.reserve_local(off)
    publisher = last_lane(lw, lane, warp, reverse)
    for r, (_, total) in enumerate(scanned):
        owner = lw.owner(lay, r * lay.vec)
        store = publisher if owner is None else e.binary(Op.AND, publisher, owner, D.int1)
        for o, h, t in zip(offsets, total, types):
            e.local_store(o, segs[r], h, t, store)
    e.barrier()
    at = lane if nseg == warp else lw.idx(lw.iop(Op.MOD, lane, nseg))
    totals = [e.local_load(o, at, t) for o, t in zip(offsets, types)]
    done = _lanes_scan(lw, lane, per_row, reverse, types, combine, totals, True)
    assert done is not None
    (seg_excl, _), _ = done
    out: list[Maybe] = []
    for ((excl, has), _), seg in zip(scanned, segs):
        prefix = _shuffled(lw, seg_excl, seg, types)
        assert prefix is not None
        # segments before this one in its row (after it, reversed)
        place = lw.idx(lw.iop(Op.MOD, seg, per_row))
        seg_has = e.binary(Op.NE, place, lw.const(per_row - 1 if reverse else 0, D.int32), D.int32)
        out.append(_join(lw, types, combine, (prefix, seg_has), (excl, has)))
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
