"""``tl.load(..., volatile=True)`` reads memory every time it runs (a spin-wait on a flag another
program writes, as FlagGems' decoupled look-back does): OpenCL C reads through a ``volatile``
pointer and the CUDA backend's LLVM IR is a ``load volatile``; plain loads stay plain."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target
from tiles.backends.cuda.choices import lower_chosen


@tiles.jit
def wait_for_flag(flag_ptr, x_ptr, out_ptr, LIMIT: tl.constexpr):
    seen = tl.load(flag_ptr, volatile=True)
    turns = 0
    while (seen == 0) & (turns < LIMIT):
        seen = tl.load(flag_ptr, volatile=True)
        turns += 1
    tl.store(out_ptr, tl.load(x_ptr) + seen)


def _args():
    return np.ones(1, np.int32), np.full(1, 5, np.int32), np.zeros(1, np.int32)


@pytest.mark.slow
@pytest.mark.skipif(not registry.status("opencl")[0], reason="no OpenCL device")
def test_opencl_reads_volatile_loads_through_a_volatile_pointer():
    flag, x, out = _args()
    tiles.set_backend("opencl")
    try:
        source = wait_for_flag.warmup(flag, x, out, LIMIT=8, grid=(1,)).asm["opencl"]
        wait_for_flag[(1,)](flag, x, out, LIMIT=8)
    finally:
        tiles.set_backend(None)
    assert source.count("volatile __global int*") >= 2  # both flag loads; x's load is plain
    assert out[0] == 6


def test_cuda_llvm_ir_has_volatile_loads():
    flag, x, out = _args()
    ir = wait_for_flag.warmup(flag, x, out, LIMIT=8, backend="cuda").ir
    code = lower_chosen(ir, nvptx_target("sm_90a"), Options(4, 3)).code
    assert code.count("load volatile i32") == 2 and "load i32" in code
