"""Types on values as Triton exposes them: x.type, x.dtype, element_ty, is_ptr(), tl.pointer_type..."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


def test_dtype_queries_are_triton_methods():
    assert tl.float16.is_fp16() and tl.bfloat16.is_bf16() and tl.float32.is_fp32() and tl.float64.is_fp64()
    assert tl.float16.is_floating() and not tl.int8.is_floating() and tl.int8.is_int()
    assert tl.int8.is_int_signed() and not tl.uint8.is_int_signed() and tl.uint8.is_int_unsigned()
    assert tl.int1.is_bool() and tl.float8e4nv.is_fp8() and tl.float8e5.is_fp8e5()
    assert tl.float16.primitive_bitwidth == 16 and tl.int64.primitive_bitwidth == 64
    assert tl.float32.fp_mantissa_width == 23 and tl.int32.int_bitwidth == 32
    assert tl.float16.scalar is tl.float16 and not tl.float16.is_ptr() and not tl.float16.is_block()
    assert tl.int8.get_int_max_value() == 127 and tl.int8.get_int_min_value() == -128
    # tiles' own code reads the same queries as properties
    assert tl.float16.is_floating and not tl.int32.is_floating


def test_pointer_and_block_types():
    p = tl.pointer_type(tl.float16)
    assert p == tl.pointer_type(tl.float16) and hash(p) == hash(tl.pointer_type(tl.float16))
    assert p != tl.pointer_type(tl.float32) and p.element_ty is tl.float16 and p.is_ptr()
    assert p.scalar is p and not p.is_floating() and not p.is_block()
    b = tl.block_type(tl.float32, [4, 8])
    assert b == tl.block_type(tl.float32, (4, 8)) and hash(b) == hash(tl.block_type(tl.float32, [4, 8]))
    assert b.is_block() and b.element_ty is tl.float32 and b.scalar is tl.float32 and b.shape == (4, 8)
    assert b.get_block_shapes() == (4, 8) and b.nbytes == 128 and not b.is_ptr()
    assert {tl.float16: 1}[tl.float16] == 1 and tl.dtype is type(tl.float16)
    assert isinstance(tl.float16, tl.dtype)


@tiles.jit
def attention_style_kernel(X, O, n, BLOCK: tl.constexpr):  # noqa: E741  (the tutorial's names)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs)
    tl.static_assert(X.type.element_ty == tl.float16)        # scalar pointer: pointee
    tl.static_assert(X.type.is_ptr() and X.dtype.is_ptr())
    tl.static_assert(X.dtype.element_ty == tl.float16)
    ptrs = X + offs
    tl.static_assert(ptrs.type.is_block() and not ptrs.type.is_ptr())
    tl.static_assert(ptrs.type.element_ty == tl.pointer_type(tl.float16))
    tl.static_assert(ptrs.dtype.element_ty == tl.float16)
    tl.static_assert(ptrs.type.shape == (BLOCK,))
    tl.static_assert(x.type.is_block() and x.type.element_ty == tl.float16)
    tl.static_assert(x.dtype == tl.float16 and x.dtype.is_fp16() and x.type.scalar.is_floating())
    tl.static_assert(O.dtype.element_ty.primitive_bitwidth == 32)
    tl.static_assert(n.type.is_int_signed() and n.dtype == tl.int32 and not n.type.is_block())
    tl.static_assert(isinstance(x, tl.tensor) and isinstance(x.dtype, tl.dtype))
    lowest = tl.full([BLOCK], float("-inf"), x.dtype)
    acc = tl.maximum(x.to(tl.float32), lowest.to(tl.float32)) * 2
    acc = tl.where(offs < n, acc, 0.0)
    tl.store(O + offs, acc.to(O.type.element_ty))


def test_attention_style_type_idioms(rng):
    x = rng.standard_normal(16).astype(np.float16)
    x[:2] = [-np.inf, -0.0]
    o = np.full(16, 7, np.float32)
    attention_style_kernel[(1,)](x, o, 13, BLOCK=16)
    want = np.where(np.arange(16) < 13, x.astype(np.float32) * 2, 0)
    np.testing.assert_array_equal(o, want)


@tiles.jit
def ptr_from_int_kernel(addrs, out, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    base = tl.load(addrs + g).to(tl.pointer_type(tl.float16))
    tl.static_assert(base.dtype == tl.pointer_type(tl.float16))
    tl.static_assert(base.dtype.element_ty == tl.float16)
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, tl.load(base + offs))


def test_pointer_from_integer_traces():
    text = ptr_from_int_kernel.ir(np.zeros(2, np.int64), np.zeros(16, np.float16), BLOCK=16)
    assert "int_to_ptr" in text


@pytest.mark.parametrize("dtype,bits", [(np.float16, 16), (np.float32, 32), (np.float64, 64)])
def test_bitwidth_picks_int_type(rng, dtype, bits):
    @tiles.jit
    def k(x_ptr, o_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        x = tl.load(x_ptr + offs)
        if x.dtype.primitive_bitwidth == 16:
            it = tl.int16
        elif x.dtype.primitive_bitwidth == 32:
            it = tl.int32
        else:
            it = tl.int64
        tl.store(o_ptr + offs, (x.to(it, bitcast=True) >> (x.dtype.primitive_bitwidth - 1)).to(tl.int8))

    x = rng.standard_normal(8).astype(dtype)
    x[0] = -0.0
    o = np.zeros(8, np.int8)
    k[(1,)](x, o, N=8)
    np.testing.assert_array_equal(o, np.where(np.signbit(x), -1, 0))
    assert x.dtype.itemsize * 8 == bits
