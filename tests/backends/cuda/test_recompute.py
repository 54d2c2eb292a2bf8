"""Index expressions broadcast into 2-D tiles are recomputed by the threads that need them
(``lowering/recompute.py``) instead of moved through local memory: a masked 2-D copy in the
tutorials' form lowers with no local memory and copies right on the numpy SIMT simulator, at odd
sizes whose masks cut rows and columns."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda.simulator.simt import GlobalMemory, SimEmitter, run
from tiles.backends.lowering.entry import Lowered, lower_with_tensor_cores


@tiles.jit
def masked_copy_2d(x_ptr, y_ptr, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=-1.0)
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], x * 2.0, mask=mask)


@tiles.jit
def wide_offsets_copy_2d(x_ptr, y_ptr, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = (tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)  # int64 offsets: casts
    cols = (tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int16).to(tl.int64)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=mask, other=-1.0)
    tl.store(y_ptr + rows[:, None] * stride_ym + cols[None, :], x * 2.0, mask=mask)


@tiles.jit
def row_vector_broadcast(x_ptr, y_ptr, N: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, N)) * 2.0  # computed from a load: moved, not recomputed
    tl.store(y_ptr + tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :], v[None, :] + v[:, None])


def _local_bytes(ir, args, warps, budget=None):
    memory = GlobalMemory(args)
    emitter = SimEmitter(memory.values, (0, 0, 0), (1, 1, 1), memory.mem)
    if budget is not None:
        emitter.recompute_budget = budget
    assert isinstance(lower_with_tensor_cores(ir, emitter, Options(num_warps=warps)), Lowered)
    return emitter.local_bytes


@pytest.mark.parametrize("M, N, bm, bn, warps", [(37, 53, 16, 32, 4), (5, 70, 8, 64, 1), (64, 16, 32, 16, 2)])
def test_masked_2d_copy_needs_no_local_memory(rng, M, N, bm, bn, warps):
    x = rng.standard_normal((M, N + 3)).astype(np.float32)
    y = np.full((M, N + 1), 7.0, np.float32)
    args = [x, y, np.int32(M), np.int32(N), np.int32(N + 3), np.int32(N + 1)]
    ir = masked_copy_2d.warmup(*args, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, backend="cuda",
                               grid=(-(-M // bm), -(-N // bn))).ir
    assert _local_bytes(ir, args, warps) == 0
    run(ir, args, (-(-M // bm), -(-N // bn)), warps * 32)
    np.testing.assert_array_equal(y[:, :N], 2 * x[:, :N])
    np.testing.assert_array_equal(y[:, N], 7.0)


@pytest.mark.parametrize("M, N, bm, bn, warps", [(37, 53, 16, 32, 4), (5, 70, 8, 64, 1)])
def test_integer_casts_are_recomputed(rng, M, N, bm, bn, warps):
    x = rng.standard_normal((M, N + 3)).astype(np.float32)
    y = np.full((M, N + 1), 7.0, np.float32)
    args = [x, y, np.int32(M), np.int32(N), np.int32(N + 3), np.int32(N + 1)]
    grid = (-(-M // bm), -(-N // bn))
    ir = wide_offsets_copy_2d.warmup(*args, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, backend="cuda", grid=grid).ir
    assert _local_bytes(ir, args, warps, budget=16) == 0  # a CPU's budget (the pointers take 9 ops)
    run(ir, args, grid, warps * 32, recompute_budget=16)
    np.testing.assert_array_equal(y[:, :N], 2 * x[:, :N])
    np.testing.assert_array_equal(y[:, N], 7.0)


def test_computed_vectors_still_broadcast_through_local_memory(rng):
    # 64 elements on 64 threads: wider than a warp, so not moved by shuffles (test_lane_gather.py)
    x = rng.standard_normal(64).astype(np.float32)
    y = np.zeros((64, 64), np.float32)
    ir = row_vector_broadcast.warmup(x, y, N=64, num_warps=2, backend="cuda").ir
    assert _local_bytes(ir, [x, y], 2) > 0
    run(ir, [x, y], (1,), 64)
    np.testing.assert_array_equal(y, 2 * x[None, :] + 2 * x[:, None])
