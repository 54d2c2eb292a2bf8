"""Persistent programs (``cuda/hopper/persistent.py``): a kernel with a producer warpgroup launched
with fewer programs than its grid, each running several of the kernel's programs with the stage
ring carried from one to the next.  Simulated (the ring's slots and parities across programs,
programs of one and of several loops) and, on a GPU, against torch."""

from __future__ import annotations

import numpy as np
import pytest
from test_tma_block_ptr import _attention_args, _attention_reference, _heads, _sim_args, block_attention
from test_tma_producer import _attention, needs_gpu, needs_ptxas, wide_matmul

import tiles
import tiles.language as tl


@tiles.jit
def desc_attention(Q, K, V, Out, sm_scale, Z, H, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr):
    """Attention in the form of Triton's Hopper tutorial: Q, K, V and Out through tensor descriptors."""
    start_m = tl.program_id(0)
    first_row = tl.program_id(1) * N_CTX
    rows = Z * H * N_CTX
    q_desc = tl.make_tensor_descriptor(Q, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(Out, [rows, HEAD_DIM], [HEAD_DIM, 1], [BLOCK_M, HEAD_DIM])
    q = q_desc.load([first_row + start_m * BLOCK_M, 0])
    scale = sm_scale * 1.44269504
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start_n in tl.range(0, N_CTX, BLOCK_N):
        s = tl.dot(q, k_desc.load([first_row + start_n, 0]).T)
        m_new = tl.maximum(m_i, tl.max(s, 1) * scale)
        p = tl.math.exp2(s * scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), v_desc.load([first_row + start_n, 0]), acc * alpha[:, None])
        m_i = m_new
    o_desc.store([first_row + start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(tl.float16))


def _count_single_loads(monkeypatch) -> list[object]:
    """Each load the consumers take from a producer's buffer, as the walk lowers it."""
    from tiles.backends.cuda.hopper import persistent
    seen: list[object] = []
    real = persistent.load_single

    def spy(lw, instr):
        seen.append(instr)
        return real(lw, instr)
    monkeypatch.setattr(persistent, "load_single", spy)
    return seen


def _desc_run(rng, programs, stages=2, z=1, h=2, n_ctx=384, d=64):
    from tiles.backends.cuda.simulator.tma import run
    q, k, v = (rng.standard_normal((z, h, n_ctx, d)).astype(np.float16) for _ in range(3))
    o = np.full_like(q, np.nan)
    args = (q, k, v, o, 0.125, z, h, n_ctx)
    c = desc_attention.warmup(*args, HEAD_DIM=d, BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=stages,
                              backend="cuda", grid=(1,))
    by_name = dict(zip(desc_attention.arg_names, args))
    values = [x if isinstance(x, np.ndarray) else np.float32(x) if isinstance(x, float) else np.int32(x)
              for x in (by_name[p.name] for p in c.ir.params)]
    sims = run(c.ir, values, (n_ctx // 128, z * h), 256, num_stages=stages, programs=programs)
    want = _attention_reference(*(x.astype(np.float32) for x in (q, k, v)), 0.125, False)
    return sims, o.astype(np.float32), want


@pytest.mark.parametrize("stages,programs", [(2, 4), (3, 1), (3, 5)])
def test_attention_programs_simulated(tma_on, rng, monkeypatch, stages, programs):
    """Six programs (three row blocks, two heads) on fewer launched ones: each launched program
    runs one, two or all six, its ring's parity flipping at different points of each; Q's block
    pointer (its base ``Q + off``) rebased for the producer to copy."""
    from tiles.backends.cuda.simulator.tma import run
    singles = _count_single_loads(monkeypatch)
    z, h, n_ctx, d = 1, 2, 384, 64
    (q, k, v), o, strides = _attention_args(rng, z, h, n_ctx, d)
    o[:] = np.nan
    args = (q, k, v, o, 0.125, *strides, h, n_ctx)
    c = block_attention.warmup(*args, HEAD_DIM=d, BLOCK_M=128, BLOCK_N=64, CAUSAL=False, num_warps=8,
                               num_stages=stages, backend="cuda", grid=(1,))
    sims = run(c.ir, _sim_args(c, args), (n_ctx // 128, z * h), 256, num_stages=stages, programs=programs)
    assert len(sims) == programs and all(s.joins[0] == 1 and s.arrivals for s in sims) and singles
    want = _attention_reference(*(_heads(x, z, h, n_ctx, d) for x in (q, k, v)), 0.125, False)
    np.testing.assert_allclose(_heads(o, z, h, n_ctx, d), want, atol=3e-3, rtol=1e-2)


@pytest.mark.parametrize("stages,programs,h,n_ctx", [(2, 1, 2, 384), (3, 4, 2, 384), (2, 1, 3, 128)])
def test_descriptor_attention_programs_simulated(tma_on, rng, monkeypatch, stages, programs, h, n_ctx):
    """The producer copies Q too, into its own buffer, once the consumers have read the previous
    program's; six (three) programs on fewer launched ones."""
    singles = _count_single_loads(monkeypatch)
    sims, got, want = _desc_run(rng, programs, stages, h=h, n_ctx=n_ctx)
    assert len(sims) == programs and all(s.joins[0] == 1 for s in sims) and singles
    np.testing.assert_allclose(got, want, atol=3e-3, rtol=1e-2)


def test_q_released_before_it_is_read_is_caught(tma_on, rng, monkeypatch):
    """Mutation: the consumers release Q's buffer before reading it.  With loops as short as the
    ring (two steps, two stages) the producer is past a program's K and V copies at once, so the
    next program's Q lands under the reads and the results are wrong."""
    from tiles.backends.cuda.hopper import persistent
    real = persistent.load_single

    def early(lw, instr):
        single = lw.tc.persistent.singles[instr]
        lw.e.mbarrier_wait(single.full, lw.tc.persistent.phase)
        lw.e.mbarrier_arrive(single.empty)
        arrive, lw.e.mbarrier_arrive = lw.e.mbarrier_arrive, lambda *a, **k: None
        try:
            wait, lw.e.mbarrier_wait = lw.e.mbarrier_wait, lambda *a, **k: None
            try:
                return real(lw, instr)
            finally:
                lw.e.mbarrier_wait = wait
        finally:
            lw.e.mbarrier_arrive = arrive
    monkeypatch.setattr(persistent, "load_single", early)
    _sims, got, want = _desc_run(rng, 1, h=3, n_ctx=128)
    assert not np.allclose(got, want, atol=3e-3, rtol=1e-2)


@pytest.mark.parametrize("programs", [1, 3])
def test_matmul_programs_simulated(tma_on, rng, programs):
    """A product kept in flight: the stage the last iteration read goes back after the loop, so
    the next program's first fill can take it."""
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
    sims = run(compiled.ir, values, (2, 2), 256, num_stages=3, programs=programs)
    assert len(sims) == programs
    np.testing.assert_allclose(c.astype(np.float32), a.astype(np.float32) @ b.astype(np.float32), atol=0.1,
                               rtol=1e-2)


def test_matmul_programs_without_the_last_release_hang(tma_on, rng, monkeypatch):
    """Mutation: without the release after the loop, the next program's fill of that stage waits
    for a phase no one completes (the simulator says so)."""
    from tiles.backends.cuda.hopper import tma_pipeline
    from tiles.backends.cuda.simulator.tma import run
    m = n = k = 128
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), np.float16)
    args = (a, b, c, m, n, k, k, n, n)
    compiled = wide_matmul.warmup(*args, BM=128, BN=128, BK=64, num_warps=8, num_stages=3, backend="cuda",
                                  grid=(1,))
    values = [x if isinstance(x, np.ndarray) else np.int32(x)
              for x in (dict(zip(wide_matmul.arg_names, args))[p.name] for p in compiled.ir.params)]
    monkeypatch.setattr(tma_pipeline, "release_last", lambda *args: None)
    with pytest.raises(AssertionError):
        run(compiled.ir, values, (1, 3), 256, num_stages=3, programs=1)


@needs_ptxas
def test_which_kernels_take_persistent_programs(tma_on, rng, monkeypatch):
    plain = _attention(rng, 128, 128, 2)
    assert plain.persistent and plain.shared > 200 * 1024  # the ring sits at the top
    assert {m["base"] for m in plain.tensor_maps} == {0, 1, 2}  # Q (the producer's), K, V
    causal = _attention(rng, 128, 128, 2, causal=True)  # programs of different lengths
    assert causal.threads == 384 and not causal.persistent
    assert {m["base"] for m in causal.tensor_maps} == {1, 2}  # Q prepared again as pointer loads
    monkeypatch.setenv("TILES_PERSISTENT", "0")
    off = _attention(rng, 128, 32, 2)  # (a specialization no other test compiles)
    assert off.threads == 384 and not off.persistent


@needs_gpu
@pytest.mark.parametrize("shape", [(1, 3, 1024), (2, 150, 256)])
def test_persistent_attention_matches_torch(tma_on, monkeypatch, shape):
    """Fewer programs than SMs, and more (300 heads x 2 row blocks on at most one per SM)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    z, h, n_ctx = shape
    d = 128
    q, k, v = (torch.randn((z, h, n_ctx, d), device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    strides = q.stride()
    grid = (n_ctx // 128, z * h)
    meta = dict(HEAD_DIM=d, BLOCK_M=128, BLOCK_N=128, CAUSAL=False, num_warps=8, num_stages=2, backend="cuda")
    assert block_attention.warmup(q, k, v, o, 0.125, *strides, h, n_ctx, grid=grid, **meta).persistent
    block_attention[grid](q, k, v, o, 0.125, *strides, h, n_ctx, **meta)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.125)
    torch.testing.assert_close(o, want, atol=3e-3, rtol=1e-2)


@needs_gpu
@pytest.mark.parametrize("bn,stages", [(128, 2), (64, 3)])
@pytest.mark.parametrize("shape", [(1, 3, 1024), (2, 150, 256)])
def test_persistent_descriptor_attention_matches_torch(tma_on, monkeypatch, shape, bn, stages):
    """The producer copies Q, K and V for programs in turn (Q's buffer reused by each)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_CUDA_ARCH", "")
    z, h, n_ctx = shape
    q, k, v = (torch.randn((z, h, n_ctx, 128), device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.full_like(q, float("nan"))
    grid = (n_ctx // 128, z * h)
    meta = dict(HEAD_DIM=128, BLOCK_M=128, BLOCK_N=bn, num_warps=8, num_stages=stages, backend="cuda")
    assert desc_attention.warmup(q, k, v, o, 0.125, z, h, n_ctx, grid=grid, **meta).persistent
    desc_attention[grid](q, k, v, o, 0.125, z, h, n_ctx, **meta)
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.125)
    torch.testing.assert_close(o, want, atol=3e-3, rtol=1e-2)


@tiles.jit
def marked_matmul(a_ptr, b_ptr, c_ptr, flags_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """``wide_matmul`` that first stores a flag per program: a store before the pipelined loop."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    tl.store(flags_ptr + pid_m * tl.num_programs(1) + pid_n, 1)
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [stride_am, 1], [BM, BK])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [stride_bk, 1], [BK, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc += tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([k * BK, pid_n * BN]))
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :], acc.to(tl.float16),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def test_a_store_before_the_loop_keeps_one_program_per_launch(tma_on):
    """The producer copies as soon as a stage is free: with persistent programs it would run
    ahead of the program's own earlier stores, so such kernels keep one program per launch."""
    from tiles.backends.base import Options, Target
    from tiles.backends.cuda import nvptx_target
    from tiles.backends.cuda.choices import lower_module
    caps = Target("cuda", arch="sm_90a", shared_memory=227 * 1024)
    sig = {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp16:16", "flags_ptr": "*i32:16", "M": "i32",
           "N": "i32", "K": "i32", "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}
    for kernel, persistent in ((wide_matmul, True), (marked_matmul, False)):
        names = [n for n in kernel.arg_names if n in sig]
        ir = kernel.compile({n: sig[n] for n in names}, dict(BM=128, BN=128, BK=64), backend="cuda", num_warps=8,
                            num_stages=3).ir
        lowered = lower_module(ir, nvptx_target("sm_90a"), Options(8, 3), caps)
        assert "producer" in lowered.variants and ("persistent" in lowered.variants) == persistent
