"""Constant folding computes what the unfolded op computes at run time; CSE merges only pure twins."""

import numpy as np
import pytest
from core_ir import IR, ops_of, run

from tiles.core import attrs as A
from tiles.core import dtypes as D
from tiles.core.fold import common_subexpressions, constant_folding
from tiles.core.ops import Op
from tiles.core.verify import verify


def _edge_values(dtype):
    if dtype.is_floating:
        return [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-40, 3.5, -7.25]
    lo, hi = int(dtype.min()), int(dtype.max())
    return [v for v in (lo, lo + 1, -1, 0, 1, 2, 7, -7, hi - 1, hi, dtype.bits, dtype.bits + 3) if lo <= v <= hi]


def _random_values(dtype, rng, n):
    if dtype.is_floating:
        return (rng.standard_normal(n) * 100).tolist()
    return rng.integers(int(dtype.min()), int(dtype.max()), size=n, endpoint=True, dtype=dtype.np).tolist()


def _pairs(dtype, rng):
    """Every pair of edge values (x / 0, INT_MIN / -1, shifts by the width...) and random pairs."""
    edge = _edge_values(dtype)
    return [(a, b) for a in edge for b in edge] + list(zip(_random_values(dtype, rng, 16),
                                                           _random_values(dtype, rng, 16)))


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in "fV":  # V: ml_dtypes' bfloat16; NaN payloads are not compared
        return (np.isnan(a) & np.isnan(b)) | (a.view(f"u{a.itemsize}") == b.view(f"u{b.itemsize}"))
    return a == b


def _same_up_to_zero_sign(a, b):
    """max/min of -0.0 and +0.0 may give either zero (IEEE fmax leaves it open; so does the IR)."""
    return _same(a, b) | ((np.asarray(a) == 0) & (np.asarray(b) == 0))


def _binary(op, dtype, out_dtype, a=None, b=None):
    """out[0] = OP(x, y): from two constants when a and b are given, else from memory."""
    ir = IR(f"{op.value}_{dtype}")
    out = ir.pointer("out", out_dtype)
    if a is None:
        x = ir.load(ir.pointer("x", dtype), 1)
        y = ir.load(ir.pointer("y", dtype), 1)
    else:
        x, y = ir.const(a, dtype, (1,)), ir.const(b, dtype, (1,))
    ir.store(out, ir.emit(op, x, y))
    return ir.kernel()


CASES = [
    (Op.IDIV, D.int32), (Op.MOD, D.int32), (Op.IDIV, D.int8), (Op.MOD, D.uint32), (Op.IDIV, D.uint64),
    (Op.SHL, D.int32), (Op.SHR, D.int32), (Op.SHR, D.uint16), (Op.SHL, D.uint8),
    (Op.ADD, D.int8), (Op.MUL, D.int64), (Op.SUB, D.uint32), (Op.UMULHI, D.uint32),
    (Op.UMULHI, D.int32), (Op.UMULHI, D.int64), (Op.SHR, D.int8), (Op.SHR, D.int64),
    (Op.DIV, D.float32), (Op.MOD, D.float32), (Op.MAXIMUM, D.float32), (Op.MINIMUM_NAN, D.float64),
    (Op.MUL, D.float16), (Op.LT, D.int32), (Op.LT, D.uint32), (Op.NE, D.float32),
    (Op.ADD, D.float8e5), (Op.MUL, D.float8e4nv),
]


@pytest.mark.parametrize("op,dtype", CASES, ids=lambda v: getattr(v, "value", str(v)))
def test_folded_constants_equal_the_run_time_result(op, dtype, rng):
    out_dtype = D.int1 if op in (Op.LT, Op.NE) else dtype
    pairs = _pairs(dtype, rng)
    runtime = _binary(op, dtype, out_dtype)
    folded_count = 0
    for a, b in pairs:
        x, y = np.array([a], dtype.np), np.array([b], dtype.np)
        at_run_time = np.zeros(1, out_dtype.np)
        run(runtime, at_run_time, x, y)
        kernel = constant_folding(_binary(op, dtype, out_dtype, x.item(), y.item()))
        verify(kernel)
        folded_count += op not in ops_of(kernel)
        folded = np.zeros(1, out_dtype.np)
        run(kernel, folded)
        same = _same_up_to_zero_sign if op in (Op.MAXIMUM, Op.MINIMUM) else _same
        assert same(folded, at_run_time).all(), \
            f"{op.value}({a!r}, {b!r}) on {dtype}: folded {folded[0]!r}, at run time {at_run_time[0]!r}"
    assert folded_count >= len(pairs) // 2, f"only {folded_count} of {len(pairs)} {op.value} were folded"


