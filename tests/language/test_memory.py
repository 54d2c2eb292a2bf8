"""Loads and stores: masks, other, strides; block pointers; tensor descriptors."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def masked_copy_kernel(x_ptr, out_ptr, n, other, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=other)
    tl.store(out_ptr + offs, x * 2, mask=offs < n + BLOCK // 2)  # writes `other * 2` past n


@pytest.mark.parametrize("n", [1, 31, 64, 100])
def test_masked_load_with_other(rng, n):
    block = 32
    total = tiles.cdiv(n, block) * block + block
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(total, 123.0, np.float32)
    masked_copy_kernel[(tiles.cdiv(n, block),)](x, out, n, -7.5, BLOCK=block)
    np.testing.assert_array_equal(out[:n], x * 2)
    written_other = min(n + block // 2, tiles.cdiv(n, block) * block)
    np.testing.assert_array_equal(out[n:written_other], -15.0)
    np.testing.assert_array_equal(out[written_other:], 123.0)


@tiles.jit
def strided_kernel(x_ptr, out_ptr, rows, cols, stride_r, stride_c, BR: tl.constexpr, BC: tl.constexpr):
    r = tl.arange(0, BR)[:, None]
    c = tl.arange(0, BC)[None, :]
    mask = (r < rows) & (c < cols)
    x = tl.load(x_ptr + r * stride_r + c * stride_c, mask=mask, other=0)
    tl.store(out_ptr + c * rows + r, x, mask=mask)  # transposed, contiguous


def test_strided_view_load(rng):
    base = rng.integers(-100, 100, (10, 14)).astype(np.int16)
    view = base[1:, ::3]                      # a non-contiguous view: 9 x 5
    out = np.empty(view.size, np.int16)
    strided_kernel[(1,)](view, out, 9, 5, view.strides[0] // 2, view.strides[1] // 2, BR=16, BC=8)
    np.testing.assert_array_equal(out.reshape(5, 9), view.T)


@tiles.jit
def contiguous_fill_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float32) + 0.5, mask=offs < n)


def test_contiguous_write_through_a_strided_view_lands_where_a_gpu_puts_it(rng):
    """A kernel that ignores a view's strides writes the bytes after the view's first element, as
    on a GPU with a device tensor: every backend changes the same bytes (the gaps included), and
    leaves every byte the kernel did not write alone."""
    base = rng.standard_normal(47).astype(np.float32) + 2.0
    want = base.copy()
    want[:10] = np.arange(10, dtype=np.float32) + 0.5
    contiguous_fill_kernel[(1,)](base[::4], 10, BLOCK=16)
    np.testing.assert_array_equal(base, want)


@tiles.jit
def scalar_pointer_kernel(x_ptr, out_ptr, i):
    v = tl.load(x_ptr + i)
    tl.store(out_ptr, v + 1)
    tl.store(out_ptr + 1, tl.load(x_ptr + i + 1, mask=i < 0, other=-1))


def test_scalar_load_store():
    x = np.arange(10, dtype=np.int64) * 3
    out = np.zeros(2, np.int64)
    scalar_pointer_kernel[(1,)](x, out, 4)
    np.testing.assert_array_equal(out, [13, -1])


@tiles.jit
def block_ptr_kernel(x_ptr, out_ptr, M, N, stride_m, BM: tl.constexpr, BN: tl.constexpr, PAD: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_m, 1), offsets=(pid * BM, 0),
                            block_shape=(BM, BN), order=(1, 0))
    dst = tl.make_block_ptr(out_ptr, shape=(M, N), strides=(N, 1), offsets=(pid * BM, 0),
                            block_shape=(BM, BN), order=(1, 0))
    for _ in range(0, tl.cdiv(N, BN)):
        tile = tl.load(src, boundary_check=(0, 1), padding_option=PAD)
        tl.store(dst, tile + 1, boundary_check=(0, 1))
        src = tl.advance(src, (0, BN))
        dst = tl.advance(dst, (0, BN))


def test_block_pointer_in_a_loop_with_boundary_checks(rng):
    x = rng.standard_normal((37, 45)).astype(np.float32)
    out = np.full((37, 45), np.nan, np.float32)
    block_ptr_kernel[(tiles.cdiv(37, 16),)](x, out, 37, 45, 45, BM=16, BN=16, PAD="zero")
    np.testing.assert_array_equal(out, x + 1)


@tiles.jit
def block_ptr_padding_kernel(x_ptr, out_ptr, N, BN: tl.constexpr, PAD: tl.constexpr):
    src = tl.make_block_ptr(x_ptr, shape=(N,), strides=(1,), offsets=(0,), block_shape=(BN,), order=(0,))
    tl.store(out_ptr + tl.arange(0, BN), tl.load(src, boundary_check=(0,), padding_option=PAD))


@pytest.mark.parametrize("pad", ["zero", "nan"])
def test_block_pointer_padding(rng, pad):
    x = rng.standard_normal(11).astype(np.float32)
    out = np.empty(16, np.float32)
    block_ptr_padding_kernel[(1,)](x, out, 11, BN=16, PAD=pad)
    np.testing.assert_array_equal(out[:11], x)
    if pad == "nan":
        assert np.isnan(out[11:]).all()
    else:
        np.testing.assert_array_equal(out[11:], 0.0)


@tiles.jit
def descriptor_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    # reads past the edge give zeros; writes past it are dropped
    tile = src.load([pm * BM - 3, pn * BN + 5])
    dst.store([pm * BM, pn * BN], tile * 10)


def test_tensor_descriptor_out_of_bounds(rng):
    m, n = 20, 27
    x = rng.integers(1, 100, (m, n)).astype(np.int32)
    out = np.full((m, n), -1, np.int32)
    descriptor_kernel[(tiles.cdiv(m, 8), tiles.cdiv(n, 8))](x, out, m, n, BM=8, BN=8)
    want = np.zeros((m, n), np.int32)
    for r in range(m):
        for c in range(n):
            src_r, src_c = r - 3, c + 5
            want[r, c] = 10 * x[src_r, src_c] if 0 <= src_r < m and 0 <= src_c < n else 0
    np.testing.assert_array_equal(out, want)
