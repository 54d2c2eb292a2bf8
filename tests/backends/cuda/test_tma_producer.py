"""A producer warpgroup issues the copies of TMA-pipelined ``tl.dot`` loops
(``cuda/hopper/tma_producer.py``): its code shape in PTX, where it is kept and where not, and
its results on the GPU against torch."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_tma_block_ptr import _attention_args, _attention_reference, _heads, _sim_args, block_attention

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.cuda import toolchain

GPU, WHY = registry.status("cuda")
needs_gpu = pytest.mark.skipif(not GPU, reason=f"no CUDA GPU: {WHY}")
needs_ptxas = pytest.mark.skipif(toolchain.ptxas_path() is None, reason="ptxas is not on PATH")


@tiles.jit
def wide_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [stride_am, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [stride_bk, 1], [BK, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([k * BK, pid_n * BN]))
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _attention(rng, d, bn, stages, causal=False):
    (q, k, v), o, strides = _attention_args(rng, 1, 2, 256, d)
    return block_attention.warmup(q, k, v, o, 0.125, *strides, 2, 256, HEAD_DIM=d, BLOCK_M=128, BLOCK_N=bn,
                                  CAUSAL=causal, num_warps=8, num_stages=stages, backend="cuda", grid=(1,))


@needs_ptxas
@pytest.mark.parametrize("bn,stages", [(128, 2), (64, 3)])
def test_d128_attention_gets_a_producer_and_its_loop_has_no_barrier(tma_on, rng, bn, stages):
    compiled = _attention(rng, 128, bn, stages)
    ptx = compiled.asm["ptx"]
    assert compiled.threads == 384 and ".maxntid 384" in ptx
    assert "setmaxnreg.dec.sync.aligned.u32 40" in ptx and "setmaxnreg.inc.sync.aligned.u32 232" in ptx
    mmas = [m.start() for m in re.finditer(r"wgmma\.mma_async", ptx)]
    assert mmas and "bar.sync" not in ptx[mmas[0]:mmas[-1]]  # the consumers never wait for each other
    assert set(re.findall(r"bar\.sync\s+([^;]*);", ptx)) == {"1, 256", "2, 288"}
    # a release per consumer warp and stage, and (persistent.py) one per consumer thread of Q's buffer
    assert ptx.count("mbarrier.arrive.shared::cta.b64") == 2
    info = toolchain.ptxas_info(ptx, "sm_90a")
    assert info["registers"] == 168 and not info.get("spill_stores", 0)


@needs_ptxas
def test_d64_attention_keeps_two_programs_per_sm_without_a_producer(tma_on, rng):
    compiled = _attention(rng, 64, 64, 3)
    assert compiled.threads == 256 and "setmaxnreg" not in compiled.asm["ptx"]
    assert "cp.async.bulk.tensor" in compiled.asm["ptx"]


def test_a_launch_with_maxnreg_gets_no_producer(tma_on, rng):
    """``setmaxnreg`` divides the registers the kernel is launched with; a cap would break that."""
    (q, k, v), o, strides = _attention_args(rng, 1, 2, 256, 128)
    compiled = block_attention.warmup(q, k, v, o, 0.125, *strides, 2, 256, HEAD_DIM=128, BLOCK_M=128, BLOCK_N=128,
                                      CAUSAL=True, num_warps=8, num_stages=2, maxnreg=160, backend="cuda",
                                      grid=(1,))
    assert compiled.threads == 256 and "setmaxnreg" not in compiled.asm["ptx"]


def test_switched_off_or_without_ptxas_thread_0_issues(tma_on, rng, monkeypatch):
    monkeypatch.setenv("TILES_PRODUCER", "0")
    compiled = _attention(rng, 128, 128, 2)
    assert compiled.threads == 256 and "setmaxnreg" not in compiled.asm["ptx"]
    monkeypatch.delenv("TILES_PRODUCER")
    monkeypatch.setattr(toolchain, "ptxas_path", lambda: None)
    compiled = _attention(rng, 128, 64, 2)  # (a specialization no other test compiles)
    assert compiled.threads == 256 and "cp.async.bulk.tensor" in compiled.asm["ptx"]


@pytest.mark.parametrize("causal,stages", [(False, 2), (True, 3)])
def test_attention_with_a_producer_simulated(tma_on, rng, causal, stages):
    """The simulator lands each stage fill as soon as the producer could issue it (after the
    consumers released the stage), so a stage released early is overwritten under its MMAs."""
    from tiles.backends.cuda.simulator.tma import run
    z, h, n_ctx, d = 1, 1, 384, 64
    (q, k, v), o, strides = _attention_args(rng, z, h, n_ctx, d)
    args = (q, k, v, o, 0.125, *strides, h, n_ctx)
    c = block_attention.warmup(*args, HEAD_DIM=d, BLOCK_M=128, BLOCK_N=64, CAUSAL=causal, num_warps=8,
                               num_stages=stages, backend="cuda", grid=(1,))
    sims = run(c.ir, _sim_args(c, args), (n_ctx // 128, z * h), 256, num_stages=stages)
    assert all(s.joins[0] == 1 and s.arrivals for s in sims)  # the producer fed the loop
    want = _attention_reference(*(_heads(x, z, h, n_ctx, d) for x in (q, k, v)), 0.125, causal)
    np.testing.assert_allclose(_heads(o, z, h, n_ctx, d), want, atol=3e-3, rtol=1e-2)


def test_matmul_with_a_producer_simulated(tma_on, rng):
    """One product kept in flight: the consumers release a stage one iteration late."""
    from tiles.backends.cuda.simulator.tma import run
    m, n, k = 130, 136, 328
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    args = (a, b, c, m, n, k, k, n, n)
    compiled = wide_matmul.warmup(*args, BM=128, BN=128, BK=64, num_warps=8, num_stages=3, backend="cuda",
                                  grid=(1,))
    values = [x if isinstance(x, np.ndarray) else np.int32(x)
              for x in (dict(zip(wide_matmul.arg_names, args))[p.name] for p in compiled.ir.params)]
    sims = run(compiled.ir, values, (2, 2), 256, num_stages=3)
    assert all(s.joins[0] == 1 and s.arrivals for s in sims)
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), atol=0.1,
                               rtol=1e-2)


@needs_gpu
@pytest.mark.parametrize("bn,stages", [(128, 2), (64, 3), (128, 3)])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_with_a_producer_matches_torch(tma_on, monkeypatch, bn, stages, causal):
    """Many steps per program (n_ctx 1024: up to 16 with two and three stages, each stage
    reused several times), and causal programs with two loops one after the other."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    z, h, n_ctx, d = 2, 3, 1024, 128
    gen = torch.Generator(device="cuda").manual_seed(5 + bn + stages)
    q, k, v = (torch.randn((z, h, n_ctx, d), device="cuda", generator=gen).half() for _ in range(3))
    o = torch.full_like(q, float("nan"))
    args = (q, k, v, o, 0.0883, *q.stride(), h, n_ctx)
    meta = dict(HEAD_DIM=d, BLOCK_M=128, BLOCK_N=bn, CAUSAL=causal, num_warps=8, num_stages=stages,
                backend="cuda")
    block_attention[(n_ctx // 128, z * h)](*args, **meta)
    assert block_attention.warmup(*args, **meta, grid=(1,)).threads == 384
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=0.0883,
                                                            is_causal=causal)
    torch.testing.assert_close(o.float(), want, atol=2e-2, rtol=2e-2)


@needs_gpu
def test_matmul_with_a_producer_matches_torch(tma_on, monkeypatch):
    """A single product kept in flight across iterations: the consumers release the previous
    iteration's stage.  Odd sizes: TMA zero-fills the edges, the store is masked."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    m, n, k = 515, 777, 1000
    gen = torch.Generator(device="cuda").manual_seed(9)
    a, b = (torch.randn(s, device="cuda", generator=gen).half() for s in ((m, k), (k, n + 7)))
    b = b[:, :n]
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    grid = (-(-m // 128), -(-n // 256))
    args = (a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0))
    meta = dict(BM=128, BN=256, BK=64, num_warps=8, num_stages=3, backend="cuda")
    wide_matmul[grid](*args, **meta)
    print("threads", wide_matmul.warmup(*args, **meta, grid=grid).threads)
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.2, rtol=2e-2)
    assert not np.isnan(c.cpu().float().numpy()).any()
