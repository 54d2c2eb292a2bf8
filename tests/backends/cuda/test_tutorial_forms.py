"""Matmul as Triton's tutorial writes it (pointer tiles advanced in the loop, rows and columns
wrapped with ``%``, K masks, grouped program order) takes the wgmma + cp.async path: PTX for
sm_90a, the numpy simulator everywhere, numerics on a GPU."""

import re

import numpy as np
import pytest
from test_tensorcore import GPU, _rel, needs_gpu

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel

rng = np.random.default_rng(13)


@tiles.jit
def tutorial_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, WRAP: tl.constexpr, KMASK: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if WRAP:
        offs_am = offs_am % M
        offs_bn = offs_bn % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if KMASK:
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        else:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(tl.float16)
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def _args(m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.full((m, n), np.nan, np.float16)
    return a, b, c, (a, b, c, m, n, k, k, 1, n, 1, n, 1)


def _grid(m, n, bm, bn):
    return (tiles.cdiv(m, bm) * tiles.cdiv(n, bn),)


FORMS = [(False, False), (True, False), (False, True), (True, True)]
# the running offset's advance: an inline add.s64 of two 64-bit registers (running.py)
RUNNING_ADD = re.compile(r"add\.s64\s+%rd\d+, %rd\d+, %rd\d+;\s*\n\s*// end inline asm")


def _ptx(ir, warps, stages):
    return toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(warps, stages)), "sm_90a")


def _simulate(kernel, ir, args, grid, warps, stages):
    """Run ``ir`` on the simulator with ``kernel``'s arguments ``args`` (ints as int32)."""
    from tiles.backends.cuda.simulator.simt import run
    by_name = dict(zip(kernel.arg_names, args))
    run(ir, [by_name[p.name] if isinstance(by_name[p.name], np.ndarray) else np.int32(by_name[p.name])
             for p in ir.params], grid, warps * 32, num_stages=stages)


@pytest.mark.parametrize("wrap,kmask", FORMS)
def test_tutorial_form_pipelines_on_wgmma(wrap, kmask):
    *_, args = _args(256, 256, 256)
    ir = tutorial_matmul.warmup(*args, backend="cuda", BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8,
                                WRAP=wrap, KMASK=kmask, num_warps=8, num_stages=3).ir
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(8, 3)), "sm_90a")
    assert "wgmma.mma_async" in ptx
    assert "cp.async.cg.shared.global" in ptx, "the loop's loads were not pipelined"
    assert "ld.global" not in ptx, "every operand load should go through cp.async stages"
    if toolchain.ptxas_path():
        assert toolchain.ptxas_info(ptx, "sm_90a").get("spill_stores", 0) == 0


@pytest.mark.parametrize("wrap,kmask", FORMS)
def test_copies_advance_a_running_offset(wrap, kmask):
    """Pointer tiles advanced by ``+= BLOCK_K * stride`` become a 64-bit byte offset carried by the
    loop (an inline add per feed) instead of ``base + k * stride`` recomputed per copy, which
    ptxas assembles as one IMAD.WIDE per copy (8 % slower on the H200, running.py)."""
    from tiles.backends.cuda.ptx_loops import mma_loop
    *_, args = _args(256, 256, 256)
    ir = tutorial_matmul.warmup(*args, backend="cuda", BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8,
                                WRAP=wrap, KMASK=kmask, num_warps=8, num_stages=3).ir
    loop = mma_loop(_ptx(ir, 8, 3))
    assert loop.count("cp.async.cg.shared.global") == 12
    assert "mul.wide" not in loop, "a copy address is recomputed from the trip count"
    assert len(RUNNING_ADD.findall(loop)) == 2


