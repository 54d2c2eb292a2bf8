"""TMA for tensor descriptors (TILES_TMA=1, sm_90+): which accesses are claimed, the PTX (checked
by ptxas when on PATH), the simulator (cuda/simulator/tma.py); on a GPU, results against torch.  The host
side (map encoding, the launcher's choice) is test_tma_host.py."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.cuda import toolchain
from tiles.backends.cuda.hopper.tma_spec import MapSpec, Source

GPU, WHY = registry.status("cuda")
needs_gpu = pytest.mark.skipif(not GPU, reason=f"no CUDA GPU: {WHY}")
needs_ptxas = pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not on PATH")


@tiles.jit
def desc_copy(x_ptr, out_ptr, M, N, sx, so, dm, dn, BM: tl.constexpr, BN: tl.constexpr):
    """out block (pm, pn) = 2 * x block moved by (dm, dn); both through descriptors."""
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[sx, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[so, 1], block_shape=[BM, BN])
    t = src.load([tl.program_id(0) * BM + dm, tl.program_id(1) * BN + dn])
    dst.store([tl.program_id(0) * BM, tl.program_id(1) * BN], t * 2)


@tiles.jit
def desc_matmul_tma_store(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Loads in the loop stay on the cp.async pipeline; the epilogue store may take TMA."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    off_m = tl.program_id(0) * BM
    off_n = tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


@tiles.jit
def const_width_copy(x_ptr, out_ptr, WIDTH: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """A copy through descriptors of rows 80 elements apart whose width is a constant."""
    src = tl.make_tensor_descriptor(x_ptr, shape=[64, WIDTH], strides=[80, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[64, WIDTH], strides=[80, 1], block_shape=[BM, BN])
    dst.store([tl.program_id(0) * BM, tl.program_id(1) * BN], src.load([tl.program_id(0) * BM, 0]))


def _copy_args(m, n, dtype=np.float16, pad=0):
    x = np.zeros((m, n + pad), dtype)[:, :n]
    return (x, np.zeros_like(x), m, n, x.strides[0] // x.itemsize, n, 0, 0)


def _compiled(kernel, args, **kw):
    return kernel.warmup(*args, backend="cuda", num_warps=4, **kw)


def test_a_constant_row_ending_inside_a_chunk_is_not_claimed(tma_on):
    """Known at compile time: the access stays a masked pointer access."""
    x = np.zeros((64, 80), np.float16)
    assert _compiled(const_width_copy, (x, x.copy()), WIDTH=80, BM=16, BN=16).metadata.get("tensor_maps")
    assert not _compiled(const_width_copy, (x, x.copy()), WIDTH=77, BM=16, BN=16).metadata.get("tensor_maps")


@pytest.mark.parametrize("dn,taken", [(5, False), (8, False), (16, True), (-32, True)])
def test_load_offset_must_be_16_byte_aligned(tma_on, dn, taken):
    """TMA faults on an innermost coordinate that is not a multiple of 16 bytes (an illegal
    instruction on the H200): such a load stays a masked pointer load; the store still takes TMA."""
    args = list(_copy_args(64, 80, pad=16))
    args[-1] = dn
    ptx = _compiled(desc_copy, args, BM=32, BN=64).asm["ptx"]
    assert ("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier" in ptx) is taken
    assert ("ld.global" in ptx) is not taken
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx


def test_copy_takes_tma(tma_on):
    c = _compiled(desc_copy, _copy_args(64, 80, pad=16), BM=32, BN=64)
    ptx = c.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    assert "mbarrier.try_wait.parity" in ptx and "mbarrier.arrive.expect_tx" in ptx
    assert "ld.global" not in ptx and "st.global" not in ptx
    specs = [MapSpec.from_json(d) for d in c.metadata["tensor_maps"]]
    names = [p.name for p in c.ir.params]
    assert [(names[s.base], s.dtype, s.box) for s in specs] == [("x_ptr", "float16", (32, 64)),
                                                                 ("out_ptr", "float16", (32, 64))]
    assert [names[s.param] for s in specs[0].shape] == ["M", "N"]  # type: ignore[index]
    assert names[specs[0].strides[0].param] == "sx" and specs[0].strides[1] == Source(None, 1)  # type: ignore[index]


@needs_ptxas
@pytest.mark.parametrize("dtype,bm,bn", [(np.float16, 32, 64), (np.float32, 16, 8), (np.int8, 8, 32),
                                         (np.float64, 4, 2)])
def test_tma_ptx_assembles(tma_on, dtype, bm, bn):
    c = _compiled(desc_copy, _copy_args(64, 64, dtype), BM=bm, BN=bn)
    assert "cp.async.bulk.tensor" in c.asm["ptx"]
    toolchain.ptxas_info(c.asm["ptx"], "sm_90a")  # raises when ptxas rejects it


@pytest.mark.parametrize("env,default,on", [(None, False, False), (None, True, True), ("0", True, False),
                                            ("1", False, True), ("off", True, False)])
def test_default_and_switch(monkeypatch, env, default, on):
    """TILES_TMA=1/0 switches TMA on or off; unset, ``config.TMA_BY_DEFAULT`` decides."""
    from tiles import config
    monkeypatch.setattr(config, "TMA_BY_DEFAULT", default)
    if env is None:
        monkeypatch.delenv("TILES_TMA", raising=False)
    else:
        monkeypatch.setenv("TILES_TMA", env)
    monkeypatch.setenv("TILES_ALWAYS_COMPILE", "1")
    monkeypatch.setenv("TILES_CUDA_ARCH", "sm_90a")
    c = _compiled(desc_copy, _copy_args(64, 64), BM=32, BN=64)
    assert ("cp.async.bulk" in c.asm["ptx"]) is on and ("tensor_maps" in c.metadata) is on


def test_not_on_sm80(tma_on, monkeypatch):
    monkeypatch.setenv("TILES_CUDA_ARCH", "sm_80")
    c = _compiled(desc_copy, _copy_args(64, 64), BM=32, BN=64)
    assert "cp.async.bulk" not in c.asm["ptx"] and "tensor_maps" not in c.metadata


@pytest.mark.parametrize("why,args,consts", [
    ("innermost row of 8 bytes", _copy_args(64, 64), dict(BM=32, BN=4)),
    ("box wider than 256", _copy_args(64, 512), dict(BM=2, BN=512)),
    ("base not promised 16-byte aligned", (np.zeros(4097, np.float16)[1:].reshape(64, 64),
                                           np.zeros((64, 64), np.float16), 64, 64, 64, 64, 0, 0),
     dict(BM=32, BN=64)),
])
def test_what_tma_cannot_serve_stays_on_pointers(tma_on, why, args, consts):
    c = _compiled(desc_copy, args, **consts)
    maps = c.metadata.get("tensor_maps", [])
    assert all(MapSpec.from_json(m).base != 0 for m in maps), why  # x_ptr's load is not TMA's
    if why != "base not promised 16-byte aligned":
        assert "cp.async.bulk" not in c.asm["ptx"], why


@needs_ptxas
@pytest.mark.parametrize("bk,stages,swizzle", [(64, 3, 128), (32, 4, 64), (16, 2, 32)])
def test_matmul_ptx_stages_with_tma(tma_on, bk, stages, swizzle):
    a, b = np.zeros((128, 64), np.float16), np.zeros((64, 128), np.float16)
    c = _compiled(desc_matmul_tma_store, (a, b, np.zeros((128, 128), np.float16), 128, 128, 64),
                  BM=64, BN=64, BK=bk, num_stages=stages)
    ptx = c.asm["ptx"]
    assert "wgmma.mma_async" in ptx and "cp.async.cg" not in ptx and "ld.global" not in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster" in ptx and "mbarrier.try_wait.parity" in ptx
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ptx
    specs = [MapSpec.from_json(m) for m in c.metadata["tensor_maps"]]
    # A (64 x BK, K-major) and B (BK x 64, N-major) swizzled as wgmma reads them; C row-major
    assert [(s.base, s.box, s.swizzle) for s in specs] == [
        (0, (64, swizzle // 2), swizzle), (1, (bk, 64), 128), (2, (64, 64), 0)]
    toolchain.ptxas_info(ptx, "sm_90a")


_LOOP_EVENT = re.compile(r"mbarrier\.try_wait|bar\.sync|wgmma\.mma_async|wgmma\.wait_group\.sync\.aligned \d|"
                         r"mbarrier\.arrive\.expect_tx|cp\.async\.bulk\.tensor\.2d\.shared::cluster")


def _events(ptx: str) -> list[str]:
    """Waits, barriers, MMAs and TMA copies in program order, repeats merged."""
    out: list[str] = []
    for ev in _LOOP_EVENT.findall(ptx[ptx.index(".entry"):]):
        if not out or out[-1] != ev:
            out.append(ev)
    return out


@pytest.mark.parametrize("stages", [1, 2, 3, 4])
def test_tma_loop_is_scheduled_as_the_cp_async_one(tma_on, stages):
    """pipeline.py's (Triton's) order: S - 1 stages started before the loop; each iteration waits
    on its stage's mbarrier and runs its MMAs, whose group stays in flight (``wait_group 1``);
    behind one barrier (the previous group, complete in every warpgroup, read the stage) thread 0
    refills the stage the previous iteration read.  One stage: copy, wait, MMAs, all waited for."""
    a, b = np.zeros((128, 64), np.float16), np.zeros((64, 128), np.float16)
    ptx = _compiled(desc_matmul_tma_store, (a, b, np.zeros((128, 128), np.float16), 128, 128, 64),
                    BM=64, BN=64, BK=32, num_stages=stages).asm["ptx"]
    events = _events(ptx)
    wait = events.index("mbarrier.try_wait")
    copy, arm, mma = "cp.async.bulk.tensor.2d.shared::cluster", "mbarrier.arrive.expect_tx", "wgmma.mma_async"
    assert events[:wait].count(arm) == stages - 1  # the prologue
    if stages == 1:  # (LLVM lays the thread-0 copy block out after the MMAs)
        assert "wgmma.wait_group.sync.aligned 1" not in events and events.count(arm) == 1
    else:
        assert events[wait:wait + 7] == ["mbarrier.try_wait", mma, "wgmma.wait_group.sync.aligned 1", "bar.sync",
                                         arm, copy, "wgmma.wait_group.sync.aligned 0"]


@tiles.jit
def mixed_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A through a descriptor, B through pointers: TMA leaves the loop alone."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        b = tl.load(b_ptr + (k + tl.arange(0, BK))[:, None] * N + offs_n[None, :])
        acc = tl.dot(a_desc.load([tl.program_id(0) * BM, k]), b, acc)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * N + offs_n[None, :], acc)


def test_loop_with_pointer_operands_is_left_alone(tma_on, monkeypatch):
    args = (np.zeros((128, 64), np.float16), np.zeros((64, 128), np.float16), np.zeros((128, 128), np.float32),
            128, 128, 64)
    c = _compiled(mixed_matmul, args, BM=64, BN=64, BK=32, num_stages=3)
    assert "cp.async.bulk" not in c.asm["ptx"] and "tensor_maps" not in c.metadata
    monkeypatch.setenv("TILES_TMA", "0")
    assert _compiled(mixed_matmul, args, BM=64, BN=64, BK=32, num_stages=3).asm["ptx"] == c.asm["ptx"]


# ---------------------------------------------------------------- on the GPU


@needs_gpu
@pytest.mark.parametrize("dtype", ["float16", "float32", "bfloat16", "int8"])
@pytest.mark.parametrize("m,n,bm,bn,dm,dn", [(100, 72, 32, 64, -3, 5), (64, 128, 64, 32, 0, 0),
                                             (33, 200, 16, 64, 7, -9)])
def test_tma_copy_matches_torch(tma_on, monkeypatch, dtype, m, n, bm, bn, dm, dn):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    gen = torch.Generator(device="cuda").manual_seed(m * 1000 + n)
    dt = getattr(torch, dtype)
    base = (torch.randint(-100, 100, (m, n + 8), device="cuda", generator=gen) if dtype == "int8" else
            torch.randn((m, n + 8), device="cuda", generator=gen)).to(dt)
    x = base[:, :n]  # rows 8 elements longer than the tile row: a stride that is not the width
    out = torch.full((m, n), 7, device="cuda", dtype=dt)
    grid = (tiles.cdiv(m, bm) + 1, tiles.cdiv(n, bn) + 1)
    desc_copy[grid](x, out, m, n, x.stride(0), n, dm, dn, BM=bm, BN=bn, backend="cuda")
    want = torch.zeros((m + 2 * bm + abs(dm), n + 2 * bn + abs(dn)), device="cuda", dtype=dt)
    pad_r, pad_c = bm + abs(dm), bn + abs(dn)
    want[pad_r:pad_r + m, pad_c:pad_c + n] = x
    expect = want[pad_r + dm:pad_r + dm + m, pad_c + dn:pad_c + dn + n] * 2
    torch.testing.assert_close(out, expect, rtol=0, atol=0)


@needs_gpu
def test_tma_copy_with_host_arrays_falls_back(tma_on, monkeypatch, rng):
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    x = rng.standard_normal((50, 70)).astype(np.float32)
    out = np.full_like(x, 7)
    desc_copy[(tiles.cdiv(50, 16), tiles.cdiv(70, 32))](x, out, 50, 70, 70, 70, 0, 0, BM=16, BN=32, backend="cuda")
    np.testing.assert_array_equal(out, 2 * x)


@needs_gpu
@pytest.mark.parametrize("m,n,k", [(256, 256, 512), (130, 96, 256), (100, 72, 200)])
def test_tma_store_matmul_matches_torch(tma_on, monkeypatch, m, n, k):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    gen = torch.Generator(device="cuda").manual_seed(k)
    a = torch.randn((m, k), device="cuda", generator=gen).half()
    b = torch.randn((k, n), device="cuda", generator=gen).half()
    c = torch.zeros((m, n), device="cuda", dtype=torch.float16)
    desc_matmul_tma_store[(tiles.cdiv(m, 64), tiles.cdiv(n, 64))](a, b, c, m, n, k, BM=64, BN=64, BK=32,
                                                                  num_stages=3, backend="cuda")
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=2e-2, atol=2e-2)


# ---------------------------------------------------------------- on the simulator (cuda/simulator/tma.py)


def _sim_args(args):
    """Every argument as the simulator takes it (the kernels here have no int argument equal to 1,
    which the jit would specialize away)."""
    assert 1 not in [a for a in args if not isinstance(a, np.ndarray)]
    return [x if isinstance(x, np.ndarray) else np.int32(x) for x in args]


@pytest.mark.parametrize("dtype,m,n,bm,bn,dm,dn", [(np.float16, 50, 70, 16, 32, -3, 5),
                                                   (np.float32, 33, 20, 8, 8, 2, -7), (np.int8, 19, 48, 8, 16, 0, 9),
                                                   (np.float16, 50, 70, 16, 32, -3, 16),
                                                   (np.float32, 33, 20, 8, 8, 2, -16), (np.int8, 19, 48, 8, 16, 0, 16)])
def test_single_stage_copy_simulated(tma_on, rng, dtype, m, n, bm, bn, dm, dn):
    """Loads whose innermost offset is not a multiple of 16 bytes are masked pointer loads (TMA
    would fault); the stores' offsets are, so they always take TMA."""
    from tiles.backends.cuda.simulator.tma import run
    rows = (rng.standard_normal((m, n + 16)) * 20).astype(dtype)  # the simulator copies arrays whole
    x = rows[:, :n]
    out = np.full((m, n), 7, dtype)
    args = (rows, out, m, n, n + 16, n, dm, dn)
    ir = desc_copy.warmup(*args, backend="cuda", BM=bm, BN=bn, num_warps=4).ir
    grid = (tiles.cdiv(m, bm), tiles.cdiv(n, bn))
    sims = run(ir, _sim_args(args), grid, 128)
    tma_loads = grid[0] * grid[1] if dn % 16 == 0 else 0
    assert sum(s.loads for s in sims) == tma_loads and sum(s.stores for s in sims) == grid[0] * grid[1]
    padded = np.zeros((m + 2 * bm + 20, n + 2 * bn + 20), dtype)
    padded[bm + 10:bm + 10 + m, bn + 10:bn + 10 + n] = x
    want = padded[bm + 10 + dm:bm + 10 + dm + m, bn + 10 + dn:bn + 10 + dn + n] * dtype(2)
    np.testing.assert_array_equal(out, want)


