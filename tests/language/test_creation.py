"""arange, zeros, full, program_id and num_programs over 1D-3D grids."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def arange_kernel(out_ptr, START: tl.constexpr, END: tl.constexpr):
    tl.store(out_ptr + tl.arange(0, END - START), tl.arange(START, END))


@pytest.mark.parametrize("start,end", [(0, 1), (0, 16), (5, 69), (-8, 0)])
def test_arange(start, end):
    out = np.full(end - start, -999, dtype=np.int32)
    arange_kernel[(1,)](out, START=start, END=end)
    np.testing.assert_array_equal(out, np.arange(start, end, dtype=np.int32))


@tiles.jit
def full_kernel(out_ptr, value, R: tl.constexpr, C: tl.constexpr, DTYPE: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(out_ptr + offs, tl.full((R, C), value, DTYPE))
    tl.store(out_ptr + R * C + offs, tl.zeros([R, C], dtype=DTYPE))
    tl.store(out_ptr + 2 * R * C + offs, tl.full([R, C], 7, DTYPE) + tl.zeros_like(offs).to(DTYPE))


@pytest.mark.parametrize("np_dtype,tl_dtype,value", [
    (np.float32, tl.float32, -2.5), (np.float16, tl.float16, 65504.0), (np.int8, tl.int8, -128),
    (np.uint16, tl.uint16, 65535), (np.int64, tl.int64, -(2**40)),
])
def test_full_and_zeros(np_dtype, tl_dtype, value):
    out = np.full(3 * 4 * 8, 99, dtype=np_dtype)
    full_kernel[(1,)](out, value, R=4, C=8, DTYPE=tl_dtype)
    parts = out.reshape(3, 4, 8)
    np.testing.assert_array_equal(parts[0], np.full((4, 8), value, dtype=np_dtype))
    np.testing.assert_array_equal(parts[1], 0)
    np.testing.assert_array_equal(parts[2], 7)


@tiles.jit
def grid_kernel(out_ptr):
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    nx, ny, nz = tl.num_programs(0), tl.num_programs(1), tl.num_programs(2)
    flat = (z * ny + y) * nx + x
    lanes = tl.arange(0, 8)
    values = tl.where(lanes == 0, x, tl.where(lanes == 1, y, tl.where(lanes == 2, z, tl.where(
        lanes == 3, nx, tl.where(lanes == 4, ny, tl.where(lanes == 5, nz, flat))))))
    tl.store(out_ptr + flat * 8 + lanes, values)


@pytest.mark.parametrize("grid", [(5,), (3, 4), (2, 3, 5), (1, 1, 7)])
def test_program_id_and_num_programs(grid):
    full_grid = (*grid, *(1,) * (3 - len(grid)))
    nx, ny, nz = full_grid
    out = np.full((nz, ny, nx, 8), -1, dtype=np.int32)
    grid_kernel[grid](out)
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    expected = np.stack([x, y, z, np.full_like(x, nx), np.full_like(x, ny), np.full_like(x, nz),
                         (z * ny + y) * nx + x, (z * ny + y) * nx + x], axis=-1)
    np.testing.assert_array_equal(out, expected)


def test_grid_as_function_of_meta_parameters():
    out = np.full(40, -1, dtype=np.int32)
    arange_kernel[lambda meta: (1,)](out, START=0, END=32)
    np.testing.assert_array_equal(out[:32], np.arange(32))
    assert (out[32:] == -1).all()
