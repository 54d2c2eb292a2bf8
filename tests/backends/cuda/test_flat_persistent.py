"""Tutorial 09's *flattened* persistent matmul: one loop over every (tile, k step) pair of a
program, the next tile picked under ``if ki == 0`` through a ``@jit`` helper returning a tuple,
the tile stored and the accumulator reset under ``if ki == k_tiles - 1``.  The accumulator stays
in wgmma registers across the run-time ``if``; simulated against numpy (odd sizes, several
programs), PTX for sm_90a checked where ptxas is installed."""

import numpy as np
import pytest
from test_tensorcore import _rel

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel

rng = np.random.default_rng(29)


@tiles.jit
def _tile_of(tile_id, num_pid_in_group, num_pid_m, GROUP_M: tl.constexpr):
    group = tile_id // num_pid_in_group
    first_m = group * GROUP_M
    rows = min(num_pid_m - first_m, GROUP_M)
    return first_m + tile_id % rows, (tile_id % num_pid_in_group) // rows


@tiles.jit
def flat_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                NUM_SMS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr, INTO_A: tl.constexpr):
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    mine = num_tiles // NUM_SMS
    if start_pid < num_tiles % NUM_SMS:
        mine += 1
    num_pid_in_group = GROUP_M * num_pid_n
    tile_id = start_pid - NUM_SMS
    ki = -1
    pid_m = 0
    pid_n = 0
    lanes_k = tl.arange(0, BLOCK_K)
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, k_tiles * mine):
        ki = tl.where(ki == k_tiles - 1, 0, ki + 1)
        if ki == 0:
            tile_id += NUM_SMS
            pid_m, pid_n = _tile_of(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
            rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            rows = tl.max_contiguous(tl.multiple_of(tl.where(rows < M, rows, 0), BLOCK_M), BLOCK_M)
            cols = tl.max_contiguous(tl.multiple_of(tl.where(cols < N, cols, 0), BLOCK_N), BLOCK_N)
        offs_k = ki * BLOCK_K + lanes_k
        a = tl.load(a_ptr + rows[:, None] * stride_am + offs_k[None, :] * stride_ak,
                    mask=lanes_k[None, :] < K - ki * BLOCK_K, other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + cols[None, :] * stride_bn,
                    mask=lanes_k[:, None] < K - ki * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        if ki == k_tiles - 1:
            out_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
            out_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
            out = a_ptr if INTO_A else c_ptr  # INTO_A: a later tile's copies may read what this stores
            tl.store(out + stride_cm * out_m[:, None] + stride_cn * out_n[None, :],
                     acc.to(c_ptr.dtype.element_ty), mask=(out_m[:, None] < M) & (out_n[None, :] < N))
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)


def _args(m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    return a, b, c, (a, b, c, m, n, k, k, 1, n, 1, n, 1)


def _compile(args, programs, bm, bn, bk, warps, stages, into_a=False):
    return flat_matmul.warmup(*args, backend="cuda", NUM_SMS=programs, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                              GROUP_M=2, INTO_A=into_a, num_warps=warps, num_stages=stages).ir


def _ptx(ir, warps, stages):
    from tiles.backends import registry
    caps = registry.get("cuda").target()  # the backend's shared memory (227 KiB), as a launch sees it
    return toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(warps, stages), caps), "sm_90a")


def test_pipelined_with_accumulator_in_registers():
    """The benchmark's configuration: the operands are copied by cp.async S-1 iterations ahead
    (none loaded into registers), the tile offsets rebuilt from carried scalars need no shared
    memory, the product stays in flight across iterations (``wait_group 1``) and is waited for
    only in the epilogue; no spills."""
    *_, args = _args(4096, 4096, 4096)
    ir = _compile(args, 132, 128, 256, 64, 8, 3)
    ptx = _ptx(ir, 8, 3)
    assert "wgmma.mma_async" in ptx
    assert "ld.global" not in ptx, "an operand was loaded into registers instead of copied"
    assert ptx.count("cp.async.cg.shared.global") == 3 * 12  # 128x64 + 64x256 fp16: 12 chunks a thread
    assert "wgmma.wait_group.sync.aligned 1;" in ptx
    # per iteration: the copies' barrier, the in-flight group's, the epilogue's two
    assert ptx.count("bar.sync") <= 6, ptx.count("bar.sync")
    if toolchain.ptxas_path():
        assert toolchain.ptxas_info(ptx, "sm_90a").get("spill_stores", 0) == 0


