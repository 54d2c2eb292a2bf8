"""lowering/contract.py (enable_fp_fusion): single-use float32/float64 products feeding an ADD or
SUB of the same block become FMAs, which the interpreter runs with one rounding, exactly as the
same kernel written with tl.fma; products used twice, products from outside a loop and
libdevice's mul_rn/add_rn/sub_rn are left alone."""

import copy

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.lowering.contract import contract_multiply_adds
from tiles.core.ops import Op
from tiles.core.verify import verify
from tiles.interp import interpret
from tiles.language.extra import libdevice

N = 257


@tiles.jit
def sums(a_ptr, b_ptr, c_ptr, o_ptr, n, FORM: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a, b, c = tl.load(a_ptr + offs, mask=mask), tl.load(b_ptr + offs, mask=mask), tl.load(c_ptr + offs, mask=mask)
    if FORM == 0:
        r = a * b + c
    elif FORM == 1:
        r = c + a * b
    elif FORM == 2:
        r = a * b - c
    elif FORM == 3:
        r = c - a * b
    elif FORM == 4:
        r = tl.fma(a, b, c)
    elif FORM == 5:
        r = tl.fma(a, b, -c)
    elif FORM == 6:
        r = tl.fma(-a, b, c)
    elif FORM == 7:  # the product used twice: not fused
        p = a * b
        r = p + c + p
    else:  # libdevice's explicitly rounded forms: never fused
        r = libdevice.add_rn(libdevice.mul_rn(a, b), c)
    tl.store(o_ptr + offs, r, mask=mask)


@tiles.jit
def loop_sum(a_ptr, b_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a, b = tl.load(a_ptr + offs), tl.load(b_ptr + offs)
    p = a * b  # outside the loop: fusing it into the loop's add would redo it every trip
    acc = tl.zeros([BLOCK], dtype=a.dtype)
    for _ in range(3):
        acc = acc * b + p
    tl.store(o_ptr + offs, acc)


def _inputs(dtype, rng):
    a = rng.standard_normal(N).astype(dtype)
    b = rng.standard_normal(N).astype(dtype)
    with np.errstate(all="ignore"):
        c = -(a * b)  # the product's rounding error is all that is left when fused
        c[:8] = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30, -1e-30, 3.0]).astype(dtype)
    return a, b, c


def _ir(form, dtype):
    arrays = _inputs(dtype, np.random.default_rng(0))
    return sums.warmup(*arrays, arrays[0], N, FORM=form, BLOCK=512, backend="interpreter").ir


def _interpret(kernel, arrays):
    out = np.full(N, 7.0, arrays[0].dtype)
    with np.errstate(all="ignore"):
        interpret(kernel, (1,), [*arrays, out, N])
    return out


def _count(kernel, op):
    return sum(1 for i in kernel.walk() if i.op is op)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
@pytest.mark.parametrize("form,fma_form", [(0, 4), (1, 4), (2, 5), (3, 6)])
def test_contracted_sum_is_the_fma_written_out(form, fma_form, dtype, rng):
    ir = _ir(form, dtype)
    fused = contract_multiply_adds(copy.deepcopy(ir))
    verify(fused)
    assert _count(fused, Op.FMA) == 1 and _count(fused, Op.MUL) == 0
    arrays = _inputs(dtype, rng)
    got = _interpret(fused, arrays)
    np.testing.assert_array_equal(got, _interpret(_ir(fma_form, dtype), arrays))
    assert not np.array_equal(got, _interpret(ir, arrays)), "these inputs cannot tell fused from unfused"


@pytest.mark.parametrize("form", [7, 8])
def test_shared_products_and_libdevice_rounding_stay(form, rng):
    ir = _ir(form, np.float32)
    fused = contract_multiply_adds(copy.deepcopy(ir))
    assert _count(fused, Op.FMA) == _count(ir, Op.FMA)
    arrays = _inputs(np.float32, rng)
    np.testing.assert_array_equal(_interpret(fused, arrays), _interpret(ir, arrays))


def test_float16_is_not_contracted():
    ir = _ir(0, np.float16)
    assert _count(contract_multiply_adds(copy.deepcopy(ir)), Op.FMA) == 0


def test_products_from_outside_a_loop_stay_outside(rng):
    a, b = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    ir = loop_sum.warmup(a, b, a, BLOCK=64, backend="interpreter").ir
    fused = contract_multiply_adds(copy.deepcopy(ir))
    verify(fused)
    (loop,) = [i for i in fused.walk() if i.op is Op.FOR]
    assert [i.op for i in loop.regions[0].instrs].count(Op.FMA) == 1  # acc * b + p
    assert _count(fused, Op.MUL) == 1  # p = a * b, still before the loop