@pytest.mark.parametrize("src,dst", [(D.float32, D.int8), (D.float32, D.uint32), (D.float64, D.int64),
                                     (D.int32, D.float16), (D.float32, D.bfloat16), (D.int64, D.int8),
                                     (D.float32, D.float8e4nv), (D.float64, D.float8e5), (D.bfloat16, D.float8e5)],
                         ids=str)
def test_folded_casts_equal_the_run_time_result(src, dst, rng):
    values = _edge_values(src) + _random_values(src, rng, 8) + ([1e10, -1e10, 255.5, -128.5] if src.is_floating else [])
    runtime = IR("cast")
    out = runtime.pointer("out", dst)
    runtime.store(out, runtime.emit(Op.CAST, runtime.load(runtime.pointer("x", src), 1), attrs=A.Cast(dst)))
    runtime_kernel = runtime.kernel()
    for v in values:
        x = np.array([v], src.np)
        want = np.zeros(1, dst.np)
        run(runtime_kernel, want, x)
        ir = IR("cast_const")
        out = ir.pointer("out", dst)
        ir.store(out, ir.emit(Op.CAST, ir.const(x.item(), src, (1,)), attrs=A.Cast(dst)))
        kernel = constant_folding(ir.kernel())
        got = np.zeros(1, dst.np)
        run(kernel, got)
        assert _same(got, want).all(), f"cast {v!r} {src}->{dst}: folded {got[0]!r}, at run time {want[0]!r}"


def _negated_constant(value, dtype):
    ir = IR("neg_const")
    ir.store(ir.pointer("out", dtype), ir.emit(Op.NEG, ir.const(value, dtype, (1,))))
    return ir.kernel()


@pytest.mark.parametrize("dtype", [D.float8e4nv, D.float8e5, D.bfloat16], ids=str)
def test_folding_rounds_constants_as_the_run_time_does(dtype):
    """A constant's value is rounded once (into fp8 saturating) before it is folded, as at run time."""
    for v in [1000.0, -1e6, np.inf, -np.inf, np.nan, 3.3, 1 + 2.0 ** -4 + 2.0 ** -40, 1 + 2.0 ** -8 + 2.0 ** -40]:
        at_run_time, folded = np.zeros(1, dtype.np), np.zeros(1, dtype.np)
        run(_negated_constant(v, dtype), at_run_time)
        kernel = constant_folding(_negated_constant(v, dtype))
        assert Op.NEG not in ops_of(kernel)
        run(kernel, folded)
        assert _same(folded, at_run_time).all(), \
            f"-{v!r} in {dtype}: folded {folded[0]!r}, at run time {at_run_time[0]!r}"


def test_folding_reaches_through_chains_and_broadcasts():
    ir = IR()
    out = ir.pointer("out", D.int32)
    seven, minus_two = ir.const(7, D.int32), ir.const(-2, D.int32)
    q = ir.emit(Op.IDIV, seven, minus_two)  # -3: truncation, not Python's floor (-4)
    r = ir.emit(Op.MUL, ir.emit(Op.NEG, q), ir.const(5, D.int32))  # 15
    ir.store(out, ir.splat(r, (4,)))
    kernel = constant_folding(ir.kernel())
    verify(kernel)
    assert {Op.IDIV, Op.MUL, Op.NEG}.isdisjoint(ops_of(kernel)), ops_of(kernel)
    (store,) = [i for i in kernel.walk() if i.op is Op.STORE]
    (stored,) = [i for i in kernel.walk() if store.operands[1] in i.results]
    assert stored.op is Op.CONST and stored.attrs.value == 15 and stored.attrs.shape == (4,), stored
    got = np.zeros(4, np.int32)
    run(kernel, got)
    np.testing.assert_array_equal(got, 15)