@tiles.jit
def wrapped_k_matmul(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_K: tl.constexpr):
    """K offsets wrapped with ``%`` every step: the addresses are not affine in the iteration."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        offs_k = (k * BLOCK_K + 2 * BLOCK_K + tl.arange(0, BLOCK_K)) % K
        a = tl.load(a_ptr + offs_m[:, None] * K + offs_k[None, :])
        b = tl.load(b_ptr + offs_k[:, None] * N + offs_n[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16))


def test_wrapped_offsets_keep_per_iteration_addresses():
    """A rotated K walk (``% K``) still pipelines, computing each copy's address every iteration
    (no running offset), and sums the same products: simulated against numpy."""

    from tiles.backends.cuda.ptx_loops import mma_loop
    m, n, k, bm, bn, bk, warps, stages = 64, 64, 128, 64, 64, 32, 4, 3
    a, b, c, _ = _args(m, n, k)
    ir = wrapped_k_matmul.warmup(a, b, c, m, n, k, backend="cuda", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                 num_warps=warps, num_stages=stages).ir
    loop = mma_loop(_ptx(ir, warps, stages))
    assert "cp.async.cg.shared.global" in loop
    assert not RUNNING_ADD.search(loop)
    _simulate(wrapped_k_matmul, ir, (a, b, c, m, n, k), (1, 1), warps, stages)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 2e-3


@tiles.jit
def stepped_matmul(a_ptr, b_ptr, c_ptr, M, N, K, START, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   BLOCK_K: tl.constexpr, ADVANCE: tl.constexpr):
    """The K walk as ``range(START * BLOCK_K, K, BLOCK_K)`` with ``k + offs_k`` offsets, or
    (``ADVANCE``) as pointer tiles advanced from START's block on a loop with a non-zero start."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if ADVANCE:
        a_ptrs = a_ptr + offs_m[:, None] * K + (START * BLOCK_K + offs_k)[None, :]
        b_ptrs = b_ptr + (START * BLOCK_K + offs_k)[:, None] * N + offs_n[None, :]
        for _ in range(START, tl.cdiv(K, BLOCK_K)):
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K * N
    else:
        for k in range(START * BLOCK_K, K, BLOCK_K):
            a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
            b = tl.load(b_ptr + (k + offs_k)[:, None] * N + offs_n[None, :])
            acc += tl.dot(a, b)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.float16))


@pytest.mark.parametrize("advance", [False, True])
def test_stepped_and_offset_loops_advance_a_running_offset(advance):
    """Loops that start past 0 or step by BLOCK_K take running offsets too (the trip count is
    ``(iv - lb) // step``), and sum the right blocks: simulated against numpy."""

    from tiles.backends.cuda.ptx_loops import mma_loop
    m, n, k, start, bm, bn, bk, warps, stages = 64, 64, 160, 1, 64, 64, 32, 4, 3
    a, b, c, _ = _args(m, n, k)
    ir = stepped_matmul.warmup(a, b, c, m, n, k, start, backend="cuda", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                               ADVANCE=advance, num_warps=warps, num_stages=stages).ir
    loop = mma_loop(_ptx(ir, warps, stages))
    assert "mul.wide" not in loop
    assert len(RUNNING_ADD.findall(loop)) == 2
    _simulate(stepped_matmul, ir, (a, b, c, m, n, k, start), (1, 1), warps, stages)
    lo = start * bk
    assert _rel(c, a[:, lo:].astype(np.float32) @ b[lo:].astype(np.float32)) < 2e-3


def test_wide_tile_issues_the_widest_wgmma():
    """A 128x256 tile on two warpgroups: each takes 64 rows and all 256 columns, so every k-step
    is one m64n256k16 per warpgroup (A read from shared memory once), as on Triton."""
    *_, args = _args(256, 256, 256)
    ir = tutorial_matmul.warmup(*args, backend="cuda", BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8,
                                WRAP=False, KMASK=False, num_warps=8, num_stages=4).ir
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(8, 4)), "sm_90a")
    shapes = {line.split("wgmma.mma_async.sync.aligned.")[1].split(".")[0]
              for line in ptx.splitlines() if "wgmma.mma_async" in line}
    assert shapes == {"m64n256k16"}, shapes


