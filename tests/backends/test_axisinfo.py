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
