"""Tuples as kernel arguments (Triton 3's ``kernel[grid]((x, y), ...)``): each element is
specialized as if passed alone, the kernel gets a Python tuple, nested tuples and ``None``
elements work, and a constexpr tuple stays one compile-time value (runtime/expanded_args.py)."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.core.errors import LaunchError
from tiles.runtime.specialize import fact_of

OPENCL, OPENCL_WHY = registry.status("opencl")
CUDA, CUDA_WHY = registry.status("cuda")
BACKENDS = ["interpreter", pytest.param("opencl", marks=pytest.mark.skipif(not OPENCL, reason=str(OPENCL_WHY))),
            pytest.param("cuda", marks=pytest.mark.skipif(not CUDA, reason=str(CUDA_WHY)))]


@tiles.jit
def axpy_pairs(srcs, scales, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    (x_ptr, y_ptr), bias_ptr = srcs
    a, b = scales
    acc = a * tl.load(x_ptr + offs, mask=mask) + b * tl.load(y_ptr + offs, mask=mask)
    if bias_ptr is not None:
        acc += tl.load(bias_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)


@tiles.jit
def tile_of_shape(out_ptr, SHAPE: tl.constexpr):
    rows, cols = SHAPE
    offs = tl.arange(0, rows)[:, None] * cols + tl.arange(0, cols)[None, :]
    tl.store(out_ptr + offs, offs)


@tiles.jit
def split_store(x_ptr, outs, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(outs[0] + offs, tl.minimum(x, 0.0), mask=offs < n)
    tl.store(outs[1] + offs, tl.maximum(x, 0.0), mask=offs < n)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_tuple_of_arrays_scalars_and_none(backend, rng):
    n = 77
    x, y, bias = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    grid = (tiles.cdiv(n, 32),)
    out = np.empty(n, np.float32)
    axpy_pairs[grid](((x, y), bias), (2.5, -3), out, n, BLOCK=32, backend=backend)
    np.testing.assert_allclose(out, 2.5 * x - 3 * y + bias, rtol=1e-6, atol=1e-6)
    out16 = np.empty(n, np.float16)
    axpy_pairs[grid](((x.astype(np.float16), y), None), (1, 0.5), out16, n, BLOCK=32, backend=backend)
    expected = (x.astype(np.float16).astype(np.float32) + 0.5 * y).astype(np.float16)
    np.testing.assert_allclose(out16.astype(np.float32), expected.astype(np.float32), rtol=1e-3, atol=1e-3)
    axpy_pairs[grid](((x, y), bias), (2.5, -3), out, n, BLOCK=32, backend=backend)  # the first key again
    np.testing.assert_allclose(out, 2.5 * x - 3 * y + bias, rtol=1e-6, atol=1e-6)


def test_constexpr_tuple_is_one_compile_time_value():
    out = np.full((4, 8), -1, np.int32)
    tile_of_shape[(1,)](out, SHAPE=(4, 8))
    np.testing.assert_array_equal(out, np.arange(32).reshape(4, 8))


def test_launch_key_of_a_tuple_is_made_of_its_elements_facts():
    a, b = np.zeros(4, np.float32), np.ones(4, np.float32)
    assert fact_of((a, 3), "s") == fact_of((b, 5), "s")
    assert fact_of((a, 3), "s") != fact_of((a.astype(np.float16), 3), "s")
    assert fact_of((a, 1), "s") != fact_of((a, 3), "s")
    hash(fact_of(((a, None), 2.0), "s"))


def test_read_only_array_inside_a_tuple_is_named_by_its_element(rng):
    n = 8
    x = rng.standard_normal(n).astype(np.float32)
    low, high = np.empty(n, np.float32), np.empty(n, np.float32)
    split_store[(1,)](x, (low, high), n, BLOCK=8)
    np.testing.assert_array_equal(low, np.minimum(x, 0))
    np.testing.assert_array_equal(high, np.maximum(x, 0))
    high.flags.writeable = False
    with pytest.raises(LaunchError, match="'outs_1'"):
        split_store[(1,)](x, (low, high), n, BLOCK=8)


@tiles.jit
def strided_copy(src_ptr, dst_ptr, shape, strides, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    rows = tl.arange(0, BLOCK_R)[:, None]
    cols = tl.arange(0, BLOCK_C)[None, :]
    mask = (rows < shape[0]) & (cols < shape[1])
    x = tl.load(src_ptr + rows * strides[0] + cols * strides[1], mask=mask)
    tl.store(dst_ptr + rows * shape[1] + cols, x, mask=mask)


class SizeLike(tuple):
    """A tuple subclass that is not a namedtuple, as ``torch.Size`` is."""


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuple_subclass_argument_is_a_tuple(backend, rng):
    """``torch.Size``-like shapes (``x.shape``) pass as tuple arguments and as constexpr shapes."""
    src = rng.standard_normal((13, 24)).astype(np.float32)[:, 3:17]  # strided view, odd sizes
    out = np.zeros((13, 14), np.float32)
    strides = tuple(s // src.itemsize for s in src.strides)
    strided_copy[(1,)](src, out, SizeLike(src.shape), SizeLike(strides), BLOCK_R=16, BLOCK_C=16,
                       backend=backend)
    np.testing.assert_array_equal(out, src)
    grid = np.full((4, 8), -1, np.int32)
    tile_of_shape[(1,)](grid, SHAPE=SizeLike((4, 8)), backend=backend)
    np.testing.assert_array_equal(grid, np.arange(32).reshape(4, 8))


def test_torch_size_argument():
    torch = pytest.importorskip("torch")
    src = torch.randn(9, 20)[:, 2:13]
    out = torch.zeros(9, 11)
    strided_copy[(1,)](src, out, src.shape, src.stride(), BLOCK_R=16, BLOCK_C=16)
    assert torch.equal(out, src)
    assert fact_of(torch.Size([3, 5]), "s") == fact_of((3, 5), "s")


Window = namedtuple("Window", ["ptr", "rows", "cols", "stride"])
Other = namedtuple("Other", ["ptr", "rows", "cols", "stride"])


@tiles.jit
def window_sum(src, dst, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)[:, None]
    c = tl.arange(0, BLOCK)[None, :]
    mask = (r < src.rows) & (c < src.cols)
    x = tl.load(src.ptr + r * src.stride + c, mask=mask, other=0.0)
    tl.store(dst.ptr + r * dst.stride + c, x * 2 + 1, mask=mask)
    if isinstance(src, Window):  # the kernel gets the namedtuple's own class back
        tl.store(dst.ptr, -1.0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_namedtuple_arguments_keep_their_class(backend, rng):
    a = rng.standard_normal((9, 13)).astype(np.float32)
    for cls, corner in ((Window, -1.0), (Other, None)):
        out = np.zeros((9, 13), np.float32)
        window_sum[(1,)](cls(a, 9, 13, 13), cls(out, 9, 13, 13), BLOCK=16, backend=backend)
        want = a * 2 + 1
        if corner is not None:
            want[0, 0] = corner
        np.testing.assert_array_equal(out, want)
    assert fact_of(Window(a, 1, 2, 3), "s") != fact_of(Other(a, 1, 2, 3), "s")


Closure = namedtuple("Closure", ["fn", "captured"])


@tiles.jit
def scale_by(x, s_ptr):
    return x * tl.load(s_ptr)


@tiles.jit
def shift_by(x, s_ptr):
    return x + tl.load(s_ptr)


@tiles.jit
def apply_closure(closure, x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, closure.fn(x, *closure.captured), mask=offs < n)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_functions_as_arguments_are_compile_time(backend, rng):
    """A ``@jit`` function passed as an argument (here inside a namedtuple, as Triton's tests do) is
    a compile-time value: each function gets its own specialization."""
    x = rng.standard_normal(50).astype(np.float32)
    s = rng.standard_normal(1).astype(np.float32)
    for fn, want in ((scale_by, x * s[0]), (shift_by, x + s[0]), (scale_by, x * s[0])):
        out = np.zeros(50, np.float32)
        apply_closure[(1,)](Closure(fn, (s,)), x, out, 50, BLOCK=64, backend=backend)
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