@pytest.mark.parametrize("wrap,kmask", FORMS)
@pytest.mark.parametrize("m,n,k", [(128, 128, 96), (192, 64, 80)])
def test_tutorial_form_simulated(wrap, kmask, m, n, k):
    from tiles.backends.cuda.simulator.simt import run
    if k % 32 and not kmask:
        k = 96  # without K masks the tutorial needs K to be a multiple of BLOCK_K
    a, b, c, args = _args(m, n, k)
    bm, bn, bk, warps, stages = 64, 64, 32, 4, 3
    ir = tutorial_matmul.warmup(*args, backend="cuda", BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=2,
                                WRAP=wrap, KMASK=kmask, num_warps=warps, num_stages=stages).ir
    by_name = dict(zip(tutorial_matmul.arg_names, args))
    values = [by_name[p.name] for p in ir.params]  # ints equal to 1 were specialized away
    run(ir, [x if isinstance(x, np.ndarray) else np.int32(x) for x in values], _grid(m, n, bm, bn),
        warps * 32, num_stages=stages)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 2e-3



@tiles.jit
def persistent_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn, PROGRAMS: tl.constexpr, BLOCK_M: tl.constexpr,
                      BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, WRAP: tl.constexpr):
    # each program walks output tiles PROGRAMS apart, in grouped order, K masked
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    for tile_id in range(tl.program_id(0), num_pid_m * num_pid_n, PROGRAMS):
        first_pid_m = (tile_id // num_pid_in_group) * GROUP_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
        pid_m = first_pid_m + (tile_id % group_size_m)
        pid_n = (tile_id % num_pid_in_group) // group_size_m
        offs_am = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_bn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        if WRAP:
            offs_am = offs_am % M
            offs_bn = offs_bn % N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
        b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - ki * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - ki * BLOCK_K, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        tl.store(c_ptrs, acc.to(tl.float16), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def test_persistent_form_pipelines_like_the_tutorial():
    """The inner loop of a persistent matmul (an outer loop over tiles) is the tutorial's: stages
    of predicated cp.async copies S-1 ahead, one m64n256 group kept in flight, nothing selected."""
    from tiles.backends.cuda.ptx_loops import loop_events, mma_loop
    *_, args = _args(512, 512, 512)
    ir = persistent_matmul.warmup(*args, backend="cuda", PROGRAMS=132, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64,
                                  GROUP_M=8, WRAP=False, num_warps=8, num_stages=3).ir
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(8, 3)), "sm_90a")
    loop = mma_loop(ptx)
    assert loop_events(loop) == ["cp.async.wait_group 1", "fence.proxy.async", "bar.sync", "wgmma.mma_async",
                                 "wgmma.commit_group",
                                 "wgmma.wait_group.sync.aligned 1", "bar.sync", "cp.async", "cp.async.commit_group"]
    assert not re.search(r"selp\.b32\s+%r\d+, 16, 0", loop), "a mask selected a copy size"
    assert "ld.global" not in ptx
    if toolchain.ptxas_path():
        assert toolchain.ptxas_info(ptx, "sm_90a").get("spill_stores", 0) == 0


@pytest.mark.parametrize("wrap", [False, True])
def test_persistent_form_simulated(wrap):
    """Odd sizes: 4 x 3 tiles of 64 x 64 over 5 programs (two or three tiles each), K = 200 ends in
    a partly masked step; each tile restarts the stages and its accumulator."""
    m, n, k = 200, 136, 200
    a, b, c, args = _args(m, n, k)
    if not wrap:  # edge tiles read past the last row/column: pad the operands
        a = np.pad(a, ((0, -m % 64), (0, 0)))
        b = np.pad(b, ((0, 0), (0, -n % 64)))
        args = (a, b, c, m, n, k, k, 1, b.shape[1], 1, n, 1)
    programs, bm, bn, bk, warps, stages = 5, 64, 64, 32, 4, 3
    ir = persistent_matmul.warmup(*args, backend="cuda", PROGRAMS=programs, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                  GROUP_M=2, WRAP=wrap, num_warps=warps, num_stages=stages).ir
    _simulate(persistent_matmul, ir, args, (programs,), warps, stages)
    assert _rel(c, a[:m].astype(np.float32) @ b[:, :n].astype(np.float32)) < 2e-3


