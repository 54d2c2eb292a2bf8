"""A kernel none of whose global accesses vectorizes is laid out one element per chunk
(``lowering/lower.py`` ``_any_vector_access``): a thread's scalar accesses are a whole block of threads
apart, so a warp's are consecutive; a kernel whose accesses vectorize keeps its 16-byte chunks.
Compile-only (llvmlite's NVPTX backend), no GPU."""

import re

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_chosen


@tiles.jit
def scaled_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


def _ptx(sig):
    ir = scaled_copy.compile(sig, {"BLOCK": 512}, backend="cuda", num_warps=4).ir
    lowered = lower_chosen(ir, nvptx_target("sm_90a"), Options(4, 3), registry.get("cuda").target())
    return toolchain.to_ptx(lowered.code, "sm_90a")


def test_unaligned_scalar_loads_of_a_thread_are_a_block_of_threads_apart():
    ptx = _ptx({"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"})  # no alignment known: nothing vectorizes
    assert "ld.global.v" not in ptx and len(re.findall(r"ld\.global\.b32", ptx)) == 4
    steps = {int(s) for s in re.findall(r"add\.s64\s+%rd\d+, %rd\d+, (\d+);", ptx)}
    assert {512, 1024, 1536} <= steps, steps  # 128 threads x 4 bytes: a warp reads 128 consecutive bytes
    assert not steps & {4, 8, 12}, steps


def test_aligned_loads_keep_their_16_byte_chunks():
    ptx = _ptx({"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "n": "i32:16"})
    assert len(re.findall(r"ld\.global\.v4\.b32", ptx)) == 1