def _after_mmas(ptx):
    """The loop's PTX from its wgmma group's commit to the next copies' commit."""
    start = ptx.index("wgmma.commit_group")
    end = ptx.find("cp.async.commit_group", start)
    return ptx[start:] if end < 0 else ptx[start:end]


@pytest.mark.parametrize("bm,bn,bk,warps,stages", [(128, 256, 64, 8, 3), (64, 64, 32, 4, 4)])
def test_copies_in_the_mmas_block(bm, bn, bk, warps, stages):
    """The copies of iteration i+S-1 start right after the in-flight group's wait, in the MMAs'
    basic block (no label or branch between): the tile switch of the iteration they copy for
    branches before the MMAs, the epilogue ``if`` after the copies, so ptxas may compute their
    addresses while the MMAs issue (as in Triton's SASS); before, they followed the epilogue and
    the tile switch, after the wait, on the path to the next MMAs."""
    *_, args = _args(4096, 4096, 4096)
    ptx = _ptx(_compile(args, 132, bm, bn, bk, warps, stages), warps, stages)
    between = _after_mmas(ptx)
    assert "wgmma.wait_group.sync.aligned 1;" in between
    assert "wgmma.wait_group.sync.aligned 0;" not in between, "the copies wait for the epilogue"
    assert "$L__" not in between and "bra" not in between, between[:2000]
    assert between.count("cp.async.cg.shared.global") == (bm * bk + bk * bn) * 2 // 16 // (warps * 32)


@pytest.mark.parametrize("m,n,k,programs,stages,pipelined", [
    (150, 144, 112, 4, 3, True), (64, 80, 32, 1, 2, True), (97, 64, 208, 3, 4, True), (45, 144, 48, 2, 3, True),
    (64, 64, 64, 3, 3, True),
    (150, 130, 100, 4, 3, False)])
def test_flat_persistent_simulated(m, n, k, programs, stages, pipelined):
    """Sizes that are not multiples of the blocks, more tiles than programs (a program's loop
    crosses tiles and wraps its k counter), one k step per tile, one program, programs without
    a tile (their loops run no iteration); leading strides
    that are multiples of 16 (the copies pipelined) or not (2-byte loads: not pipelined)."""
    from test_tutorial_forms import _simulate
    a, b, c, args = _args(m, n, k)
    bm, bn, bk, warps = 64, 64, 32, 4
    ir = _compile(args, programs, bm, bn, bk, warps, stages)
    assert ("cp.async.cg.shared.global" in _ptx(ir, warps, stages)) == pipelined
    _simulate(flat_matmul, ir, args, (programs,), warps, stages)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 2e-3


def test_store_into_an_operand_is_not_pipelined():
    """An epilogue that stores through the pointer the copies read (a later tile may load what it
    wrote) keeps the loop unpipelined: copies started iterations early would miss the store."""
    *_, args = _args(256, 256, 256)
    assert "cp.async" in _ptx(_compile(args, 4, 64, 64, 32, 4, 3), 4, 3)
    assert "cp.async" not in _ptx(_compile(args, 4, 64, 64, 32, 4, 3, into_a=True), 4, 3)


@tiles.jit
def chunked_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, CHUNK: tl.constexpr):
    # one program per output tile; every CHUNK k steps the partial product is stored into its own
    # slice of c (c[j] = A[:, chunk j] @ B[chunk j, :]) and the accumulator reset, under a run-time if
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    lanes = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for ki in range(0, tl.cdiv(K, BLOCK_K)):
        offs_k = ki * BLOCK_K + lanes
        a = tl.load(a_ptr + rows[:, None] * stride_am + offs_k[None, :], mask=lanes[None, :] < K - ki * BLOCK_K,
                    other=0.0)
        b = tl.load(b_ptr + offs_k[:, None] * stride_bk + cols[None, :], mask=lanes[:, None] < K - ki * BLOCK_K,
                    other=0.0)
        acc = tl.dot(a, b, acc)
        if ki % CHUNK == CHUNK - 1:
            out = c_ptr + (ki // CHUNK) * M * stride_cm + rows[:, None] * stride_cm + cols[None, :]
            tl.store(out, acc.to(tl.float16), mask=(rows[:, None] < M) & (cols[None, :] < N))
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)


