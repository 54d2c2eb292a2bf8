"""The op -> attribute-record schema the verifier checks, typed combine kinds, and the
scalar division helpers of core/semantics.py."""

import dataclasses

import numpy as np
import pytest

from tiles.core import attrs as A  # noqa: N812
from tiles.core import dtypes as D  # noqa: N812
from tiles.core.builder import Builder
from tiles.core.errors import CompilationError
from tiles.core.ir import Kernel, Param, TileType, Value
from tiles.core.kinds import AtomicKind, ReduceKind
from tiles.core.ops import Op
from tiles.core.semantics import apply, trunc_div, trunc_mod
from tiles.core.verify import verify


def _kernel_with(attrs):
    b = Builder()
    n = Value(TileType(D.int32), "n")
    (r,) = b.emit(Op.CONST, [], A.Const(3, D.int32))
    b.emit(Op.ADD, [n, r])
    kernel = Kernel("k", [Param("n", n)], b.blocks[0])
    if attrs is not None:
        instr = kernel.body.instrs[1]
        kernel.body.instrs[1] = dataclasses.replace(instr, attrs=attrs)
    return kernel


def test_verifier_accepts_the_right_records_and_names_the_wrong_one():
    verify(_kernel_with(None))
    with pytest.raises(CompilationError, match="add: attrs must be NoneType, got Const"):
        verify(_kernel_with(A.Const(1, D.int32)))


def test_kinds_are_enums_that_read_as_their_names():
    r = A.Reduce(0, "max_nan")
    assert r.kind is ReduceKind.MAX_NAN and r.kind == "max_nan" and r.kind.op is Op.MAXIMUM_NAN
    assert A.Atomic("xchg", False).kind is AtomicKind.XCHG and AtomicKind.XCHG.op is None
    assert AtomicKind.ADD.op is Op.ADD and ReduceKind.SUM.op is Op.ADD
    with pytest.raises(ValueError):
        A.Reduce(0, "median")
    with pytest.raises(ValueError):
        A.ArgReduce(0, "sum")


def test_python_int_division_truncates_like_the_ir(rng):
    a = rng.integers(-1000, 1000, 200)
    b = rng.integers(1, 50, 200) * rng.choice([-1, 1], 200)
    rt = TileType(D.int64, (200,))
    q = apply(Op.IDIV, None, [a, b], rt)
    m = apply(Op.MOD, None, [a, b], rt)
    assert [trunc_div(int(x), int(y)) for x, y in zip(a, b)] == q.tolist()
    assert [trunc_mod(int(x), int(y)) for x, y in zip(a, b)] == m.tolist()
    assert trunc_div(-7, 2) == -3 and trunc_mod(-7, 2) == -1 and np.all(q * b + m == a)
