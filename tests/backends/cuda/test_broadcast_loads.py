"""Loaded vectors wider than a warp broadcast into 2-D tiles are read again in the broadcast's layout
where the kernel loads them (``lowering/broadcast_loads.py``), not moved through local memory: checked
on the numpy SIMT simulator against numpy at odd, masked sizes, including a vector the kernel
overwrites between its load and its broadcast (the reads must see the old values)."""

import re

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_chosen
from tiles.backends.cuda.simulator.simt import GlobalMemory, SimEmitter, run
from tiles.backends.lowering.entry import lower_with_tensor_cores


@tiles.jit
def scale_then_overwrite(s_ptr, c_ptr, r_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    rok, cok = rows < M, cols < N
    c = tl.load(c_ptr + cols, mask=cok, other=1.5)
    r = tl.load(r_ptr + rows, mask=rok, other=0.0)
    tl.store(c_ptr + cols, c * 0.0 - 1.0, mask=cok)  # c's memory changes before c[None, :] is used
    ptrs = s_ptr + rows[:, None] * N + cols[None, :]
    tile = rok[:, None] & cok[None, :]
    s = tl.load(ptrs, mask=tile, other=0.0)
    tl.store(ptrs, s * c[None, :] + r[:, None] * c[None, :], mask=tile)


def _local_bytes(ir, args, warps):
    memory = GlobalMemory(args)
    emitter = SimEmitter(memory.values, (0, 0, 0), (1, 1, 1), memory.mem)
    lower_with_tensor_cores(ir, emitter, Options(num_warps=warps))
    return emitter.local_bytes


@pytest.mark.parametrize("M, N, bm, bn, warps", [(4, 100, 4, 128, 4), (3, 128, 4, 128, 4), (7, 61, 8, 64, 2),
                                                 (2, 250, 2, 256, 8), (16, 33, 16, 64, 1)])
def test_broadcast_of_loaded_vector_reads_old_values(rng, M, N, bm, bn, warps):
    s0 = rng.standard_normal((M, N)).astype(np.float32)
    c0 = rng.standard_normal(N).astype(np.float32)
    r = rng.standard_normal(M).astype(np.float32)
    s, c = s0.copy(), c0.copy()
    args = [s, c, r, np.int32(M), np.int32(N)]
    ir = scale_then_overwrite.warmup(*args, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, backend="cuda", grid=(1,)).ir
    run(ir, args, (1,), warps * 32)
    np.testing.assert_allclose(s, s0 * c0[None, :] + r[:, None] * c0[None, :], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(c, -1.0)


def test_wide_vector_broadcast_needs_no_local_memory(rng):
    # 4x128 on 4 warps (Mamba's dstate 128): c[None, :] is read again; r (4 rows) is shuffled
    M, N = 4, 128
    args = [rng.standard_normal((M, N)).astype(np.float32), rng.standard_normal(N).astype(np.float32),
            rng.standard_normal(M).astype(np.float32), np.int32(M), np.int32(N)]
    ir = scale_then_overwrite.warmup(*args, BLOCK_M=4, BLOCK_N=128, num_warps=4, backend="cuda", grid=(1,)).ir
    assert _local_bytes(ir, args, 4) == 0


def _ptx(ir, warps):
    lowered = lower_chosen(ir, nvptx_target("sm_90a"), Options(num_warps=warps), registry.get("cuda").target())
    return toolchain.to_ptx(lowered.code, "sm_90a")


@tiles.jit
def decay_and_project(s_ptr, b_ptr, c_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Mamba's state update: b and c (dstate wide) are only used broadcast against the state tile
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    tile = (rows[:, None] < M) & (cols[None, :] < N)
    ptrs = s_ptr + rows[:, None] * N + cols[None, :]
    s = tl.load(ptrs, mask=tile, other=0.0)
    b = tl.load(b_ptr + cols, mask=cols < N, other=0.0)
    c = tl.load(c_ptr + cols, mask=cols < N, other=0.0)
    s = s * 0.5 + b[None, :]
    tl.store(ptrs, s, mask=tile)
    tl.store(out_ptr + rows, tl.sum(s * c[None, :], axis=1), mask=rows < M)


def test_vector_read_again_in_the_broadcast_layout_is_not_also_read_in_its_own(rng):
    # the predicated load of b in its own layout is dead once the broadcast reads b again; LLVM keeps a
    # sideeffect asm, so the emitter drops it (predicated_ops.py): one 16-byte read each of s, b and c
    M, N = 64, 128
    args = [rng.standard_normal((M, N)).astype(np.float32), rng.standard_normal(N).astype(np.float32),
            rng.standard_normal(N).astype(np.float32), np.zeros(M, np.float32), np.int32(M), np.int32(N)]
    ir = decay_and_project.warmup(*args, BLOCK_M=4, BLOCK_N=128, num_warps=4, backend="cuda", grid=(16,)).ir
    loads = re.findall(r"ld\.global(?:\.v\d)?\.b32", _ptx(ir, 4))
    assert loads == ["ld.global.v4.b32"] * 3, loads
    s0, b, c = (a.copy() for a in args[:3])
    out = args[3]
    run(ir, args, (16,), 128)
    want = s0 * 0.5 + b[None, :]
    np.testing.assert_allclose(args[0], want, rtol=1e-6)
    np.testing.assert_allclose(out, (want * c[None, :]).sum(1), rtol=1e-5, atol=1e-5)
