"""The typing table: each op's result types from its operand types, and the mistakes it refuses."""

import pytest

from tiles.core import attrs as A
from tiles.core import dtypes as D
from tiles.core.ir import TileType
from tiles.core.ops import BINARY_ARITH, COMPARISON, MATH, Op
from tiles.core.typerules import TYPE_RULES, IRTypeError, infer

F32 = TileType(D.float32, (4, 8))
I32 = TileType(D.int32, (4, 8))


def test_every_op_without_regions_has_a_rule():
    assert set(Op) - set(TYPE_RULES) == {Op.FOR, Op.WHILE, Op.IF}
    with pytest.raises(IRTypeError, match="regions"):
        infer(Op.FOR, [], None)


@pytest.mark.parametrize("op", sorted(BINARY_ARITH, key=lambda o: o.value), ids=lambda o: o.value)
def test_binary_ops_keep_the_operand_type_and_refuse_mixed_ones(op):
    assert infer(op, [I32, I32], None) == (I32,)
    with pytest.raises(IRTypeError, match="operands differ"):
        infer(op, [I32, F32], None)
    with pytest.raises(IRTypeError, match="operands differ"):
        infer(op, [I32, TileType(D.int32, (8, 4))], None)


@pytest.mark.parametrize("op", sorted(COMPARISON, key=lambda o: o.value), ids=lambda o: o.value)
def test_comparisons_give_int1_of_the_operand_shape(op):
    assert infer(op, [F32, F32], None) == (TileType(D.int1, (4, 8)),)
    with pytest.raises(IRTypeError):
        infer(op, [F32, TileType(D.float16, (4, 8))], None)


def test_unary_math_and_fma_and_isnan():
    for op in MATH:
        assert infer(op, [F32], None) == (F32,)
    assert infer(Op.FMA, [F32, F32, F32], None) == (F32,)
    with pytest.raises(IRTypeError):
        infer(Op.FMA, [F32, F32, TileType(D.float64, (4, 8))], None)
    assert infer(Op.ISNAN, [F32], None) == (TileType(D.int1, (4, 8)),)


def test_creation_ops():
    assert infer(Op.CONST, [], A.Const(1.5, D.float16, (2, 2))) == (TileType(D.float16, (2, 2)),)
    assert infer(Op.ARANGE, [], A.Arange(16, 48)) == (TileType(D.int32, (32,)),)
    assert infer(Op.PROGRAM_ID, [], A.Axis(2)) == (TileType(D.int32),)


def test_cast_where_and_pointers():
    assert infer(Op.CAST, [I32], A.Cast(D.bfloat16)) == (TileType(D.bfloat16, (4, 8)),)
    mask = TileType(D.int1, (4, 8))
    assert infer(Op.WHERE, [mask, F32, F32], None) == (F32,)
    with pytest.raises(IRTypeError, match="condition"):
        infer(Op.WHERE, [I32, F32, F32], None)
    with pytest.raises(IRTypeError, match="condition"):
        infer(Op.WHERE, [TileType(D.int1, (8, 4)), F32, F32], None)
    ptrs = TileType(D.PointerType(D.float16), (4, 8))
    assert infer(Op.ADDPTR, [ptrs, I32], None) == (ptrs,)
    with pytest.raises(IRTypeError, match="addptr"):
        infer(Op.ADDPTR, [I32, I32], None)
    assert infer(Op.LOAD, [ptrs], A.Load(False, False)) == (TileType(D.float16, (4, 8)),)
    with pytest.raises(IRTypeError, match="pointer"):
        infer(Op.LOAD, [F32], A.Load(False, False))
    assert infer(Op.STORE, [ptrs, TileType(D.float16, (4, 8))], A.Store(False)) == ()
    assert infer(Op.PTR_TO_INT, [ptrs], None) == (I32.with_dtype(D.int64),)


