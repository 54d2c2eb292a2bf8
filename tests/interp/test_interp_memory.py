"""Loads and stores: masks, bounds checks, views, reinterpretation, write order."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from irb import KB

import tiles
import tiles.language as tl
from tiles.core import attrs as at
from tiles.core import dtypes as dt
from tiles.core.dtypes import PointerType
from tiles.core.errors import KernelRuntimeError
from tiles.core.ops import Op
from tiles.interp import interpret


def copy_kernel(block, dtype=dt.float32, code=None, scale_other=False):
    """out[i] = x[i] for i < n, one block per program; masked lanes load ``other`` = -1."""
    k = KB("copy_kernel", code)
    x, out, n = k.ptr("x_ptr", dtype), k.ptr("out_ptr", dtype), k.scalar("n", dt.int32)
    offs = k.offsets(block)
    m = k.bin(Op.LT, offs, n)
    other = k.const(-1, dtype, (block,)) if scale_other else None
    v = k.load(k.addptr(x, offs), m, other)
    k.store(k.addptr(out, offs), v, m)
    return k.kernel()


@pytest.mark.parametrize("n", [1, 37, 128, 1000])
def test_masked_copy_odd_sizes(n):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(n, 5.0, np.float32)
    interpret(copy_kernel(64), ((n + 63) // 64,), [x, out, n])
    np.testing.assert_array_equal(out, x)


def test_load_other_and_zero_on_masked_lanes():
    k = KB("other")
    x, out = k.ptr("x", dt.int32), k.ptr("out", dt.int32)
    offs = k.arange(8)
    m = k.bin(Op.LT, offs, k.const(3, dt.int32))
    a = k.load(k.addptr(x, offs), m)  # masked-off lanes read no memory at all
    b = k.load(k.addptr(x, offs), m, k.const(-7, dt.int32, (8,)))
    k.store(k.addptr(out, offs), a)
    k.store(k.addptr(out, k.bin(Op.ADD, offs, k.const(8, dt.int32))), b)
    x_arr = np.array([1, 2, 3], np.int32)  # only 3 elements: lanes 3..7 would be out of bounds
    out_arr = np.zeros(16, np.int32)
    interpret(k.kernel(), (1,), [x_arr, out_arr])
    assert out_arr.tolist() == [1, 2, 3, 0, 0, 0, 0, 0, 1, 2, 3, -7, -7, -7, -7, -7]


def test_out_of_bounds_load_names_line_program_and_offset():
    k = KB("oob_kernel", sys._getframe().f_code)
    x, out = k.ptr("x_ptr", dt.float32), k.ptr("out_ptr", dt.float32)
    offs = k.offsets(16)
    line = sys._getframe().f_lineno + 1
    v = k.load(k.addptr(x, offs))  # no mask: program 2 reads past the end
    k.store(k.addptr(out, offs), v)
    x_arr = np.zeros(40, np.float32)
    with pytest.raises(KernelRuntimeError) as e:
        interpret(k.kernel(), (3,), [x_arr, np.zeros(48, np.float32)])
    text = str(e.value)
    assert f"test_interp_memory.py:{line}" in text
    assert "oob_kernel" in text and "program (2, 0, 0)" in text
    assert "byte offset 160" in text and "'x_ptr'" in text and "[0, 160)" in text


def test_out_of_bounds_store_and_2d_grid_program_id():
    k = KB("oob_store")
    out = k.ptr("out", dt.int32)
    idx = k.bin(Op.ADD, k.bin(Op.MUL, k.pid(1), k.const(4, dt.int32)), k.pid(0))
    k.store(k.addptr(out, idx), idx)
    arr = np.zeros(7, np.int32)
    with pytest.raises(KernelRuntimeError, match=r"store .*program \(3, 1, 0\).*byte offset 28"):
        interpret(k.kernel(), (4, 2, 1), [arr])
    assert not arr.any()  # the failing store is checked as a whole before it writes


def test_negative_offset_and_null_pointer():
    k = KB("neg")
    x = k.ptr("x", dt.int16)
    v = k.load(k.addptr(x, k.const(-1, dt.int32)))
    k.store(x, v)
    with pytest.raises(KernelRuntimeError, match="byte offset -2"):
        interpret(k.kernel(), (1,), [np.zeros(4, np.int16)])
    k = KB("null")
    x = k.ptr("x", dt.int32)
    p = k.op(Op.INT_TO_PTR, k.const(0, dt.int64), attrs=at.Cast(PointerType(dt.int32)))
    k.store(p, k.const(1, dt.int32))
    with pytest.raises(KernelRuntimeError, match="points into no argument"):
        interpret(k.kernel(), (1,), [np.zeros(4, np.int32)])


def test_misaligned_access_is_reported():
    k = KB("misaligned")
    x = k.ptr("x", dt.int32)
    p8 = k.op(Op.BITCAST, x, attrs=at.Cast(PointerType(dt.int8)))
    p = k.op(Op.BITCAST, k.addptr(p8, k.const(2, dt.int32)), attrs=at.Cast(PointerType(dt.int32)))
    k.store(p, k.const(1, dt.int32))
    with pytest.raises(KernelRuntimeError, match="not a multiple of the access size 4"):
        interpret(k.kernel(), (1,), [np.zeros(4, np.int32)])


def test_view_extent_is_the_views_own():
    parent = np.arange(20, dtype=np.float32)
    view = parent[4:8]  # one element past the view is inside the parent, still out of bounds
    out = np.zeros(5, np.float32)
    with pytest.raises(KernelRuntimeError, match=r"valid byte offsets \[0, 16\)"):
        interpret(copy_kernel(8), (1,), [view, out, 5])
    interpret(copy_kernel(8), (1,), [view, out, 4])
    assert out[:4].tolist() == [4, 5, 6, 7]


def test_strided_and_negative_stride_views():
    parent = np.arange(12, dtype=np.float64)
    rev = parent[10:2:-2]  # elements 10, 8, 6, 4: element 0 is at the highest address
    k = KB("rev")
    x, out = k.ptr("x", dt.float64), k.ptr("out", dt.float64)
    offs = k.arange(4)
    neg = k.bin(Op.SUB, k.const(0, dt.int32, (4,)), offs)
    # x[-i] walks toward lower addresses, through the parent's elements between the view's
    k.store(k.addptr(out, offs), k.load(k.addptr(x, neg)))
    o = np.zeros(4)
    interpret(k.kernel(), (1,), [rev, o])
    assert o.tolist() == [10, 9, 8, 7]
    with pytest.raises(KernelRuntimeError, match=r"valid byte offsets \[-48, 8\)"):
        interpret(copy_kernel(8, dt.float64), (1,), [rev, np.zeros(8), 8])
    # writes through a strided view land in the caller's array; pointers step in elements
    k = KB("strided_store")
    out, stride = k.ptr("out", dt.float32), k.scalar("stride", dt.int32)
    offs = k.arange(4)
    k.store(k.addptr(out, k.bin(Op.MUL, offs, stride)), k.cast(offs, dt.float32))
    target = np.zeros(10, np.float32)
    interpret(k.kernel(), (1,), [target[::3], 3])
    assert target.tolist() == [0, 0, 0, 1, 0, 0, 2, 0, 0, 3]
    with pytest.raises(KernelRuntimeError, match=r"valid byte offsets \[0, 40\)"):
        interpret(k.kernel(), (1,), [target[::3], 4])


def test_reinterpret_through_a_cast_pointer():
    f = np.array([1.0, -2.5, np.inf], np.float32)
    k = KB("reinterpret")
    x, out = k.ptr("x", dt.float32), k.ptr("out", dt.int32)
    xi = k.op(Op.BITCAST, x, attrs=at.Cast(PointerType(dt.int32)))
    offs = k.arange(4)
    m = k.bin(Op.LT, offs, k.const(3, dt.int32))
    k.store(k.addptr(out, offs), k.load(k.addptr(xi, offs), m), m)
    o = np.zeros(3, np.int32)
    interpret(k.kernel(), (1,), [f, o])
    assert o.tolist() == f.view(np.int32).tolist()


def test_last_writer_wins_in_program_then_lane_order():
    k = KB("collide")
    out = k.ptr("out", dt.int32)
    lane = k.arange(4)
    val = k.bin(Op.ADD, k.bin(Op.MUL, k.pid(), k.const(10, dt.int32)), lane)
    zero = k.const(0, dt.int32, (4,))
    k.store(k.addptr(out, zero), val)  # every lane of every program writes out[0]
    o = np.zeros(1, np.int32)
    interpret(k.kernel(), (5,), [o])
    assert o[0] == 43


def test_read_only_array_is_not_written():
    src = np.arange(4, dtype=np.float32)
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    with pytest.raises(KernelRuntimeError, match="read-only"):
        interpret(copy_kernel(4), (1,), [src, ro, 4])


def test_where_mixes_buffers_and_ptr_int_round_trip():
    k = KB("mix")
    a, b, out = k.ptr("a", dt.float32), k.ptr("b", dt.float32), k.ptr("out", dt.float32)
    offs = k.arange(8)
    pick = k.bin(Op.LT, k.bin(Op.MOD, offs, k.const(2, dt.int32)), k.const(1, dt.int32))
    p = k.op(Op.WHERE, pick, k.addptr(a, offs), k.addptr(b, offs))
    as_int = k.op(Op.PTR_TO_INT, p)
    back = k.op(Op.INT_TO_PTR, as_int, attrs=at.Cast(PointerType(dt.float32)))
    k.store(k.addptr(out, offs), k.load(back))
    av, bv = np.arange(8, dtype=np.float32), -np.arange(8, dtype=np.float32)
    o = np.zeros(8, np.float32)
    interpret(k.kernel(), (1,), [av, bv, o])
    assert o.tolist() == [0, -1, 2, -3, 4, -5, 6, -7]


def test_int1_memory_is_one_byte_per_element():
    k = KB("bools")
    x, out = k.ptr("x", dt.int1), k.ptr("out", dt.int1)
    offs = k.arange(4)
    v = k.load(k.addptr(x, offs))
    k.store(k.addptr(out, offs), k.op(Op.NOT, v))
    o = np.zeros(4, np.bool_)
    interpret(k.kernel(), (1,), [np.array([True, False, True, True]), o])
    assert o.tolist() == [False, True, False, False]


def test_scalar_arguments_and_num_programs():
    k = KB("scalars")
    out = k.ptr("out", dt.float32)
    f, i, u = k.scalar("f", dt.float32), k.scalar("i", dt.int64), k.scalar("u", dt.uint8)
    s = k.bin(Op.ADD, f, k.cast(k.bin(Op.ADD, i, k.cast(u, dt.int64)), dt.float32))
    s = k.bin(Op.ADD, s, k.cast(k.nprog(0), dt.float32))
    k.store(k.addptr(out, k.pid()), s)
    o = np.zeros(3, np.float32)
    interpret(k.kernel(), (3,), [o, 0.5, -10, 255])
    assert o.tolist() == [248.5] * 3


def test_races_check(monkeypatch):
    k = KB("racy")
    out = k.ptr("out", dt.int32)
    k.store(out, k.pid())
    o = np.zeros(1, np.int32)
    interpret(k.kernel(), (4,), [o])  # no check by default
    with pytest.raises(KernelRuntimeError, match="data race"):
        interpret(k.kernel(), (4,), [o], checks="races")
    monkeypatch.setenv("TILES_INTERPRET_CHECKS", "races")
    with pytest.raises(KernelRuntimeError, match=r"program \(0, 0, 0\) and program \(1, 0, 0\)"):
        interpret(k.kernel(), (4,), [o])
    interpret(copy_kernel(8), (3,), [np.ones(20, np.float32), np.zeros(20, np.float32), 20])


def test_row_pointers_with_per_program_base():
    """x + pid * stride is a per-program base; offsets then index each row (masked tail)."""
    k = KB("rows")
    x, out, stride, n = k.ptr("x", dt.float32), k.ptr("out", dt.float32), k.scalar("stride", dt.int32), \
        k.scalar("n", dt.int32)
    row = k.bin(Op.MUL, k.pid(), stride)
    xrow, orow = k.addptr(x, row), k.addptr(out, row)
    offs = k.arange(8)
    m = k.bin(Op.LT, offs, n)
    v = k.load(k.addptr(xrow, offs), m, k.const(0.0, dt.float32, (8,)))
    k.store(k.addptr(orow, offs), k.bin(Op.ADD, v, k.const(1.0, dt.float32, (8,))), m)
    a = np.arange(30, dtype=np.float32).reshape(5, 6)
    o = np.zeros((5, 6), np.float32)
    interpret(k.kernel(), (5,), [a, o, 6, 6])
    np.testing.assert_array_equal(o, a + 1)
    with pytest.raises(KernelRuntimeError, match=r"program \(4, 0, 0\).*byte offset 120"):
        interpret(k.kernel(), (5,), [a, o, 6, 7])


def test_tail_rows_of_a_2d_tile_stay_checked():
    """``X + rows[:, None] * stride + cols[None, :]`` masked by ``rows < m``: the row bases of the
    masked-off tail rows lie past the array, the accesses of the active lanes do not (the fast
    path takes it); an active lane past the end is still an error."""
    @tiles.jit
    def copy_2d(x_ptr, out_ptr, m, n, stride, BM: tl.constexpr, BN: tl.constexpr, MASK_ROWS: tl.constexpr):
        rows = tl.program_id(0) * BM + tl.arange(0, BM)
        cols = tl.arange(0, BN)
        mask = (rows[:, None] < m) & (cols[None, :] < n) if MASK_ROWS else cols[None, :] < n
        offs = rows[:, None] * stride + cols[None, :]
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)

    x = np.arange(17 * 33, dtype=np.float32).reshape(17, 33)
    out = np.zeros_like(x)
    copy_2d[(2,)](x, out, 17, 33, 33, BM=16, BN=64, MASK_ROWS=True, backend="interpreter")
    np.testing.assert_array_equal(out, x)
    with pytest.raises(KernelRuntimeError, match="out of bounds|outside"):
        copy_2d[(2,)](x, out, 17, 33, 33, BM=16, BN=64, MASK_ROWS=False, backend="interpreter")


def test_consecutive_elements_read_and_written_as_one_run():
    """Offsets ``pid * BLOCK + arange`` with every lane in the array are one slice of it: a load
    is a copy (a later store does not change it), a store writes each element once, the last
    program wins where every program stores the same elements, and a run past the end is still
    an out-of-bounds error."""
    @tiles.jit
    def bump(x_ptr, old_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        a = tl.load(x_ptr + offs)
        tl.store(x_ptr + offs, a + 1.0)
        tl.store(old_ptr + offs, a)

    @tiles.jit
    def same_lanes(out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.zeros((BLOCK,), tl.int32) + tl.program_id(0))

    x = np.arange(4096, dtype=np.float32)
    old = np.zeros_like(x)
    bump[(4,)](x, old, BLOCK=1024, backend="interpreter")
    np.testing.assert_array_equal(old, np.arange(4096, dtype=np.float32))
    np.testing.assert_array_equal(x, np.arange(4096, dtype=np.float32) + 1)
    out = np.zeros(1024, np.int32)
    same_lanes[(5,)](out, BLOCK=1024, backend="interpreter")
    np.testing.assert_array_equal(out, np.full(1024, 4, np.int32))
    with pytest.raises(KernelRuntimeError, match="out of bounds"):
        bump[(5,)](x, np.zeros(5120, np.float32), BLOCK=1024, backend="interpreter")
