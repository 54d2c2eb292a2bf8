"""Row and column vectors of at most a warp's elements broadcast into 2-D tiles through indexed warp
shuffles (``lowering/lane_gather.py``), not local memory: loaded vectors and values computed from
them, in the Mamba state-update form, checked on the numpy SIMT simulator against numpy with odd
sizes whose masks cut rows and columns, over several warp counts and dtypes."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda.simulator.simt import GlobalMemory, SimEmitter, run
from tiles.backends.lowering.entry import lower_with_tensor_cores


@tiles.jit
def outer_update(s_ptr, r_ptr, c_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    rok, cok = rows < M, cols < N
    ptrs = s_ptr + rows[:, None] * N + cols[None, :]
    s = tl.load(ptrs, mask=rok[:, None] & cok[None, :], other=0.0)
    r = tl.load(r_ptr + rows, mask=rok, other=0.0)
    r = tl.where(r > 0.5, tl.exp(r), r * 3.0)  # computed from a load: not recomputable
    c = tl.load(c_ptr + cols, mask=cok, other=0.0)
    s = s * r[:, None] + c[None, :]
    tl.store(ptrs, s, mask=rok[:, None] & cok[None, :])
    tl.store(out_ptr + rows, tl.sum(s * c[None, :], axis=1), mask=rok)


@tiles.jit
def reshaped_row(x_ptr, y_ptr, N: tl.constexpr):
    v = tl.load(x_ptr + tl.arange(0, N))
    tl.store(y_ptr + tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :], v[None, :] - v[:, None])


def _local_bytes(ir, args, warps):
    memory = GlobalMemory(args)
    emitter = SimEmitter(memory.values, (0, 0, 0), (1, 1, 1), memory.mem)
    lower_with_tensor_cores(ir, emitter, Options(num_warps=warps))
    return emitter.local_bytes


@pytest.mark.parametrize("M, N, bm, bn, warps", [(70, 13, 32, 16, 4), (9, 100, 4, 128, 4), (37, 30, 8, 32, 1),
                                                 (50, 7, 16, 8, 2), (33, 16, 32, 16, 8)])
def test_outer_update_matches_numpy(rng, M, N, bm, bn, warps):
    s0 = rng.standard_normal((M, N)).astype(np.float32)
    r = rng.uniform(-1, 2, M).astype(np.float32)
    c = rng.standard_normal(N).astype(np.float32)
    s, out = s0.copy(), np.full(M, 7.0, np.float32)
    args = [s, r, c, out, np.int32(M), np.int32(N)]
    grid = (-(-M // bm),)
    ir = outer_update.warmup(*args, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, backend="cuda", grid=grid).ir
    run(ir, args, grid, warps * 32)
    rr = np.where(r > 0.5, np.exp(r), r * 3.0)
    want = s0 * rr[:, None] + c[None, :]
    np.testing.assert_allclose(s, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, (want * c[None, :]).sum(1), rtol=1e-4, atol=1e-4)


def test_mamba_shapes_move_vectors_without_local_memory(rng):
    # 32x16 on 4 warps (Mamba's dstate 16): the row and column vectors need no local memory;
    # only the row sums (a reduction's result) still go through it
    M, N = 64, 16
    args = [rng.standard_normal((M, N)).astype(np.float32), rng.standard_normal(M).astype(np.float32),
            rng.standard_normal(N).astype(np.float32), np.zeros(M, np.float32), np.int32(M), np.int32(N)]
    with_sum = outer_update.warmup(*args, BLOCK_M=32, BLOCK_N=16, num_warps=4, backend="cuda", grid=(2,)).ir
    x, y = rng.standard_normal(16).astype(np.float32), np.zeros((16, 16), np.float32)
    plain = reshaped_row.warmup(x, y, N=16, num_warps=4, backend="cuda").ir
    assert _local_bytes(plain, [x, y], 4) == 0
    assert _local_bytes(with_sum, args, 4) <= 32 * 4


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int64, np.int8, np.uint16])
@pytest.mark.parametrize("n, warps", [(16, 4), (32, 2), (8, 1), (4, 8)])
def test_vector_broadcasts_by_dtype(rng, dtype, n, warps):
    x = (rng.standard_normal(n) * 40).astype(dtype)
    y = np.zeros((n, n), dtype)
    ir = reshaped_row.warmup(x, y, N=n, num_warps=warps, backend="cuda").ir
    assert _local_bytes(ir, [x, y], warps) == 0
    run(ir, [x, y], (1,), warps * 32)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(y, x[None, :] - x[:, None])


@pytest.mark.parametrize("batch, heads, dim, dstate, block_m, warps", [
    (2, 3, 40, 16, 32, 4), (2, 2, 10, 128, 4, 4), (1, 2, 13, 32, 16, 2), (2, 2, 37, 8, 32, 1), (3, 2, 21, 4, 32, 8)])
def test_mamba_state_update_simulated(rng, batch, heads, dim, dstate, block_m, warps):
    # the corpus kernel at the benchmark's BLOCK_M rule (heads_per_group 2: a 1 would be specialized
    # away, and the simulator passes every argument)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "compat"))
    from compat_harness import load
    mk = load("mamba/selective_state_update")
    f32 = np.float32
    state0 = rng.standard_normal((batch, heads, dim, dstate)).astype(f32)
    x, dt, z = (rng.standard_normal((batch, heads, dim)).astype(f32) for _ in range(3))
    A = (-np.abs(rng.standard_normal((heads, dim, dstate))) - 0.1).astype(f32)
    B, C = (rng.standard_normal((batch, 1, dstate)).astype(f32) for _ in range(2))
    bias, skip = (rng.standard_normal((heads, dim)).astype(f32) for _ in range(2))
    state, out = state0.copy(), np.zeros_like(x)

    def st(a, i):
        return np.int32(a.strides[i] // a.itemsize)
    args = [state, x, dt, bias, A, B, C, skip, z, out, np.int32(dim), np.int32(dstate), np.int32(heads),
            st(state, 0), st(state, 1), st(state, 2), st(x, 0), st(x, 1), st(dt, 0), st(dt, 1), st(A, 0), st(A, 1),
            st(B, 0), st(B, 1), st(out, 0), st(out, 1)]
    grid = (-(-dim // block_m), batch, heads)
    fn = mk._ssm_step
    while type(fn).__name__ == "Heuristics":
        fn = fn.fn
    ir = fn.warmup(*args, SOFTPLUS=True, BLOCK_M=block_m, HAS_BIAS=True, HAS_SKIP=True, HAS_GATE=True,
                   BLOCK_N=1 << (dstate - 1).bit_length(), num_warps=warps, backend="cuda", grid=grid).ir
    run(ir, args, grid, warps * 32)
    want_state, want_out = mk._reference(state0, x, dt, bias, A, B, C, skip, z, True, heads)
    np.testing.assert_allclose(state, want_state, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out, want_out, rtol=1e-4, atol=1e-4)
