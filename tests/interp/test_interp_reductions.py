"""Reductions, scans, sort, histogram, gather, dot and the shape ops, per program."""

from __future__ import annotations

import numpy as np
import pytest
from irb import KB

from tiles.core import attrs as at
from tiles.core import dtypes as dt
from tiles.core.ir import TileType, Value
from tiles.core.ops import Op
from tiles.interp import interpret

P = 3  # programs: each reduces its own rows


def run_unary(shape, dtype, out_shape, out_dtype, fn, data):
    """out[pid] = fn(x[pid]) for tiles of ``shape`` loaded from x (C order per program)."""
    k = KB("unary")
    x, out = k.ptr("x", dtype), k.ptr("out", out_dtype)
    n_in, n_out = int(np.prod(shape)), int(np.prod(out_shape) if out_shape else 1)

    def tile_ptr(p, n, shp):
        offs = k.bin(Op.ADD, k.bin(Op.MUL, k.pid(), k.const(n, dt.int32)), k.arange(n))
        return k.reshape(k.addptr(p, offs), shp) if shp != (n,) else k.addptr(p, offs)
    r = fn(k, k.load(tile_ptr(x, n_in, shape)))
    if out_shape:
        k.store(tile_ptr(out, n_out, out_shape), r)
    else:
        k.store(k.addptr(out, k.pid()), r)
    o = np.zeros((P, *out_shape), out_dtype.np)
    interpret(k.kernel(), (P,), [np.ascontiguousarray(data), o])
    return o


def rows(dtype, shape, seed=0, nan=False):
    rng = np.random.default_rng(seed)
    if dtype.is_floating:
        x = rng.standard_normal((P, *shape)).astype(dtype.np)
        if nan:
            x.reshape(P, -1)[0, ::3] = np.nan
            x.reshape(P, -1)[1, :] = np.nan
        return x
    return rng.integers(dtype.min(), dtype.max(), (P, *shape), endpoint=True, dtype=dtype.np)


REDUCE_CASES = [
    ("sum", dt.float32, lambda x, ax: np.sum(x.astype(np.float64), ax).astype(np.float32)),
    ("sum", dt.int8, lambda x, ax: np.sum(x, ax, dtype=np.int8)),
    ("prod", dt.int32, lambda x, ax: np.prod(x, ax, dtype=np.int32)),
    ("max", dt.float32, lambda x, ax: np.fmax.reduce(x, ax)),
    ("min", dt.float16, lambda x, ax: np.fmin.reduce(x, ax)),
    ("max_nan", dt.float32, lambda x, ax: np.maximum.reduce(x, ax)),
    ("xor", dt.uint16, lambda x, ax: np.bitwise_xor.reduce(x, ax)),
    ("or", dt.int64, lambda x, ax: np.bitwise_or.reduce(x, ax)),
]


