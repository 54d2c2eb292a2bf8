"""Vectorization facts (lowering/axisinfo.py): what they may and may not conclude."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.lowering.axisinfo import analyze
from tiles.core.ops import Op


@tiles.jit
def strided_copy(x_ptr, y_ptr, n, ONE: tl.constexpr, BLOCK: tl.constexpr):
    for start in range(0, n, BLOCK):
        offs = (start + tl.arange(0, BLOCK)) * ONE
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n))


@tiles.jit
def zero_stride(x_ptr, y_ptr, BLOCK: tl.constexpr):
    same = (tl.full((BLOCK,), 1, tl.int32) < tl.full((BLOCK,), 1, tl.int32)).to(tl.int32)
    offs = tl.arange(0, BLOCK) * same  # all zero: no run of consecutive addresses
    tl.store(y_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs))


def _load_info(kernel, *args, **meta):
    ir = kernel.warmup(*args, backend="interpreter", **meta).ir
    info = analyze(ir)
    loads = [i for i in ir.walk() if i.op is Op.LOAD]
    return [info[i.operands[0]] for i in loads], [info[i.operands[1]] if i.attrs.masked else None for i in loads]


def test_loop_index_and_unit_stride_keep_runs():
    x, y = np.zeros(1024, np.float32), np.zeros(1024, np.float32)
    (ptr,), (mask,) = _load_info(strided_copy, x, y, 1024, ONE=1, BLOCK=128)
    assert ptr.contig == 128 and ptr.div % 16 == 0
    assert mask.const >= 16  # n is specialized divisible by 16 and start steps by 128


def test_a_constant_that_is_not_one_is_no_unit_stride():
    x, y = np.zeros(64, np.float32), np.zeros(64, np.float32)
    (ptr,), _ = _load_info(zero_stride, x, y, BLOCK=64)
    assert ptr.contig == 1


@tiles.jit
def wrapped_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    flat = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + flat, tl.load(x_ptr + flat % n))


def test_wrapping_with_mod_keeps_runs_up_to_the_divisor():
    """(pid * BLOCK + arange) % n: a wrap can only fall on the first element of a run of
    gcd(BLOCK, div(n)) values, so runs of that length survive (and no longer ones)."""
    x, y = np.zeros(4096, np.float32), np.zeros(4096, np.float32)
    (ptr,), _ = _load_info(wrapped_copy, x, y, 4096, BLOCK=128)
    assert ptr.contig == 16 and ptr.div % 16 == 0  # n specialized divisible by 16
    (ptr,), _ = _load_info(wrapped_copy, x, y, 100, BLOCK=128)
    assert ptr.contig == 1


def test_wrapped_offsets_give_the_same_values_on_gpu_lowering():
    """The interpreter and the OpenCL lowering agree where % cuts a run (n = 40, BLOCK = 32)."""
    from tiles.backends import registry
    ok, why = registry.get("opencl").available()
    if not ok:
        import pytest
        pytest.skip(f"opencl unavailable: {why}")
    rng = np.random.default_rng(5)
    x = rng.standard_normal(48).astype(np.float32)
    for n in (48, 40, 32):
        y = np.full(3 * 32, np.nan, np.float32)
        wrapped_copy[(3,)](x, y, n, BLOCK=32, backend="opencl")
        np.testing.assert_array_equal(y, x[np.arange(3 * 32) % n])


@tiles.jit
def row_block_copy(x_ptr, y_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < M) & (cols < N)
    tl.store(y_ptr + rows * N + cols, tl.load(x_ptr + rows * N + cols, mask=mask), mask=mask)


def _mask_info(M, N, bm, bn):
    x, y = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    (ptr,), (mask,) = _load_info(row_block_copy, x, y, M, N, BLOCK_M=bm, BLOCK_N=bn)
    return ptr, mask


def _holds(value, consts):
    """``value`` (2-D) is constant over aligned boxes of ``consts``."""
    r, c = consts
    rows, cols = value.shape
    for i in range(0, rows, r):
        for j in range(0, cols, c):
            box = value[i:i + r, j:j + c]
            if not (box == box.flat[0]).all():
                return False
    return True


@pytest.mark.parametrize("M, N, bm, bn, want", [
    (64, 64, 4, 32, (4, 16)),    # M and N specialized divisible by 16: 4 rows alike, 16 columns
    (64, 64, 32, 32, (16, 16)),  # BLOCK_M 32: only runs of 16 rows are known alike
    (10, 64, 4, 32, (1, 16)),    # M = 10: nothing along the rows
    (20, 50, 4, 32, (1, 1)),     # 20 is a multiple of BLOCK_M, but not specialized: nothing assumed
])
def test_row_masks_are_constant_along_the_rows_only_where_m_allows(M, N, bm, bn, want):
    ptr, mask = _mask_info(M, N, bm, bn)
    assert mask.consts(2) == want
    assert ptr.contig == bn and ptr.div % (16 if N % 16 == 0 else 4) == 0
    assert ptr.lead[0].contig == 1 and ptr.lead[0].const == 1  # rows * N: neither runs nor repeats
    for pid in range(-(-M // bm)):  # the facts hold of the mask's values in every program
        rows = pid * bm + np.arange(bm)[:, None]
        assert _holds((rows < M) & (np.arange(bn)[None, :] < N), mask.consts(2))


def test_slot_representatives_share_only_equal_boxes():
    from tiles.backends.lowering.axisinfo import slot_representatives
    from tiles.backends.lowering.layout import choose_layout
    lay = choose_layout((4, 64), 32)  # 2 rounds of 2 rows, 4-element chunks
    assert lay.rounds == 2 and lay.vec == 4
    assert slot_representatives(lay, (1, 1)) is None
    assert slot_representatives(lay, (1, 4)) == (0, 0, 0, 0, 4, 4, 4, 4)  # a chunk shares a value
    assert slot_representatives(lay, (4, 16)) == (0,) * 8  # the thread's rows 2 apart share a box
    assert slot_representatives(lay, (2, 16)) == (0, 0, 0, 0, 4, 4, 4, 4)  # rows r and r + 2 do not
    assert slot_representatives(lay, (4, 2)) == (0, 0, 2, 2, 0, 0, 2, 2)
    copies = choose_layout((6, 8), 32)  # a second round of 16 chunks, copied by threads 16..31
    assert not copies.round_is_full(1) and copies.vec == 1
    assert slot_representatives(copies, (6, 8)) == (0, 0)
    assert slot_representatives(copies, (3, 8)) is None  # thread 0 holds rows 0 and 4, thread 16 rows 2 and 0


@tiles.jit
def doubled_rows(x_ptr, y_ptr, BM: tl.constexpr, BN: tl.constexpr):
    offs = (tl.arange(0, BM) * 2)[:, None] + tl.arange(0, BN)[None, :]  # row i starts at element 2i
    tl.store(y_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], tl.load(x_ptr + offs))


def test_a_run_times_a_constant_is_no_multiple_of_the_runs_start():
    """0, 1, 2, 3 times 2 are 0, 2, 4, 6: multiples of 2, not of what 0 is a multiple of.  Broadcast
    into rows, that fact is every row's start: claimed too large, the 16-byte loads of rows starting
    8 bytes apart would be taken as aligned."""
    x, y = np.zeros(64, np.float32), np.zeros((4, 16), np.float32)
    (ptr,), _ = _load_info(doubled_rows, x, y, BM=4, BN=16)
    assert ptr.contig == 16
    for i in range(4):  # the first element of each run, in bytes from a 16-aligned base
        assert (8 * i) % ptr.div == 0, ptr


def test_a_run_shortened_keeps_divisibility_only_at_the_new_starts():
    from tiles.backends.lowering.axisinfo import AxisInfo, _div_at
    run = AxisInfo(64, 1024, 1)  # s, s+1, ..., s+63 with s a multiple of 1024
    assert _div_at(run, 64) == 1024 and _div_at(run, 128) == 1024
    assert _div_at(run, 16) == 16 and _div_at(run, 1) == 1
    assert _div_at(AxisInfo(1, 32, 4), 16) == 32
