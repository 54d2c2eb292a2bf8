"""Control flow, uniform and divergent across the programs of a chunk."""

from __future__ import annotations

import numpy as np
import pytest
from irb import KB

from tiles.core import attrs as at
from tiles.core import dtypes as dt
from tiles.core.ir import TileType
from tiles.core.ops import Op
from tiles.interp import executor, interpret

I32 = TileType(dt.int32)


def test_divergent_if_merges_results():
    """out[pid] = pid * 10 if pid is odd else -pid; an IF without results stores too."""
    k = KB("if_kernel")
    out, flags = k.ptr("out", dt.int32), k.ptr("flags", dt.int32)
    pid = k.pid()
    odd = k.bin(Op.EQ, k.bin(Op.MOD, pid, k.const(2, dt.int32)), k.const(1, dt.int32))
    (r,) = k.if_(odd, lambda: [k.bin(Op.MUL, pid, k.const(10, dt.int32))],
                 lambda: [k.op(Op.NEG, pid)], [I32])
    k.store(k.addptr(out, pid), r)

    def then():
        k.store(k.addptr(flags, pid), k.const(1, dt.int32))
        return []
    k.if_(k.bin(Op.LT, pid, k.const(3, dt.int32)), then, lambda: [])
    o, f = np.zeros(9, np.int32), np.zeros(9, np.int32)
    interpret(k.kernel(), (9,), [o, f])
    assert o.tolist() == [p * 10 if p % 2 else -p for p in range(9)]
    assert f.tolist() == [1, 1, 1, 0, 0, 0, 0, 0, 0]


def test_divergent_for_and_nested_if():
    """out[pid] = sum(i for i in range(pid) if i % 3 != 0) with per-program trip counts."""
    k = KB("for_kernel")
    out = k.ptr("out", dt.int32)
    pid = k.pid()

    def body(i, acc):
        skip = k.bin(Op.EQ, k.bin(Op.MOD, i, k.const(3, dt.int32)), k.const(0, dt.int32))
        (r,) = k.if_(skip, lambda: [acc], lambda: [k.bin(Op.ADD, acc, i)], [I32])
        return [r]
    (s,) = k.for_(k.const(0, dt.int32), pid, k.const(1, dt.int32), [k.const(0, dt.int32)], body)
    k.store(k.addptr(out, pid), s)
    o = np.zeros(12, np.int32)
    interpret(k.kernel(), (12,), [o])
    assert o.tolist() == [sum(i for i in range(p) if i % 3) for p in range(12)]


def test_for_with_per_program_start_and_negative_step():
    k = KB("for_neg")
    out = k.ptr("out", dt.int32)
    pid = k.pid()
    (s,) = k.for_(pid, k.const(-3, dt.int32), k.const(-2, dt.int32), [k.const(0, dt.int32)],
                  lambda i, acc: [k.bin(Op.ADD, acc, i)])
    k.store(k.addptr(out, pid), s)
    o = np.zeros(6, np.int32)
    interpret(k.kernel(), (6,), [o])
    assert o.tolist() == [sum(range(p, -3, -2)) for p in range(6)]


def test_divergent_while_collatz_steps():
    k = KB("collatz")
    out = k.ptr("out", dt.int32)
    pid = k.pid()
    start = k.bin(Op.ADD, pid, k.const(1, dt.int32))

    def cond(x, n):
        return k.bin(Op.NE, x, k.const(1, dt.int32))

    def body(x, n):
        even = k.bin(Op.EQ, k.bin(Op.MOD, x, k.const(2, dt.int32)), k.const(0, dt.int32))
        half = k.bin(Op.IDIV, x, k.const(2, dt.int32))
        triple = k.bin(Op.ADD, k.bin(Op.MUL, x, k.const(3, dt.int32)), k.const(1, dt.int32))
        return [k.op(Op.WHERE, even, half, triple), k.bin(Op.ADD, n, k.const(1, dt.int32))]
    _, steps = k.while_([start, k.const(0, dt.int32)], cond, body)
    k.store(k.addptr(out, pid), steps)

    def collatz(x):
        n = 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            n += 1
        return n
    o = np.zeros(40, np.int32)
    interpret(k.kernel(), (40,), [o])
    assert o.tolist() == [collatz(p + 1) for p in range(40)]