@tiles.jit
def batched_rows_copy(x_ptr, out_ptr, B, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """Descriptors over B * M rows (a size the host computes from two parameters)."""
    src = tl.make_tensor_descriptor(x_ptr, shape=[B * M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[B * M, N], strides=[N, 1], block_shape=[BM, BN])
    tile = src.load([tl.program_id(0) * BM + 3, tl.program_id(1) * BN])
    dst.store([tl.program_id(0) * BM, tl.program_id(1) * BN], tile)


def test_computed_size_simulated(tma_on, rng):
    from tiles.backends.cuda.simulator.tma import run
    b, m, n = 3, 7, 40
    x = rng.standard_normal((b * m, n)).astype(np.float32)
    out = np.full_like(x, 9)
    args = (x, out, b, m, n)
    c = batched_rows_copy.warmup(*args, backend="cuda", BM=8, BN=16, num_warps=4)
    assert [MapSpec.from_json(d).shape[0].op for d in c.metadata["tensor_maps"]] == ["mul", "mul"]
    sims = run(c.ir, _sim_args(args), (tiles.cdiv(b * m, 8), tiles.cdiv(n, 16)), 128)
    assert sum(s.loads for s in sims) == len(sims)
    want = np.zeros_like(x)
    want[:-3] = x[3:]
    np.testing.assert_array_equal(out, want)


@tiles.jit
def desc_matmul_nk(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """B stored N x K and read as b.T (Triton's tutorial 09 form)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([tl.program_id(0) * BM, k]), b_desc.load([tl.program_id(1) * BN, k]).T, acc)
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    c_desc.store([tl.program_id(0) * BM, tl.program_id(1) * BN], acc)


@pytest.mark.parametrize("kernel", ["kn", "nk"])
@pytest.mark.parametrize("m,n,k,bm,bn,bk,warps,stages", [
    (130, 96, 200, 64, 64, 32, 4, 3), (64, 64, 256, 64, 64, 64, 4, 4), (100, 72, 96, 64, 64, 32, 4, 1),
    (128, 128, 160, 128, 64, 32, 8, 2),
    (70, 200, 300, 64, 128, 128, 4, 3)])  # 256-byte rows: two swizzled column blocks per operand
def test_pipelined_matmul_simulated(tma_on, rng, kernel, m, n, k, bm, bn, bk, warps, stages):
    """Swizzled TMA stages read by wgmma, mbarrier phases, stage reuse with groups in flight."""
    from tiles.backends.cuda.simulator.tma import run
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n) if kernel == "kn" else (n, k)).astype(np.float16)
    c = np.zeros((m, n), np.float16 if kernel == "kn" else np.float32)  # desc_matmul_tma_store stores fp16
    fn = desc_matmul_tma_store if kernel == "kn" else desc_matmul_nk
    args = (a, b, c, m, n, k)
    compiled = fn.warmup(*args, backend="cuda", BM=bm, BN=bn, BK=bk, num_warps=warps, num_stages=stages)
    ptx = compiled.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster" in ptx and "cp.async.cg" not in ptx
    grid = (tiles.cdiv(m, bm), tiles.cdiv(n, bn))
    sims = run(compiled.ir, _sim_args(args), grid, warps * 32, num_stages=stages)
    want = a.astype(np.float32) @ (b.astype(np.float32) if kernel == "kn" else b.astype(np.float32).T)
    per_step = 2 if bk * 2 <= 128 else 3  # one copy per operand and step; 256-byte A rows: two
    assert all(s.loads >= tiles.cdiv(k, bk) * per_step for s in sims)
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=2e-2, atol=2e-2)


@tiles.jit
def persistent_desc_matmul(a_ptr, b_ptr, c_ptr, M, N, K, PROGRAMS: tl.constexpr, BM: tl.constexpr,
                           BN: tl.constexpr, BK: tl.constexpr):
    """Each program loops over output tiles: the stages' mbarriers are set up again per tile, and
    the store after the inner loop is a TMA store."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    tiles_n = tl.cdiv(N, BN)
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tiles_n, PROGRAMS):
        pm = tile // tiles_n
        pn = tile % tiles_n
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(a_desc.load([pm * BM, k]), b_desc.load([pn * BN, k]).T, acc)
        c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))


