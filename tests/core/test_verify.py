"""The IR verifier accepts what the builder makes and names the instruction of each mistake."""

import dataclasses

import pytest
from core_ir import IR

from tiles.core import attrs as A
from tiles.core import dtypes as D
from tiles.core.errors import CompilationError
from tiles.core.ir import Instr, TileType, Value
from tiles.core.ops import Op
from tiles.core.verify import verify

N = 8


def looped_kernel():
    """out[:N] = sum over i < n of (x[:N] + i) if flag else x[:N]: a FOR and an IF with yields."""
    ir = IR("looped")
    x, out = ir.pointer("x", D.float32), ir.pointer("out", D.float32)
    n, flag = ir.param("n", D.int32), ir.param("flag", D.int1)
    xs = ir.load(x, N)
    zero, one = ir.const(0, D.int32), ir.const(1, D.int32)

    def body(i, acc):
        step = ir.splat(ir.emit(Op.CAST, i, attrs=A.Cast(D.float32)), (N,))
        return [ir.emit(Op.ADD, acc, ir.emit(Op.ADD, xs, step))]

    (total,) = [ir.for_loop(zero, n, one, [ir.const(0.0, D.float32, (N,))], body)]
    picked = ir.if_else(flag, lambda: [total], lambda: [xs], [xs.type])
    ir.store(out, picked)
    return ir.kernel()


def test_a_well_formed_kernel_passes():
    verify(looped_kernel())


def _first(kernel, op):
    return next(i for i in kernel.walk() if i.op is op)


def _replace(block, old, new):
    block.instrs[block.instrs.index(old)] = new


def test_use_before_definition():
    kernel = looped_kernel()
    add = _first(kernel, Op.ADD)
    stranger = Value(add.operands[0].type)
    (loop,) = [i for i in kernel.body.instrs if i.op is Op.FOR]
    body = loop.regions[0]
    _replace(body, add, dataclasses.replace(add, operands=(stranger, add.operands[1])))
    with pytest.raises(CompilationError, match="add: operand .* used before it is defined"):
        verify(kernel)


def test_a_value_from_inside_a_loop_is_not_visible_after_it():
    ir = IR()
    x = ir.pointer("x", D.float32)
    zero, one = ir.const(0, D.int32), ir.const(1, D.int32)
    inner = []

    def body(i, acc):
        inner.append(ir.emit(Op.ADD, acc, acc))
        return [inner[0]]

    ir.for_loop(zero, one, one, [ir.const(1.0, D.float32, (N,))], body)
    ir.store(x, inner[0])
    with pytest.raises(CompilationError, match="store: operand .* used before it is defined"):
        verify(ir.kernel())


def test_result_type_disagreeing_with_the_rule():
    kernel = looped_kernel()
    cast = _first(kernel, Op.CAST)
    wrong = Value(TileType(D.float64))
    (loop,) = [i for i in kernel.body.instrs if i.op is Op.FOR]
    _replace(loop.regions[0], cast, dataclasses.replace(cast, results=(wrong,)))
    with pytest.raises(CompilationError, match=r"cast: results .*float64.* != .*float32"):
        verify(kernel)


def test_operands_the_rule_refuses():
    ir = IR()
    a, b = ir.const(1, D.int32, (N,)), ir.const(1.0, D.float32, (N,))
    ir.builder.block.instrs.append(Instr(Op.MUL, (a, b), (Value(a.type),)))
    with pytest.raises(CompilationError, match="mul: .*operands differ"):
        verify(ir.kernel())


def test_loop_yield_of_another_type():
    kernel = looped_kernel()
    (loop,) = [i for i in kernel.body.instrs if i.op is Op.FOR]
    body = loop.regions[0]
    body.yields = [body.args[0]]  # the int32 index where a float32 tile is carried
    with pytest.raises(CompilationError, match="for: inits, region args, yields and results"):
        verify(kernel)


def test_if_branches_must_yield_the_result_types():
    kernel = looped_kernel()
    (branch,) = [i for i in kernel.body.instrs if i.op is Op.IF]
    branch.regions[1].yields = []
    with pytest.raises(CompilationError, match="if: both regions"):
        verify(kernel)


def test_yield_of_an_undefined_value():
    kernel = looped_kernel()
    (branch,) = [i for i in kernel.body.instrs if i.op is Op.IF]
    then = branch.regions[0]
    then.yields = [Value(then.yields[0].type)]
    with pytest.raises(CompilationError, match="yield of undefined"):
        verify(kernel)


def test_errors_point_at_the_instruction_location():
    import tiles
    import tiles.language as tl

    @tiles.jit
    def scaled(x_ptr, BLOCK: tl.constexpr):
        x = tl.load(x_ptr + tl.arange(0, BLOCK))
        tl.store(x_ptr + tl.arange(0, BLOCK), x * 2.0)

    import numpy as np
    x = np.ones(N, np.float32)
    kernel = scaled.trace(scaled.specialize({"x_ptr": x, "BLOCK": N}))
    verify(kernel)
    mul = _first(kernel, Op.MUL)
    _replace(kernel.body, mul, dataclasses.replace(mul, results=(Value(TileType(D.int32, (N,))),)))
    with pytest.raises(CompilationError) as info:
        verify(kernel)
    assert f"test_verify.py:{mul.loc.line}" in str(info.value)
    assert "x * 2.0" in mul.loc.source
