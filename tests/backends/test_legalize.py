"""lowering/legalize.py rewrites hard cases into plain ops without changing a result: the
interpreter runs each kernel before and after the pass on edge values and random ones."""

import copy
import sys
from pathlib import Path

import numpy as np
import pytest

from tiles.backends.lowering.legalize import INT1_FORM, Legality, legal_op, legalize
from tiles.core import dtypes as dt
from tiles.core.ops import Op
from tiles.core.verify import verify
from tiles.interp import interpret

sys.path.insert(0, str(Path(__file__).parents[1] / "interp"))
from irb import KB  # noqa: E402

INTS = [dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8, dt.uint32, dt.uint64]
N = 160


def _samples(d, rng):
    lo, hi = int(d.min()), int(d.max())
    edge = [e for e in (lo, lo + 1, -1, 0, 1, 2, 7, -7, d.bits - 1, d.bits, d.bits + 1, hi) if lo <= e <= hi]
    a = np.array([x for x in edge for _ in edge] + rng.integers(lo, hi, N, endpoint=True, dtype=d.np).tolist(), d.np)
    b = np.array(edge * len(edge) + rng.integers(-3 if lo else 0, d.bits + 3, N, dtype=d.np).tolist(), d.np)
    return a, b


def _binary_kernel(op, d, out_dtype=None, operand_b=None):
    k = KB(f"legal_{op.value}")
    pa, pb, po = k.ptr("a", d), k.ptr("b", d), k.ptr("o", out_dtype or d)
    offs = k.offsets(N)
    a = k.load(k.addptr(pa, offs))
    b = k.load(k.addptr(pb, offs)) if operand_b is None else operand_b(k)
    k.store(k.addptr(po, offs), k.bin(op, a, b))
    return k.kernel()


def _run_both(kernel, arrays, out, legality=None):
    legal = legalize(copy.deepcopy(kernel), legality or Legality())
    verify(legal)
    want, got = out.copy(), out.copy()
    interpret(kernel, (1,), [*arrays, want])
    interpret(legal, (1,), [*arrays, got])
    np.testing.assert_array_equal(got, want)
    return legal


@pytest.mark.parametrize("d", INTS, ids=str)
@pytest.mark.parametrize("op", [Op.IDIV, Op.MOD, Op.SHL, Op.SHR], ids=lambda o: o.value)
def test_division_and_shift_guards_keep_results(op, d, rng):
    a, b = _samples(d, rng)
    n = len(a)
    for start in range(0, n, N):
        chunk_a, chunk_b = np.resize(a[start:start + N], N), np.resize(b[start:start + N], N)
        legal = _run_both(_binary_kernel(op, d), [chunk_a, chunk_b], np.zeros(N, d.np))
    assert any(i.op is Op.WHERE for i in legal.walk()), "the guard was not written"


@pytest.mark.parametrize("op", [Op.IDIV, Op.SHL, Op.SHR])
def test_a_safe_constant_needs_no_guard(op, rng):
    kernel = _binary_kernel(op, dt.int32, operand_b=lambda k: k.const(3, dt.int32, (N,)))
    a = rng.integers(-1000, 1000, N).astype(np.int32)
    legal = _run_both(kernel, [a, a], np.zeros(N, np.int32))
    assert [i.op for i in legal.walk()] == [i.op for i in kernel.walk()]


@pytest.mark.parametrize("op", [Op.ADD, Op.SUB, Op.MUL, Op.IDIV, Op.MOD, Op.SHL, Op.SHR, Op.MAXIMUM,
                                Op.MINIMUM, Op.MAXIMUM_NAN, Op.MINIMUM_NAN, Op.UMULHI], ids=lambda o: o.value)
def test_int1_arithmetic_becomes_bitwise(op):
    a = np.resize([False, False, True, True], N)  # every pair of bits
    b = np.resize([False, True, False, True], N)
    legal = _run_both(_binary_kernel(op, dt.int1), [a, b], np.zeros(N, bool))
    assert legal_op(op, dt.int1) in {Op.AND, Op.OR, Op.XOR} or op not in INT1_FORM
    left = {i.op for i in legal.walk() if i.operands and i.operands[0].type.dtype == dt.int1}
    assert left <= {Op.AND, Op.OR, Op.XOR, Op.NOT, Op.CONST}, left


def test_nan_to_int_expands_for_targets_without_it(rng):
    x = rng.standard_normal(N).astype(np.float32) * 1e10
    x[:6] = [np.nan, -np.nan, np.inf, -np.inf, 3e9, -3e9]
    strict = Legality(float_to_int_nan_is_zero=False)
    k = KB("to_int")
    px, po = k.ptr("x", dt.float32), k.ptr("o", dt.int32)
    offs = k.offsets(N)
    k.store(k.addptr(po, offs), k.cast(k.load(k.addptr(px, offs)), dt.int32))
    legal = _run_both(k.kernel(), [x], np.ones(N, np.int32), strict)
    assert Op.ISNAN in {i.op for i in legal.walk()}


def test_a_broadcast_scalar_divisor_is_guarded_once_before_the_broadcast(rng):
    """``x % n`` / ``x // n`` with a scalar ``n`` (the tutorial's ``offs % M``): the guard works on
    ``n`` itself, is broadcast after, and stands in for ``n`` in the axis analysis."""
    import tiles
    import tiles.language as tl
    from tiles.backends.lowering.axisinfo import analyze

    @tiles.jit
    def wrap(x_ptr, q_ptr, r_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        tl.store(q_ptr + offs, x // n)
        tl.store(r_ptr + offs, x % n)

    x = rng.integers(-1000, 1000, 64).astype(np.int32)
    x[:2] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max]
    for n in (0, -1, 7, -5, np.iinfo(np.int32).min):
        q, r = np.zeros(64, np.int32), np.zeros(64, np.int32)
        kernel = wrap.warmup(x, q, r, n, BLOCK=64, backend="interpreter").ir
        legal = legalize(copy.deepcopy(kernel), Legality())
        verify(legal)
        want_q, want_r, got_q, got_r = q.copy(), r.copy(), q.copy(), r.copy()
        interpret(kernel, (1,), [x, want_q, want_r, np.int32(n)])
        interpret(legal, (1,), [x, got_q, got_r, np.int32(n)])
        np.testing.assert_array_equal(got_q, want_q)
        np.testing.assert_array_equal(got_r, want_r)
    guards = [i for i in legal.walk() if i.op is Op.EQ]
    assert guards and all(i.results[0].type.numel == 1 for i in guards), "guards should be on the scalar"
    info = analyze(legal)
    wrapped = [i for i in legal.walk() if i.op is Op.MOD][0]
    assert info[wrapped.operands[1]] == info[legal.stand_ins[wrapped.operands[1]]]