def test_cse_merges_pure_twins_but_not_memory_operations(rng):
    ir = IR()
    x, out = ir.pointer("x", D.float32), ir.pointer("out", D.float32)
    first, second = ir.load(x, 8), ir.load(x, 8)  # two loads: a store may come between, both stay
    a = ir.emit(Op.MUL, first, second)
    b = ir.emit(Op.MUL, first, second)
    ir.store(out, ir.emit(Op.ADD, a, b))
    kernel = common_subexpressions(ir.kernel())
    verify(kernel)
    ops = ops_of(kernel)
    assert ops.count(Op.LOAD) == 2 and ops.count(Op.MUL) == 1, ops
    xs = rng.standard_normal(8).astype(np.float32)
    got = np.zeros(8, np.float32)
    run(kernel, got, xs)
    np.testing.assert_array_equal(got, xs * xs + xs * xs)


def test_cse_keeps_instructions_that_differ_in_attributes_or_operands():
    ir = IR()
    out = ir.pointer("out", D.int32)
    one, two = ir.const(1, D.int32, (4,)), ir.const(2, D.int32, (4,))
    ir.store(out, ir.emit(Op.SUB, ir.emit(Op.SUB, one, two), ir.emit(Op.SUB, two, one)))
    kernel = common_subexpressions(ir.kernel())
    assert ops_of(kernel).count(Op.CONST) == 2 and ops_of(kernel).count(Op.SUB) == 3
    got = np.zeros(4, np.int32)
    run(kernel, got)
    np.testing.assert_array_equal(got, -2)


def test_cse_keeps_signed_zeros_apart():
    # 0.0 == -0.0 and they hash alike: merged, `tl.where(c, x, 0)` after `other=-0.0` summed to -0.0
    ir = IR()
    out = ir.pointer("out", D.float32)
    negative, positive = ir.const(-0.0, D.float32, (4,)), ir.const(0.0, D.float32, (4,))
    ir.store(out, ir.emit(Op.ADD, negative, positive))  # -0.0 + 0.0 is +0.0, -0.0 + -0.0 is -0.0
    kernel = common_subexpressions(ir.kernel())
    assert ops_of(kernel).count(Op.CONST) == 2
    got = np.full(4, -1.0, np.float32)
    run(kernel, got)
    assert not np.signbit(got).any()
    ir = IR()
    out = ir.pointer("out", D.float32)
    ir.store(out, ir.emit(Op.ADD, ir.const(-0.0, D.float32, (4,)), ir.const(-0.0, D.float32, (4,))))
    assert ops_of(common_subexpressions(ir.kernel())).count(Op.CONST) == 1  # equal bits still merge


def _reinterpreted_shift(a=None, b=None):
    """The tracer's ``int8 >> uint8`` (Triton: arithmetic in uint8): BITCAST to int8, SHR, BITCAST back."""
    ir = IR("ashr_u8")
    if a is None:
        x, y = ir.load(ir.pointer("x", D.uint8), 1), ir.load(ir.pointer("y", D.uint8), 1)
    else:
        x, y = ir.const(a, D.uint8, (1,)), ir.const(b, D.uint8, (1,))
    sx = ir.emit(Op.BITCAST, x, attrs=A.Cast(D.int8))
    sy = ir.emit(Op.BITCAST, y, attrs=A.Cast(D.int8))
    ir.store(ir.pointer("out", D.uint8), ir.emit(Op.BITCAST, ir.emit(Op.SHR, sx, sy), attrs=A.Cast(D.uint8)))
    return ir.kernel()


def test_folding_reaches_through_integer_bitcasts():
    """An arithmetic shift of uint8 bits folds to what it computes at run time (0xf0 >> 2 = 0xfc)."""
    for a, b in [(0xF0, 2), (0xF0, 0), (0x70, 3), (0x80, 7), (0xF0, 8), (0xF0, 200), (0x10, 255)]:
        want = np.zeros(1, np.uint8)
        run(_reinterpreted_shift(), np.array([a], np.uint8), np.array([b], np.uint8), want)
        kernel = constant_folding(_reinterpreted_shift(a, b))
        assert Op.SHR not in ops_of(kernel) and Op.BITCAST not in ops_of(kernel)
        got = np.zeros(1, np.uint8)
        run(kernel, got)
        assert got[0] == want[0], (a, b, got[0], want[0])
    got = np.zeros(1, np.uint8)
    run(constant_folding(_reinterpreted_shift(0xF0, 2)), got)
    assert got[0] == 0xFC
