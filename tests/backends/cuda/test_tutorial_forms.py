"""Matmul as Triton's tutorial writes it (pointer tiles advanced in the loop, rows and columns
wrapped with ``%``, K masks, grouped program order) takes the wgmma + cp.async path: PTX for
sm_90a, the numpy simulator everywhere, numerics on a GPU."""

import numpy as np
import pytest
from test_tensorcore import GPU, _rel, needs_gpu

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.llvm.emit import lower_kernel

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
@pytest.mark.parametrize("m,n,k", [(128, 128, 96), (192, 64, 80)])
def test_tutorial_form_simulated(wrap, kmask, m, n, k):
    from sim_emitter import run
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
