"""``tl.str_to_ty``, ``tl.tuple_type``, ``tl.tensor_descriptor_type``: Triton's signature type strings
read into tiles' types, and the names Triton 3.9 exports that tiles declares unsupported."""

from collections import namedtuple

import numpy as np
import pytest

import tiles
import tiles.language as tl

pytestmark = pytest.mark.backends("interpreter")


def test_scalars_and_pointers():
    assert tl.str_to_ty("i32", None) is tl.int32
    assert tl.str_to_ty("fp8e5b16", None) is tl.float8e5b16
    assert tl.str_to_ty("*fp16", None) == tl.pointer_type(tl.float16)
    assert tl.str_to_ty("*kbf16", None) == tl.pointer_type(tl.bfloat16)  # read-only: the same type here
    assert tl.str_to_ty("constexpr", 7) == tl.constexpr_type(7)
    with pytest.raises(TypeError, match="no type named 'fp7'"):
        tl.str_to_ty("fp7", None)


def test_tuples_and_descriptors():
    pair = namedtuple("pair", ["ptr", "n"])
    t = tl.str_to_ty(pair("*fp32", "i64"), None)
    assert isinstance(t, tl.tuple_type) and t.fields == ["ptr", "n"] and len(t) == 2
    assert t[0] == tl.pointer_type(tl.float32) and list(t) == [t[0], tl.int64]
    assert str(t) == "[ptr:ptr<float32>,n:int64]"
    assert tl.str_to_ty(("i32", "i32"), None) == tl.tuple_type([tl.int32, tl.int32])
    assert tl.str_to_ty(("i32", "i32"), None) != tl.tuple_type([tl.int32, tl.int64])
    d = tl.str_to_ty("tensordesc<fp16[16, 64]>", None)
    assert isinstance(d, tl.tensor_descriptor_type) and d.block_shape == [16, 64]
    assert d.block_type == tl.block_type(tl.float16, (16, 64))
    assert d.shape_type == tl.tuple_type([tl.int32] * 2) and d.strides_type == tl.tuple_type([tl.int64] * 2)


@tiles.jit
def replace_kernel(x_ptr):
    tl.aggregate_replace(x_ptr, a=1)


def test_aggregate_replace_is_declared_unsupported():
    with pytest.raises(tiles.CompilationError, match="aggregate"):
        replace_kernel[(1,)](np.zeros(1, np.float32))