def test_while_with_tile_carried_values_and_outer_values():
    """Each program doubles a tile until its sum exceeds a per-program limit."""
    k = KB("while_tile")
    out = k.ptr("out", dt.float32)
    pid = k.pid()
    limit = k.cast(k.bin(Op.MUL, k.bin(Op.ADD, pid, k.const(1, dt.int32)), k.const(100, dt.int32)),
                   dt.float32)
    x0 = k.cast(k.bin(Op.ADD, k.arange(4), k.const(1, dt.int32)), dt.float32)

    def cond(x):
        s = k.op(Op.REDUCE, x, attrs=at.Reduce(0, "sum"))
        return k.bin(Op.LT, s, limit)
    (x,) = k.while_([x0], cond, lambda x: [k.bin(Op.ADD, x, x)])
    offs = k.bin(Op.ADD, k.bin(Op.MUL, pid, k.const(4, dt.int32)), k.arange(4))
    k.store(k.addptr(out, offs), x)
    o = np.zeros(20, np.float32)
    interpret(k.kernel(), (5,), [o])
    for p in range(5):
        x = np.arange(1, 5, dtype=np.float32)
        while x.sum() < (p + 1) * 100:
            x = x + x
        assert o[4 * p:4 * p + 4].tolist() == x.tolist()


def matmul_kernel(bm, bn, bk, m, n, kk, precision="ieee", in_dtype=dt.float32):
    k = KB("matmul")
    a, b, c = k.ptr("a", in_dtype), k.ptr("b", in_dtype), k.ptr("c", dt.float32)
    pid = k.pid()
    nb = k.const(n // bn, dt.int32)
    pm, pn = k.bin(Op.IDIV, pid, nb), k.bin(Op.MOD, pid, nb)
    om = k.bin(Op.ADD, k.bin(Op.MUL, pm, k.const(bm, dt.int32)), k.arange(bm))
    on = k.bin(Op.ADD, k.bin(Op.MUL, pn, k.const(bn, dt.int32)), k.arange(bn))
    ok = k.arange(bk)

    def grid2(rows, rstride, cols, shape):
        r = k.bin(Op.MUL, k.reshape(rows, (rows.type.shape[0], 1)), k.const(rstride, dt.int32))
        return k.bin(Op.ADD, k.bcast(r, shape), k.bcast(k.reshape(cols, (1, cols.type.shape[0])), shape))
    ap, bp = k.addptr(a, grid2(om, kk, ok, (bm, bk))), k.addptr(b, grid2(ok, n, on, (bk, bn)))

    def body(i, acc, ap, bp):
        acc = k.op(Op.DOT, k.load(ap), k.load(bp), acc, attrs=at.Dot(precision))
        return [acc, k.addptr(ap, k.const(bk, dt.int32, (bm, bk))),
                k.addptr(bp, k.const(bk * n, dt.int32, (bk, bn)))]
    acc, _, _ = k.for_(k.const(0, dt.int32), k.const(kk, dt.int32), k.const(bk, dt.int32),
                       [k.const(0.0, dt.float32, (bm, bn)), ap, bp], body)
    k.store(k.addptr(c, grid2(om, n, on, (bm, bn))), acc)
    return k.kernel()


def test_uniform_k_loop_matmul():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 96)).astype(np.float32)
    b = rng.standard_normal((96, 48)).astype(np.float32)
    c = np.zeros((64, 48), np.float32)
    interpret(matmul_kernel(32, 16, 32, 64, 48, 96), (2 * 3,), [a, b, c])
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("chunk", [1, 7, 1 << 22])
def test_chunking_does_not_change_results(monkeypatch, chunk):
    monkeypatch.setattr(executor, "CHUNK_ELEMENTS", chunk)
    executor._PLANS.clear()
    try:
        test_divergent_for_and_nested_if()
        test_divergent_while_collatz_steps()
    finally:
        executor._PLANS.clear()
