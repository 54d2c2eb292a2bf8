"""Vectorization facts (lowering/axisinfo.py): what they may and may not conclude."""

import numpy as np

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