@needs_gpu
@pytest.mark.parametrize("stages", [3, 4])
@pytest.mark.parametrize("m,n,k", [(1024, 1024, 1024), (300, 520, 712)])
def test_persistent_form_on_gpu(stages, m, n, k):
    """The benchmark's configuration (128x256x64 on 8 warps), wraps and K masks, fewer programs than
    tiles: the stages and the kept MMA group restart at every tile."""
    assert GPU
    a, b, c, args = _args(m, n, k)
    persistent_matmul[(3,)](*args, PROGRAMS=3, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, WRAP=True,
                            num_warps=8, num_stages=stages, backend="cuda")
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 2e-3

@pytest.mark.parametrize("stages", [pytest.param(2, marks=pytest.mark.slow), 3,
                                    pytest.param(4, marks=pytest.mark.slow)])
def test_benchmark_config_simulated(stages):
    """The configuration the benchmark's best runs use, 128x256x64 on 8 warps: two warpgroups
    along M, one m64n256k16 each, copies S-1 stages ahead behind the kept MMA group; K = 200
    leaves a partly masked last step and more iterations than stages."""
    from tiles.backends.cuda.simulator.simt import run
    m, n, k = 128, 256, 200
    a, b, c, args = _args(m, n, k)
    ir = tutorial_matmul.warmup(*args, backend="cuda", BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8,
                                WRAP=True, KMASK=True, num_warps=8, num_stages=stages).ir
    by_name = dict(zip(tutorial_matmul.arg_names, args))
    run(ir, [by_name[p.name] if isinstance(by_name[p.name], np.ndarray) else np.int32(by_name[p.name])
             for p in ir.params], (1,), 256, num_stages=stages)
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 2e-3


@needs_gpu
@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("m,n,k", [(512, 768, 1024), (300, 520, 712)])
def test_benchmark_config_on_gpu(stages, m, n, k):
    """128x256x64 on 8 warps (two warpgroups of m64n256k16), wraps and K masks, on the device:
    the second barrier of each iteration is what keeps one warpgroup's copies off the stage the
    other warpgroup's MMAs may still read, which the lock-step simulator cannot show."""
    assert GPU
    a, b, c, args = _args(m, n, k)
    tutorial_matmul[_grid(m, n, 128, 256)](*args, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8,
                                           WRAP=True, KMASK=True, num_warps=8, num_stages=stages,
                                           backend="cuda")
    assert _rel(c, a.astype(np.float32) @ b.astype(np.float32)) < 2e-3


@needs_gpu
@pytest.mark.parametrize("wrap,kmask", FORMS)
@pytest.mark.parametrize("m,n,k", [(512, 512, 512), (300, 260, 200)])
def test_tutorial_form_on_gpu(wrap, kmask, m, n, k):
    assert GPU
    if k % 64 and not kmask:
        k = 256
    a, b, c, args = _args(m, n, k)
    if not wrap:  # edge tiles read past the last row/column: pad the operands
        a = np.pad(a, ((0, -m % 128), (0, 0)))
        b = np.pad(b, ((0, 0), (0, -n % 128)))
        args = (a, b, c, m, n, k, k, 1, b.shape[1], 1, n, 1)
    tutorial_matmul[_grid(m, n, 128, 128)](*args, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8,
                                           WRAP=wrap, KMASK=kmask, num_warps=8, num_stages=3,
                                           backend="cuda")
    want = a[:m].astype(np.float32) @ b[:, :n].astype(np.float32)
    assert _rel(c, want) < 2e-3