@pytest.mark.parametrize("m,n,k,stages", [(64, 64, 192, 3), (128, 64, 256, 4), (64, 128, 128, 2)])
def test_copies_before_a_run_time_if_without_carried_addresses(m, n, k, stages):
    """The same placement where the copies' pointers advance with the loop (no values kept
    ahead; running offsets): started right after the in-flight group's wait, before the ``if``
    that stores each chunk's partial product and resets the accumulator; simulated against numpy."""
    from test_tutorial_forms import _simulate
    bm, bn, bk, warps, chunk = 64, 64, 32, 4, 2
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    parts = k // bk // chunk
    c = np.full((parts, m, n), np.nan, np.float16)
    args = (a, b, c, m, n, k, k, n, n)
    ir = chunked_matmul.warmup(*args, backend="cuda", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, CHUNK=chunk,
                               num_warps=warps, num_stages=stages).ir
    between = _after_mmas(_ptx(ir, warps, stages))
    assert "wgmma.wait_group.sync.aligned 1;" in between and "$L__" not in between
    _simulate(chunked_matmul, ir, args, (m // bm, n // bn), warps, stages)
    step = bk * chunk
    for j in range(parts):
        want = a[:, j * step:(j + 1) * step].astype(np.float32) @ b[j * step:(j + 1) * step].astype(np.float32)
        assert _rel(c[j], want) < 2e-3, j


@pytest.mark.parametrize("m,n,k,programs,stages", [(150, 144, 112, 4, 3), (97, 64, 208, 3, 4), (64, 80, 32, 1, 2)])
def test_fp32_output_pipelined(m, n, k, programs, stages):
    """The same kernel storing an fp32 tile (``acc.to(float32)`` is the accumulator itself): its copy
    out of the MMA layout is made inside the epilogue branch, not after every k step, so the loop
    is pipelined as with fp16; before, that copy at the top of the body kept the loop unpipelined.
    Simulated against numpy at odd sizes."""
    from test_tutorial_forms import _simulate
    a, b, _, _ = _args(m, n, k)
    c = np.full((m, n), np.nan, np.float32)
    args = (a, b, c, m, n, k, k, 1, n, 1, n, 1)
    bm, bn, bk, warps = 64, 64, 32, 4
    ir = _compile(args, programs, bm, bn, bk, warps, stages)
    ptx = _ptx(ir, warps, stages)
    assert "cp.async.cg.shared.global" in ptx and "wgmma.wait_group.sync.aligned 1;" in ptx
    _simulate(flat_matmul, ir, args, (programs,), warps, stages)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 2e-3


def test_fp32_output_large_tile_runs_fewer_stages():
    """128x256 fp32 tiles at num_stages=3: three 48 KiB stages and the tile's 128 KiB copy out of
    the MMA layout would pass the 227 KiB of shared memory, so the loop runs two stages (the copy's
    exact size counted, padding included: with the tile's bare size the kernel was refused)."""
    *_, args = _args(4096, 4096, 4096)
    args = (args[0], args[1], np.zeros((4096, 4096), np.float32), *args[3:])
    ptx = _ptx(_compile(args, 132, 128, 256, 64, 8, 3), 8, 3)
    assert ptx.count("cp.async.cg.shared.global") == 2 * 12
    assert "wgmma.wait_group.sync.aligned 1;" in ptx and "cp.async.wait_group 0;" in ptx


def test_fp32_output_staged_once():
    """The fp32 tile leaves the MMA layout once, in the epilogue store (its 16-byte stores need a
    layout of their own): the accumulator the ``if``'s other branch yields stays in registers, so
    no blocked copy of it is made (before, a second staging, dead, cost 32 shared stores a thread
    and two barriers per tile)."""
    *_, args = _args(4096, 4096, 4096)
    args = (args[0], args[1], np.zeros((4096, 4096), np.float32), *args[3:])
    ptx = _ptx(_compile(args, 132, 128, 128, 64, 8, 3), 8, 3)
    pairs = 128 * 128 // (8 * 32) // 2
    assert ptx.count("st.shared.v2.b32") == pairs, ptx.count("st.shared.v2.b32")
    assert ptx.count("ld.shared.v4.b32") == pairs // 2
