"""Loaded vectors wider than a warp broadcast into 2-D tiles are read again in the broadcast's layout
where the kernel loads them (``lowering/broadcast_loads.py``), not moved through local memory: checked
on the numpy SIMT simulator against numpy at odd, masked sizes, including a vector the kernel
overwrites between its load and its broadcast (the reads must see the old values)."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda.simulator.simt import SimEmitter, addresses, run
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
    emitter = SimEmitter([np.int64(a) if isinstance(x, np.ndarray) else x for a, x in zip(addresses(args), args)],
                         (0, 0, 0), (1, 1, 1), np.zeros(sum(a.nbytes + 256 for a in args if isinstance(a, np.ndarray)),
                                                        np.uint8))
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