def test_shape_ops():
    row = TileType(D.float32, (1, 8))
    assert infer(Op.BROADCAST, [row], A.Shape((4, 8))) == (F32,)
    assert infer(Op.BROADCAST, [TileType(D.float32)], A.Shape((4, 8))) == (F32,)
    with pytest.raises(IRTypeError, match="broadcast"):
        infer(Op.BROADCAST, [TileType(D.float32, (3, 8))], A.Shape((4, 8)))
    assert infer(Op.RESHAPE, [F32], A.Shape((32,))) == (TileType(D.float32, (32,)),)
    with pytest.raises(IRTypeError, match="size"):
        infer(Op.RESHAPE, [F32], A.Shape((31,)))
    assert infer(Op.PERMUTE, [TileType(D.int8, (2, 3, 5))], A.Permute((2, 0, 1))) == \
        (TileType(D.int8, (5, 2, 3)),)
    with pytest.raises(IRTypeError, match="permutation"):
        infer(Op.PERMUTE, [F32], A.Permute((0, 0)))
    assert infer(Op.JOIN, [F32, F32], None) == (TileType(D.float32, (4, 8, 2)),)
    pair = TileType(D.float32, (4, 2))
    assert infer(Op.SPLIT, [pair], None) == (TileType(D.float32, (4,)),) * 2
    with pytest.raises(IRTypeError, match="size 2"):
        infer(Op.SPLIT, [F32], None)
    assert infer(Op.CAT, [F32, TileType(D.float32, (3, 8))], None) == (TileType(D.float32, (7, 8)),)
    with pytest.raises(IRTypeError, match="concatenate"):
        infer(Op.CAT, [F32, TileType(D.float32, (4, 7))], None)


def test_reductions_drop_their_axis_and_check_it():
    assert infer(Op.REDUCE, [F32], A.Reduce(1, "sum")) == (TileType(D.float32, (4,)),)
    assert infer(Op.REDUCE, [F32], A.Reduce(0, "max")) == (TileType(D.float32, (8,)),)
    with pytest.raises(IRTypeError, match="out of range"):
        infer(Op.REDUCE, [F32], A.Reduce(2, "sum"))
    assert infer(Op.ARGREDUCE, [F32], A.ArgReduce(0, "min")) == (TileType(D.int32, (8,)),)
    assert infer(Op.SCAN, [F32], A.Reduce(1, "sum")) == (F32,)
    with pytest.raises(IRTypeError, match="out of range"):
        infer(Op.SCAN, [F32], A.Reduce(5, "sum"))
    ints = TileType(D.int16, (64,))
    assert infer(Op.HISTOGRAM, [ints], A.Histogram(10)) == (TileType(D.int32, (10,)),)
    with pytest.raises(IRTypeError, match="histogram"):
        infer(Op.HISTOGRAM, [TileType(D.float32, (64,))], A.Histogram(10))
    index = TileType(D.int64, (2, 8))
    assert infer(Op.GATHER, [F32, index], A.Gather(0)) == (TileType(D.float32, (2, 8)),)
    with pytest.raises(IRTypeError, match="gather"):
        infer(Op.GATHER, [F32, TileType(D.float32, (2, 8))], A.Gather(0))


def test_dot_checks_inner_and_accumulator_shapes():
    a, b = TileType(D.float16, (16, 32)), TileType(D.float16, (32, 8))
    acc = TileType(D.float32, (16, 8))
    assert infer(Op.DOT, [a, b, acc], A.Dot()) == (acc,)
    batched = (TileType(D.float16, (2, 16, 32)), TileType(D.float16, (2, 32, 8)), TileType(D.float32, (2, 16, 8)))
    assert infer(Op.DOT, list(batched), A.Dot()) == (batched[2],)
    with pytest.raises(IRTypeError, match="inner"):
        infer(Op.DOT, [a, TileType(D.float16, (16, 8)), acc], A.Dot())
    with pytest.raises(IRTypeError, match="accumulator"):
        infer(Op.DOT, [a, b, TileType(D.float32, (8, 16))], A.Dot())
    with pytest.raises(IRTypeError, match="2D or 3D"):
        infer(Op.DOT, [TileType(D.float16, (32,)), b, acc], A.Dot())


def test_math_fn_types_come_from_the_function_table():
    assert infer(Op.MATH_FN, [F32], A.MathFn("tanh")) == (F32,)
    assert infer(Op.MATH_FN, [F32], A.MathFn("isinf")) == (F32.with_dtype(D.int1),)
    with pytest.raises(IRTypeError, match="shapes differ"):
        infer(Op.MATH_FN, [F32, TileType(D.float32, (8,))], A.MathFn("pow"))
