"""Sort, histogram and dot: staged in local memory, each result element computed
by the threads that hold it with a run-time loop."""

from __future__ import annotations

from ...core import dtypes as D  # noqa: N812
from ...core.dtypes import DType
from ...core.ir import Instr
from ...core.ops import Op
from .emitter import Handle
from .lower import Lowering, rule
from .relayout import stage


@rule(Op.SORT)
def _sort(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    """Rank sort: an element's place is the number of elements that go before it."""
    src = instr.operands[0]
    dt: DType = src.type.element
    lay = lw.layout(src)
    length = src.type.shape[-1]
    e = lw.e
    size = lw.local_size(dt, lay.numel)
    lw.reserve_local(2 * size)
    stage(lw, lw.env[src], lay, dt)
    e.barrier()

    def before(a: Handle, b: Handle) -> Handle:
        """a sorts strictly before b (ascending, NaN last)."""
        lt = e.binary(Op.LT, a, b, dt)
        if dt.is_floating:
            lt = e.binary(Op.OR, lt, e.binary(Op.AND, e.unary(Op.NOT, e.unary(Op.ISNAN, a, dt), D.int1),
                                              e.unary(Op.ISNAN, b, dt), D.int1), D.int1)
        return lt

    one, zero = lw.const(1, D.int32), lw.const(0, D.int32)
    for j, x in enumerate(lw.env[src]):
        flat = lw.flat_index(lay, j)
        pos = lw.iop(Op.MOD, flat, length)
        base = lw.idx(lw.iop(Op.SUB, flat, pos))
        here = lw.idx(pos)

        def count(k: Handle, acc: list[Handle], x: Handle = x, base: Handle = base,
                  pos: Handle = here) -> list[Handle]:
            y = e.local_load(0, e.binary(Op.ADD, base, k, D.int32), dt)
            first = before(x, y) if instr.attrs.descending else before(y, x)
            same = e.unary(Op.NOT, e.binary(Op.OR, before(x, y), before(y, x), D.int1), D.int1)
            tie = e.binary(Op.AND, same, e.binary(Op.LT, k, pos, D.int32), D.int1)
            hit = e.binary(Op.OR, first, tie, D.int1)
            return [e.binary(Op.ADD, acc[0], e.select(hit, one, zero, D.int32), D.int32)]
        (rank,) = e.for_range(zero, lw.const(length, D.int32), one, D.int32, [(zero, D.int32)],
                              lw.in_scope(count))
        e.local_store(size, e.binary(Op.ADD, base, rank, D.int32), x, dt, lw.owner(lay, j))
    e.barrier()
    out = [e.local_load(size, lw.idx(lw.flat_index(lay, j)), dt) for j in range(lay.per_thread)]
    e.barrier()
    return [out]


@rule(Op.HISTOGRAM)
def _histogram(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    src = instr.operands[0]
    dt: DType = src.type.element
    lay, dst = lw.layout(src), lw.layout(instr.result)
    e = lw.e
    lw.reserve_local(lw.local_size(dt, lay.numel))
    stage(lw, lw.env[src], lay, dt)
    e.barrier()
    one, zero = lw.const(1, D.int32), lw.const(0, D.int32)
    out = []
    for j in range(dst.per_thread):
        b = e.cast(lw.idx(lw.flat_index(dst, j)), D.int32, dt)

        def count(k: Handle, acc: list[Handle], b: Handle = b) -> list[Handle]:
            hit = e.binary(Op.EQ, e.local_load(0, k, dt), b, dt)
            return [e.binary(Op.ADD, acc[0], e.select(hit, one, zero, D.int32), D.int32)]
        out += e.for_range(zero, lw.const(lay.numel, D.int32), one, D.int32, [(zero, D.int32)],
                           lw.in_scope(count))
    e.barrier()
    return [out]


def to_tf32(lw: Lowering, h: Handle) -> Handle:
    """Round a float32 to 10 mantissa bits, to nearest even (what tf32 inputs keep)."""
    e, u = lw.e, D.uint32
    bits = e.bitcast(h, D.float32, u)
    odd = e.binary(Op.AND, e.binary(Op.SHR, bits, e.constant(13, u), u), e.constant(1, u), u)
    bits = e.binary(Op.ADD, bits, e.binary(Op.ADD, e.constant(0xFFF, u), odd, u), u)
    bits = e.binary(Op.AND, bits, e.constant(0xFFFFE000, u), u)
    return e.bitcast(bits, u, D.float32)


@rule(Op.DOT)
def _dot(lw: Lowering, instr: Instr) -> list[list[Handle]]:
    a, b, acc = instr.operands
    adt: DType = a.type.element
    out_dt: DType = acc.type.element
    e = lw.e
    *batch, m, k = a.type.shape
    n = b.type.shape[-1]
    dst = lw.layout(acc)
    ins = []
    for v in (a, b):
        hs = lw.env[v]
        if adt == D.float32 and instr.attrs.input_precision == "tf32":
            hs = [to_tf32(lw, h) for h in hs]
        ins.append(hs)
    a_size = lw.local_size(adt, a.type.numel)
    lw.reserve_local(a_size + lw.local_size(adt, b.type.numel))
    stage(lw, ins[0], lw.layout(a), adt, 0)
    stage(lw, ins[1], lw.layout(b), adt, a_size)
    e.barrier()
    rows, cols = [], []
    for j in range(dst.per_thread):
        flat = lw.flat_index(dst, j)
        col = lw.iop(Op.MOD, flat, n)
        row = lw.iop(Op.IDIV, flat, n)  # batch * m + row
        bat = lw.iop(Op.IDIV, row, m) if batch else 0
        rows.append(lw.idx(lw.iop(Op.MUL, row, k)))
        cols.append(lw.idx(lw.iop(Op.ADD, lw.iop(Op.MUL, bat, k * n), col)))

    # a narrow float result is accumulated in float32 and rounded once, as the interpreter's
    # float64 sum is (rounding every product's sum to float16 cost 4x its error)
    sum_dt = D.float32 if out_dt.is_floating and out_dt.bits < 32 else out_dt

    def step(kk: Handle, accs: list[Handle]) -> list[Handle]:
        out = []
        for j, c in enumerate(accs):
            x = e.local_load(0, e.binary(Op.ADD, rows[j], kk, D.int32), adt)
            y = e.local_load(a_size, e.binary(Op.ADD, cols[j], e.binary(
                Op.MUL, kk, lw.const(n, D.int32), D.int32), D.int32), adt)
            if adt != sum_dt:
                x, y = e.cast(x, adt, sum_dt), e.cast(y, adt, sum_dt)
            if sum_dt.is_floating:
                out.append(e.fma(x, y, c, sum_dt))
            else:
                out.append(e.binary(Op.ADD, c, e.binary(Op.MUL, x, y, sum_dt), sum_dt))
        return out
    start = [h if sum_dt == out_dt else e.cast(h, out_dt, sum_dt) for h in lw.env[acc]]
    res = e.for_range(lw.const(0, D.int32), lw.const(k, D.int32), lw.const(1, D.int32), D.int32,
                      [(h, sum_dt) for h in start], lw.in_scope(step))
    e.barrier()
    return [res if sum_dt == out_dt else [e.cast(h, sum_dt, out_dt) for h in res]]