@pytest.mark.parametrize("kind,dtype,ref", REDUCE_CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("axis", [0, 1])
def test_builtin_reduce(kind, dtype, ref, axis):
    x = rows(dtype, (4, 8), nan=True)
    out_shape = (8,) if axis == 0 else (4,)
    got = run_unary((4, 8), dtype, out_shape, dtype,
                    lambda k, t: k.op(Op.REDUCE, t, attrs=at.Reduce(axis, kind)), x)
    np.testing.assert_array_equal(got, ref(x, axis + 1))


@pytest.mark.parametrize("kind", ["sum", "max", "prod"])
@pytest.mark.parametrize("reverse", [False, True])
def test_builtin_scan(kind, reverse):
    x = rows(dt.int32, (16,), seed=1) % 7
    got = run_unary((16,), dt.int32, (16,), dt.int32,
                    lambda k, t: k.op(Op.SCAN, t, attrs=at.Reduce(0, kind, reverse)), x)
    fn = {"sum": np.cumsum, "prod": np.cumprod, "max": np.maximum.accumulate}[kind]
    xs = x[:, ::-1] if reverse else x
    want = fn(xs, axis=1).astype(np.int32)
    np.testing.assert_array_equal(got, want[:, ::-1] if reverse else want)


def test_argreduce_ignores_nan_and_takes_lowest_index():
    x = np.array([[1, 5, 5, np.nan, 2, -1, 5, 0], [np.nan] * 8, [3, 3, 3, 3, -3, -3, 0, 0]],
                 np.float32)
    got_max = run_unary((8,), dt.float32, (), dt.int32,
                        lambda k, t: k.op(Op.ARGREDUCE, t, attrs=at.ArgReduce(0, "max")), x)
    got_min = run_unary((8,), dt.float32, (), dt.int32,
                        lambda k, t: k.op(Op.ARGREDUCE, t, attrs=at.ArgReduce(0, "min")), x)
    assert got_max.tolist() == [1, 0, 0] and got_min.tolist() == [5, 0, 4]


def custom_combine(k, op, n_operands=1, dtype=dt.int32):
    """A REDUCE/SCAN region: args (a.., b..) scalars, yields op(a_i, b_i) for each operand."""
    args = [Value(TileType(dtype)) for _ in range(2 * n_operands)]
    with k.b.region(args) as blk:
        blk.yields = [k.op(op, args[i], args[n_operands + i]) for i in range(n_operands)]
    return blk


def test_custom_reduce_and_scan_keep_operand_order():
    # combine(a, b) = 2*a + b is not associative, but the order of the operands shows:
    # only the balanced tree of pairs (0,1),(2,3).. in order gives this result
    x = rows(dt.int32, (8,), seed=2) % 5

    def reduce_fn(k, t):
        args = [Value(TileType(dt.int32)) for _ in range(2)]
        with k.b.region(args) as blk:
            blk.yields = [k.op(Op.ADD, k.op(Op.MUL, args[0], k.const(2, dt.int32)), args[1])]
        return k.op(Op.REDUCE, t, attrs=at.Reduce(0, "custom"), types=[TileType(dt.int32)],
                    regions=[blk])
    got = run_unary((8,), dt.int32, (), dt.int32, reduce_fn, x)

    def tree(v):
        v = list(v)
        while len(v) > 1:
            v = [2 * v[i] + v[i + 1] for i in range(0, len(v), 2)]
        return v[0]
    assert got.tolist() == [tree(r) for r in x.tolist()]

    def scan_fn(k, t):
        blk = custom_combine(k, Op.MAXIMUM)
        return k.op(Op.SCAN, t, attrs=at.Reduce(0, "custom", True), types=[TileType(dt.int32, (8,))],
                    regions=[blk])
    got = run_unary((8,), dt.int32, (8,), dt.int32, scan_fn, x)
    np.testing.assert_array_equal(got, np.maximum.accumulate(x[:, ::-1], axis=1)[:, ::-1])


def test_custom_combine_with_an_if_inside():
    x = rows(dt.int32, (16,), seed=9)

    def fn(k, t):
        a, b = Value(TileType(dt.int32)), Value(TileType(dt.int32))
        with k.b.region([a, b]) as blk:
            (r,) = k.if_(k.bin(Op.GT, a, b), lambda: [a], lambda: [b], [TileType(dt.int32)])
            blk.yields = [r]
        return k.op(Op.REDUCE, t, attrs=at.Reduce(0, "custom"), types=[TileType(dt.int32)],
                    regions=[blk])
    got = run_unary((16,), dt.int32, (), dt.int32, fn, x)
    assert got.tolist() == x.max(axis=1).tolist()


def test_custom_reduce_with_two_operands():
    """(value, index) argmax written as a custom combine over two operands."""
    x = rows(dt.float32, (16,), seed=3)

    def fn(k, t):
        idx = k.arange(16)
        a = [Value(TileType(dt.float32)), Value(TileType(dt.int32))]
        b = [Value(TileType(dt.float32)), Value(TileType(dt.int32))]
        with k.b.region([*a, *b]) as blk:
            take_a = k.op(Op.GE, a[0], b[0])
            blk.yields = [k.op(Op.WHERE, take_a, a[0], b[0]), k.op(Op.WHERE, take_a, a[1], b[1])]
        _, i = k.op(Op.REDUCE, t, idx, attrs=at.Reduce(0, "custom"),
                    types=[TileType(dt.float32), TileType(dt.int32)], regions=[blk])
        return i
    got = run_unary((16,), dt.float32, (), dt.int32, fn, x)
    assert got.tolist() == np.argmax(x, axis=1).tolist()


@pytest.mark.parametrize("descending", [False, True])
def test_sort(descending):
    x = rows(dt.float16, (2, 8), seed=4)
    got = run_unary((2, 8), dt.float16, (2, 8), dt.float16,
                    lambda k, t: k.op(Op.SORT, t, attrs=at.Sort(descending)), x)
    want = np.sort(x, axis=-1)
    np.testing.assert_array_equal(got, want[..., ::-1] if descending else want)


def test_histogram_ignores_out_of_range():
    x = np.array([[0, 1, 1, 3, 7, -1, 2, 2], [5, 5, 5, 5, 0, 0, 0, 0], [3] * 8], np.int32)
    got = run_unary((8,), dt.int32, (4,), dt.int32,
                    lambda k, t: k.op(Op.HISTOGRAM, t, attrs=at.Histogram(4)), x)
    assert got.tolist() == [[1, 2, 2, 1], [4, 0, 0, 0], [0, 0, 0, 8]]


def test_gather_along_axis():
    x = rows(dt.float32, (4, 4), seed=5)

    def fn(k, t):
        rev = k.bin(Op.SUB, k.const(3, dt.int32, (4,)), k.arange(4))
        idx = k.bcast(k.reshape(rev, (1, 4)), (4, 4))
        return k.op(Op.GATHER, t, idx, attrs=at.Gather(1))
    got = run_unary((4, 4), dt.float32, (4, 4), dt.float32, fn, x)
    np.testing.assert_array_equal(got, x[..., ::-1])


def test_shape_ops():
    x = rows(dt.int32, (2, 4), seed=6)

    def fn(k, t):
        tt = k.op(Op.PERMUTE, t, attrs=at.Permute((1, 0)))  # (4, 2)
        a, b = k.op(Op.SPLIT, tt)  # (4,), (4,)
        j = k.op(Op.JOIN, b, a)  # (4, 2)
        c = k.op(Op.CAT, j, j)  # (8, 2)
        return k.reshape(c, (2, 8))
    got = run_unary((2, 4), dt.int32, (2, 8), dt.int32, fn, x)
    t = np.transpose(x, (0, 2, 1))
    j = np.stack([t[..., 1], t[..., 0]], axis=-1)
    np.testing.assert_array_equal(got, np.concatenate([j, j], axis=1).reshape(P, 2, 8))


@pytest.mark.parametrize("precision", ["ieee", "tf32"])
@pytest.mark.parametrize("in_dtype", [dt.float32, dt.float16, dt.int8])
def test_dot(precision, in_dtype):
    rng = np.random.default_rng(7)
    if in_dtype.is_int:
        a = rng.integers(-128, 128, (P, 16, 32), dtype=np.int8)
        b = rng.integers(-128, 128, (P, 32, 8), dtype=np.int8)
        acc_t = dt.int32
    else:
        a = rng.standard_normal((P, 16, 32)).astype(in_dtype.np)
        b = rng.standard_normal((P, 32, 8)).astype(in_dtype.np)
        acc_t = dt.float32
    k = KB("dot")
    pa, pb, po = k.ptr("a", in_dtype), k.ptr("b", in_dtype), k.ptr("o", acc_t)

    def tile(p, r, c):
        offs = k.bin(Op.ADD, k.bin(Op.MUL, k.pid(), k.const(r * c, dt.int32)), k.arange(r * c))
        return k.reshape(k.addptr(p, offs), (r, c))
    acc = k.const(1, acc_t, (16, 8))
    k.store(tile(po, 16, 8), k.op(Op.DOT, k.load(tile(pa, 16, 32)), k.load(tile(pb, 32, 8)), acc,
                                  attrs=at.Dot(precision)))
    o = np.zeros((P, 16, 8), acc_t.np)
    interpret(k.kernel(), (P,), [a, b, o])
    if in_dtype.is_int:
        np.testing.assert_array_equal(o, a.astype(np.int64) @ b.astype(np.int64) + 1)
        return
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if precision == "tf32" and in_dtype == dt.float32:
        def tf32(v):
            bits = v.astype(np.float32).view(np.uint32).astype(np.uint64)
            r = (bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000
            return r.astype(np.uint32).view(np.float32).astype(np.float64)
        a64, b64 = tf32(a), tf32(b)
        assert not np.array_equal(a64, a.astype(np.float64))
    np.testing.assert_array_equal(o, (a64 @ b64 + 1).astype(np.float32))


def test_batched_dot():
    rng = np.random.default_rng(8)
    a = rng.standard_normal((P, 2, 4, 8)).astype(np.float32)
    b = rng.standard_normal((P, 2, 8, 4)).astype(np.float32)
    k = KB("bdot")
    pa, pb, po = k.ptr("a", dt.float32), k.ptr("b", dt.float32), k.ptr("o", dt.float32)

    def tile(p, shape):
        n = int(np.prod(shape))
        offs = k.bin(Op.ADD, k.bin(Op.MUL, k.pid(), k.const(n, dt.int32)), k.arange(n))
        return k.reshape(k.addptr(p, offs), shape)
    r = k.op(Op.DOT, k.load(tile(pa, (2, 4, 8))), k.load(tile(pb, (2, 8, 4))),
             k.const(0.0, dt.float32, (2, 4, 4)), attrs=at.Dot("ieee"))
    k.store(tile(po, (2, 4, 4)), r)
    o = np.zeros((P, 2, 4, 4), np.float32)
    interpret(k.kernel(), (P,), [a, b, o])
    np.testing.assert_array_equal(o, (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))