def _attention_module():
    import importlib.util
    import tempfile
    from pathlib import Path
    bench = Path(__file__).parents[3] / "benchmarks"
    spec = importlib.util.spec_from_file_location("realworld_attention", bench / "realworld_attention.py")
    source = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(source)
    spec = importlib.util.spec_from_file_location("memory_bound", bench / "memory_bound.py")
    loader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loader)
    return loader.load_kernels("tiles", Path(tempfile.mkdtemp()), source.KERNELS, "tutorial_attention")


def _attention_case(n, d, causal):
    r = np.random.default_rng(21)
    q, k, v = (r.standard_normal((1, 2, n, d)).astype(np.float16) for _ in range(3))
    s = (q.astype(np.float32) @ k.astype(np.float32).transpose(0, 1, 3, 2)) / np.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    want = (p / p.sum(-1, keepdims=True)) @ v.astype(np.float32)
    o = np.full_like(q, np.nan)
    m = np.zeros((1, 2, n), np.float32)

    def strides(x):
        return tuple(st // x.itemsize for st in x.strides)
    args = (q, k, v, float(1 / np.sqrt(d)), m, o, *strides(q), *strides(k), *strides(v), *strides(o), 1, 2, n)
    return args, o, want


@pytest.mark.parametrize("tma", [True, False])
@pytest.mark.parametrize("causal", [False, True])
def test_tutorial_attention_pipelines_k_as_rows(causal, tma):
    """K comes as a (HEAD_DIM, BLOCK_N) block pointer with order (0, 1): it is staged as the
    transpose of a row-read block, K and V through TMA stages (cuda/hopper/tma_rebase.py) or,
    without TMA, through cp.async stages (lowering/transpose_loads.py)."""
    mod = _attention_module()
    args, _, _ = _attention_case(256, 64, causal)
    ir = mod.attn_fwd.warmup(*args, backend="cuda", HEAD_DIM=64, BLOCK_M=128, BLOCK_N=64,
                             STAGE=3 if causal else 1, num_warps=8, num_stages=3).ir
    options = Options(8, 3) if tma else Options(8, 3).without("tma")
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), options), "sm_90a")
    copies = "cp.async.bulk.tensor.2d" if tma else "cp.async.cg.shared.global"
    assert "wgmma.mma_async" in ptx and copies in ptx
    assert ("cp.async.cg.shared.global" in ptx) != tma


@pytest.mark.parametrize("causal", [False, True])
def test_tutorial_attention_simulated(causal):
    from tiles.backends.cuda.simulator.simt import run
    mod = _attention_module()
    n, d, bm, bn, warps, stages = 128, 64, 64, 64, 4, 3
    args, o, want = _attention_case(n, d, causal)
    meta = dict(HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, STAGE=3 if causal else 1)
    ir = mod.attn_fwd.warmup(*args, backend="cuda", **meta, num_warps=warps, num_stages=stages).ir
    by_name = dict(zip(mod.attn_fwd.arg_names, args))
    values = [by_name[p.name] for p in ir.params]
    run(ir, [x if isinstance(x, np.ndarray) else (np.float32(x) if isinstance(x, float) else np.int32(x))
             for x in values], (n // bm, 2), warps * 32, num_stages=stages)
    assert _rel(o, want) < 2e-3


@needs_gpu
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d,bm,bn,warps", [(64, 128, 64, 8), (128, 128, 64, 8), (64, 64, 32, 4)])
def test_tutorial_attention_on_gpu(causal, d, bm, bn, warps):
    mod = _attention_module()
    args, o, want = _attention_case(512, d, causal)
    mod.attn_fwd[(512 // bm, 2)](*args, HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, STAGE=3 if causal else 1,
                                 num_warps=warps, num_stages=3, backend="cuda")
    assert _rel(o, want) < 2e-3
