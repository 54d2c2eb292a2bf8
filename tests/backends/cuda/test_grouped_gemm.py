"""Grouped GEMM in the form of Triton's tutorial: operand addresses loaded from pointer arrays,
promised 16-byte aligned by ``tl.multiple_of`` on the loop's pointer tiles (called as a
statement, as the tutorial does: the hint applies to the tile itself), so the K loop is
pipelined with cp.async although nothing is known of the loaded addresses."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel


@tiles.jit
def grouped(a_addrs, b_addrs, c_addrs, sizes, group_size, pool, NUM_PROGRAMS: tl.constexpr,
            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, HINT: tl.constexpr):
    tile = tl.program_id(0)
    first = 0
    for g in range(group_size):
        m = tl.load(sizes + g * 3)
        n = tl.load(sizes + g * 3 + 1)
        k = tl.load(sizes + g * 3 + 2)
        tiles_n = tl.cdiv(n, BN)
        count = tl.cdiv(m, BM) * tiles_n
        while tile >= first and tile < first + count:
            a = tl.load(a_addrs + g).to(tl.pointer_type(tl.float16))
            b = tl.load(b_addrs + g).to(tl.pointer_type(tl.float16))
            c = tl.load(c_addrs + g).to(tl.pointer_type(tl.float32))
            local = tile - first
            rm = (local // tiles_n) * BM + tl.arange(0, BM)
            rn = (local % tiles_n) * BN + tl.arange(0, BN)
            rk = tl.arange(0, BK)
            a_ptrs = a + rm[:, None] * k + rk[None, :]
            b_ptrs = b + rk[:, None] * n + rn[None, :]
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for _kk in range(0, tl.cdiv(k, BK)):
                if HINT:
                    tl.multiple_of(a_ptrs, [16, 16])
                    tl.multiple_of(b_ptrs, [16, 16])
                acc += tl.dot(tl.load(a_ptrs), tl.load(b_ptrs))
                a_ptrs += BK
                b_ptrs += BK * n
            tl.store(c + rm[:, None] * n + rn[None, :], acc)
            tile += NUM_PROGRAMS
        first += count


PROBLEMS = [(64, 128, 64), (128, 64, 96), (64, 64, 32)]  # (m, n, k), multiples of the blocks


def _layout(problems):
    """One pool of float16 elements holding every A and B (float32 C in pairs of elements);
    element offsets of each matrix, all 16-byte aligned."""
    offsets, at = [], 0
    for m, n, k in problems:
        offsets.append((at, at + m * k, at + m * k + k * n))
        at += m * k + k * n + 2 * m * n
    return offsets, at


def _case(seed):
    rng = np.random.default_rng(seed)
    offsets, total = _layout(PROBLEMS)
    pool = np.zeros(total, np.float16)
    mats = []
    for (m, n, k), (oa, ob, _) in zip(PROBLEMS, offsets):
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((k, n)).astype(np.float16)
        pool[oa:oa + m * k] = a.reshape(-1)
        pool[ob:ob + k * n] = b.reshape(-1)
        mats.append((a, b))
    g = len(PROBLEMS)
    addrs = [np.zeros(g, np.int64) for _ in range(3)]
    sizes = np.array(PROBLEMS, np.int32).reshape(-1)
    return addrs, sizes, pool, offsets, mats


def _meta(hint):
    return dict(NUM_PROGRAMS=2, BM=64, BN=64, BK=32, HINT=hint, num_warps=4, num_stages=3)


@pytest.mark.parametrize("hint", [True, False])
def test_hinted_pointers_are_pipelined(hint):
    addrs, sizes, pool, *_ = _case(0)
    ir = grouped.warmup(*addrs, sizes, len(PROBLEMS), pool, backend="cuda", **_meta(hint)).ir
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(4, 3)), "sm_90a")
    assert "wgmma.mma_async" in ptx
    # without the promise the loaded addresses may be unaligned: no 16-byte copies
    assert ("cp.async.cg.shared.global" in ptx) == hint
    # `acc += tl.dot(a, b)` accumulates in place, so the MMA group may stay in flight a stage longer
    assert ("wgmma.wait_group.sync.aligned 1;" in ptx) == hint


def test_grouped_simulated():
    from tiles.backends.cuda.simulator import simt as sim_emitter
    addrs, sizes, pool, offsets, mats = _case(1)
    args = [*addrs, sizes, np.int32(len(PROBLEMS)), pool]
    base = sim_emitter.addresses(args)[-1]
    for g, (oa, ob, oc) in enumerate(offsets):
        for arr, off in zip(addrs, (oa, ob, oc)):
            arr[g] = base + 2 * off
    ir = grouped.warmup(*addrs, sizes, len(PROBLEMS), pool, backend="cuda", **_meta(True)).ir
    sim_emitter.run(ir, args, (2,), 128, num_stages=3)
    for (m, n, _), (_, _, oc), (a, b) in zip(PROBLEMS, offsets, mats):
        c = pool[oc:oc + 2 * m * n].view(np.float32).reshape(m, n)
        want = a.astype(np.float32) @ b.astype(np.float32)
        assert np.linalg.norm(c - want) / np.linalg.norm(want) < 1e-3


@tiles.jit
def add_dot_mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """`acc += tl.dot(a, b)` with K masks: the MMA group stays in flight into the next iteration."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + (rm[:, None] % M) * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + (rn[None, :] % N)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0.0),
                      tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0.0))
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@pytest.mark.parametrize("m,n,k", [(128, 64, 208), (64, 128, 96)])  # rows 16-byte aligned: K % 8 == 0
def test_add_dot_simulated(m, n, k):
    from tiles.backends.cuda.simulator import simt as sim_emitter
    rng = np.random.default_rng(m + k)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float32)
    meta = dict(BM=64, BN=64, BK=32, num_warps=4, num_stages=3)
    ir = add_dot_mm.warmup(a, b, c, m, n, k, backend="cuda", **meta).ir
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(4, 3)), "sm_90a")
    assert "wgmma.wait_group.sync.aligned 1;" in ptx and "cp.async.cg" in ptx
    sim_emitter.run(ir, [a, b, c, np.int32(m), np.int32(n), np.int32(k)], (m // 64, n // 64), 128, num_stages=3)
    want = a.astype(np.float32) @ b.astype(np.float32)
    assert np.linalg.norm(c - want) / np.linalg.norm(want) < 1e-3