@needs_ptxas
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_persistent_loop_has_no_trap_inside(tma_on, tmp_path, stages):
    """A wait that gives up traps after the loop, not inside it: a trap there makes ptxas wait for
    the wgmma group kept in flight before every mbarrier wait (its warning C7517, seen on the
    persistent form of benchmarks/tma_gemm.py)."""
    a, b, c = np.zeros((256, 128), np.float16), np.zeros((256, 128), np.float16), np.zeros((256, 256), np.float16)
    ptx = persistent_desc_matmul.warmup(a, b, c, 256, 256, 128, PROGRAMS=4, BM=128, BN=128, BK=64, num_warps=8,
                                        num_stages=stages, backend="cuda").asm["ptx"]
    (tmp_path / "k.ptx").write_text(ptx)
    done = subprocess.run([shutil.which("ptxas") or "ptxas", "-arch=sm_90a", str(tmp_path / "k.ptx"), "-o",
                           str(tmp_path / "k.cubin")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "C7517" not in done.stderr and "wgmma.wait_group.sync.aligned 1" in ptx and "trap;" in ptx


@pytest.mark.parametrize("stages", [2, 3])
def test_persistent_matmul_simulated(tma_on, rng, stages):
    from tiles.backends.cuda.simulator.tma import run
    m, n, k = 150, 130, 100
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((n, k)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    args = (a, b, c, m, n, k)
    compiled = persistent_desc_matmul.warmup(*args, backend="cuda", PROGRAMS=4, BM=64, BN=64, BK=32, num_warps=4,
                                             num_stages=stages)
    assert len(compiled.metadata["tensor_maps"]) == 3
    sims = run(compiled.ir, _sim_args(args), (4,), 128, num_stages=stages)
    assert sum(s.stores for s in sims) == tiles.cdiv(m, 64) * tiles.cdiv(n, 64)
    want = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=2e-2, atol=5e-2)


@needs_gpu
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("m,n,k,bm,bn,bk,warps,stages", [(512, 512, 1024, 128, 128, 64, 8, 3),
                                                         (300, 200, 520, 64, 128, 64, 4, 4),
                                                         (256, 256, 256, 128, 256, 64, 8, 2)])
def test_tma_pipelined_matmul_matches_torch(tma_on, monkeypatch, dt, m, n, k, bm, bn, bk, warps, stages):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    gen = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn((m, k), device="cuda", generator=gen).to(getattr(torch, dt))
    b = torch.randn((n, k), device="cuda", generator=gen).to(getattr(torch, dt))
    c = torch.zeros((m, n), device="cuda", dtype=torch.float32)
    desc_matmul_nk[(tiles.cdiv(m, bm), tiles.cdiv(n, bn))](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, num_warps=warps,
                                                           num_stages=stages, backend="cuda")
    torch.testing.assert_close(c, a.float() @ b.float().T, rtol=1e-2, atol=1e-2)
    c16 = torch.zeros((m, n), device="cuda", dtype=torch.float16)
    persistent_desc_matmul[(7,)](a.half(), b.half(), c16, m, n, k, PROGRAMS=7, BM=bm, BN=bn, BK=bk, num_warps=warps,
                                 num_stages=stages, backend="cuda")
    torch.testing.assert_close(c16.float(), a.half().float() @ b.half().float().T, rtol=2e-2, atol=5e-2)


def test_dot_loads_stay_on_cp_async_when_wgmma_does_not_fit(tma_on):
    """BM = 32 runs mma.sync, whose cp.async pipeline stays; only the store takes TMA."""
    a, b = np.zeros((128, 64), np.float16), np.zeros((64, 128), np.float16)
    c = _compiled(desc_matmul_tma_store, (a, b, np.zeros((128, 128), np.float16), 128, 128, 64),
                  BM=32, BN=64, BK=32, num_stages=3)
    ptx = c.asm["ptx"]
    assert "mma.sync" in ptx and "cp.async.cg.shared.global" in ptx
    assert "shared::cluster" not in ptx and "bulk_group" in ptx


@tiles.jit
def loop_of_loads(x_ptr, y_ptr, out_ptr, M, N, STEPS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    """Two single-stage TMA loads per iteration (an mbarrier set up and torn down for each)."""
    a = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    b = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    o = tl.make_tensor_descriptor(out_ptr, shape=[BM, BN], strides=[BN, 1], block_shape=[BM, BN])
    acc = tl.zeros((BM, BN), tl.float32)
    for i in range(0, STEPS):
        acc += a.load([i * BM, tl.program_id(0) * BN]) * b.load([tl.program_id(0), i * BN])
    o.store([0, 0], acc)


def test_loads_in_a_loop_simulated(tma_on, rng):
    from tiles.backends.cuda.simulator.tma import run
    m, n = 40, 44
    x, y = (rng.standard_normal((m, n)).astype(np.float32) for _ in range(2))
    out = np.zeros((16, 16), np.float32)
    args = (x, y, out, m, n)
    c = loop_of_loads.warmup(*args, backend="cuda", STEPS=3, BM=16, BN=16, num_warps=4)
    sims = run(c.ir, _sim_args(args), (1,), 128)
    assert sims[0].loads == 6 and sims[0].stores == 1
    want = sum(_window(x, i * 16, 0) * _window(y, 0, i * 16) for i in range(3))
    np.testing.assert_allclose(out, want, rtol=1e-6)


def _window(x, r0, c0, size=16):
    out = np.zeros((size, size), x.dtype)
    part = x[r0:r0 + size, c0:c0 + size]
    out[:part.shape[0], :part.shape[1]] = part
    return out


@tiles.jit
def desc_attention(Q, K, V, Out, sm_scale, ROWS, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr):
    """Triton's tutorial attention in its descriptor form: Q before the loop (hoisted into
    registers), K read as k.T, P repacked from S; K and V staged by TMA."""
    start_m = tl.program_id(0)
    offset_y = tl.program_id(1) * N_CTX
    desc_q = tl.make_tensor_descriptor(Q, shape=[ROWS, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[ROWS, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, shape=[ROWS, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out, shape=[ROWS, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = desc_q.load([offset_y + start_m * BLOCK_M, 0])
    for start_n in range(0, N_CTX, BLOCK_N):
        k = desc_k.load([offset_y + start_n, 0]).T
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offset_y + start_n, 0])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_ij
    desc_o.store([offset_y + start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(tl.float16))


def _attention_reference(q, k, v, scale):
    s = q.astype(np.float32) @ np.swapaxes(k.astype(np.float32), -1, -2) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v.astype(np.float32)


@pytest.mark.parametrize("d,n_ctx,bm,bn,warps,stages", [(64, 128, 64, 64, 4, 2), (64, 192, 64, 64, 4, 3),
                                                        (32, 128, 64, 32, 4, 1)])
def test_attention_stages_k_and_v_with_tma_simulated(tma_on, rng, d, n_ctx, bm, bn, warps, stages):
    from tiles.backends.cuda.simulator.tma import run
    heads = 2
    q, k, v = (rng.standard_normal((heads, n_ctx, d)).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    args = (q, k, v, o, 0.3, heads * n_ctx, n_ctx)
    c = desc_attention.warmup(*args, backend="cuda", HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps,
                              num_stages=stages)
    ptx = c.asm["ptx"]
    assert "cp.async.bulk.tensor.2d.shared::cluster" in ptx and "cp.async.cg" not in ptx
    assert [MapSpec.from_json(m).base for m in c.metadata["tensor_maps"]] == [1, 2, 3]  # K, V, Out
    if shutil.which("ptxas"):
        toolchain.ptxas_info(ptx, "sm_90a")
    sim_args = [x if isinstance(x, np.ndarray) else np.float32(x) if isinstance(x, float) else np.int32(x)
                for x in args]
    run(c.ir, sim_args, (n_ctx // bm, heads), warps * 32, num_stages=stages)
    np.testing.assert_allclose(o.astype(np.float32), _attention_reference(q, k, v, 0.3), atol=3e-3, rtol=1e-2)


@needs_gpu
@pytest.mark.parametrize("d,bm,bn,warps,stages", [(64, 128, 64, 8, 3), (128, 128, 64, 8, 2), (64, 64, 64, 4, 3)])
def test_tma_attention_matches_torch(tma_on, monkeypatch, d, bm, bn, warps, stages):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    heads, n_ctx = 4, 1024
    gen = torch.Generator(device="cuda").manual_seed(d * bm)
    q, k, v = (torch.randn((heads, n_ctx, d), device="cuda", generator=gen).half() for _ in range(3))
    o = torch.empty_like(q)
    desc_attention[(n_ctx // bm, heads)](q, k, v, o, 0.125, heads * n_ctx, n_ctx, HEAD_DIM=d, BLOCK_M=bm,
                                         BLOCK_N=bn, num_warps=warps, num_stages=stages, backend="cuda")
    want = torch.softmax(q.float() @ k.float().transpose(-1, -2) * 0.125, -1) @ v.float()
    torch.testing.assert_close(o.float(), want, atol=2e-2, rtol=2e-2)


@tiles.jit
def store_then_reread(x_ptr, out_ptr, total_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """A descriptor store, then a load of what it wrote (the same program reads it back)."""
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    rows, cols = tl.arange(0, BM)[:, None], tl.arange(0, BN)[None, :]
    dst.store([0, 0], tl.load(x_ptr + rows * N + cols) + 1)
    tl.store(total_ptr, tl.sum(tl.sum(tl.load(out_ptr + rows * N + cols).to(tl.float32), 1), 0))


def test_a_store_nothing_reads_after_waits_only_for_its_reads(tma_on):
    """The bulk store's group is waited for with ``.read`` (the arena may be reused; the writes
    land by the kernel's end) unless the program may read memory after it, as here."""
    x = np.zeros((64, 64), np.float16)
    last = _compiled(desc_copy, _copy_args(64, 64), BM=32, BN=32).asm["ptx"]
    assert "cp.async.bulk.wait_group.read 0" in last
    reread = _compiled(store_then_reread, (x, x.copy(), np.zeros(1, np.float32), 64, 64), BM=64, BN=64,
                       grid=(1,)).asm["ptx"]
    assert "cp.async.bulk.tensor.2d.global" in reread
    assert "cp.async.bulk.wait_group 0" in reread and ".read" not in reread


@needs_gpu
def test_a_store_read_back_by_its_program_matches(tma_on, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    x = torch.randn((64, 64), device="cuda").half()
    out = torch.full_like(x, float("nan"))
    total = torch.zeros(1, device="cuda")
    store_then_reread[(1,)](x, out, total, 64, 64, BM=64, BN=64, backend="cuda", num_warps=4)
    torch.testing.assert_close(out, x + 1)
    torch.testing.assert_close(total, (x + 1).float().sum().reshape(1), rtol=1e-3, atol=1e-2)
