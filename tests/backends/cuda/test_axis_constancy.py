"""Values equal over a thread's rows computed once (axis facts along every axis, lowering/axisinfo.py):
``rows = pid * BLOCK_M + arange(BLOCK_M)[:, None]`` compared with an ``M`` specialized divisible by 16
is one predicate a thread, and counts built from it one value.  A wrong constancy fact is a silent
wrong answer, so the kernels run on the numpy SIMT simulator (the lowering's own code, per thread)
against NumPy, with M and N that are and are not multiples of the blocks."""

import sys
from pathlib import Path

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.cuda.simulator.simt import run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "compat"))


@tiles.jit
def row_counts(X, Out, Cnt, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    row_mask = rows < M
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    cnt = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.int32)
    for off in range(0, N, BLOCK_N):
        cols = off + tl.arange(0, BLOCK_N)[None, :]
        mask = row_mask & (cols < N)
        x = tl.load(X + rows * N + cols, mask, other=0.0)
        cnt = cnt + mask
        acc += x / tl.maximum(cnt, 1).to(tl.float32)
    tl.store(Out + rows * BLOCK_N + tl.arange(0, BLOCK_N)[None, :], acc, row_mask)
    tl.store(Cnt + rows * BLOCK_N + tl.arange(0, BLOCK_N)[None, :], cnt, row_mask)


def _row_counts_ref(x, bm, bn):
    M, N = x.shape
    rows = -(-M // bm) * bm
    acc = np.zeros((rows, bn), np.float64)
    cnt = np.zeros((rows, bn), np.int64)
    for off in range(0, N, bn):
        cols = off + np.arange(bn)
        ok = cols < N
        tile = np.zeros((M, bn))
        tile[:, ok] = x[:, cols[ok]]
        cnt[:M] += ok
        acc[:M] += tile / np.maximum(cnt[:M], 1)
    return acc[:M], cnt[:M]


@pytest.mark.parametrize("M, N, bm, bn, warps", [
    (32, 128, 4, 64, 1),   # M % 16 == 0: rows uniform over 4; two rounds a thread share them
    (10, 203, 4, 64, 1),   # M not a multiple of BLOCK_M: the last program's rows differ
    (20, 96, 4, 32, 1),    # M a multiple of BLOCK_M, not of 16 (no specialization)
    (48, 100, 32, 16, 2),  # BLOCK_M 32 > 16: rows uniform over 16 only
    (40, 64, 8, 64, 4),    # more threads than chunks: copies
    (64, 1000, 4, 256, 2),
])
def test_row_counts_on_the_simulator(rng, M, N, bm, bn, warps):
    x = rng.standard_normal((M, N)).astype(np.float32)
    out, cnt = np.full((M, bn), np.nan, np.float32), np.full((M, bn), -1, np.int32)
    args = [x, out, cnt, np.int32(M), np.int32(N)]
    grid = (-(-M // bm),)
    ir = row_counts.warmup(*args, BLOCK_M=bm, BLOCK_N=bn, num_warps=warps, backend="cuda", grid=grid).ir
    run(ir, args, grid, warps * 32)
    want, want_cnt = _row_counts_ref(x, bm, bn)
    np.testing.assert_array_equal(cnt, want_cnt)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)


@tiles.jit
def masked_3d(X, Y, A, B, C, BA: tl.constexpr, BB: tl.constexpr, BC: tl.constexpr):
    a = tl.program_id(0) * BA + tl.arange(0, BA)[:, None, None]
    b = tl.arange(0, BB)[None, :, None]
    c = tl.arange(0, BC)[None, None, :]
    mask = (a < A) & (b < B) & (c < C)
    x = tl.load(X + (a * B + b) * C + c, mask=mask, other=-1.0)
    n = tl.sum(mask.to(tl.int32), axis=2)  # per (a, b): how many of the row's elements are in
    tl.store(Y + (a * B + b) * C + c, x * (n[:, :, None] + 1).to(tl.float32), mask=mask)


@tiles.jit
def transposed_mask(X, Y, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)[:, None]
    cols = tl.arange(0, BN)[None, :]
    ok = tl.trans((rows < M) & (cols < N))  # (BN, BM): what was constant along the rows is now along the last axis
    x = tl.load(X + tl.trans(rows) * N + tl.trans(cols), mask=ok, other=0.0)
    # every element stored, the masked-out ones too (Y is padded to whole blocks): a mask value
    # shared where it differs would show
    tl.store(Y + tl.trans(rows) * BN + tl.trans(cols), x + 2 * ok.to(tl.float32))


@pytest.mark.parametrize("A, B, C, ba, bb, bc, warps", [
    (32, 16, 64, 4, 16, 64, 2), (5, 16, 64, 4, 16, 64, 2), (8, 9, 33, 4, 16, 64, 1), (48, 4, 16, 8, 4, 16, 1),
    (20, 3, 5, 8, 4, 8, 4),
])
def test_3d_masks_on_the_simulator(rng, A, B, C, ba, bb, bc, warps):
    x = rng.standard_normal((A, B, C)).astype(np.float32)
    y = np.full((A, B, C), np.nan, np.float32)
    args = [x, y, np.int32(A), np.int32(B), np.int32(C)]
    grid = (-(-A // ba),)
    ir = masked_3d.warmup(*args, BA=ba, BB=bb, BC=bc, num_warps=warps, backend="cuda", grid=grid).ir
    run(ir, args, grid, warps * 32)
    np.testing.assert_allclose(y, x * (min(C, bc) + 1), rtol=1e-6)


@pytest.mark.parametrize("M, N, bm, bn, warps", [(64, 32, 16, 32, 1), (10, 32, 4, 32, 1), (48, 20, 32, 32, 2)])
def test_transposed_masks_on_the_simulator(rng, M, N, bm, bn, warps):
    x = rng.standard_normal((M, N)).astype(np.float32)
    grid = (-(-M // bm),)
    y = np.full((grid[0] * bm, bn), np.nan, np.float32)
    args = [x, y, np.int32(M), np.int32(N)]
    ir = transposed_mask.warmup(*args, BM=bm, BN=bn, num_warps=warps, backend="cuda", grid=grid).ir
    run(ir, args, grid, warps * 32)
    want = np.zeros_like(y)
    want[:M, :N] = x + 2
    np.testing.assert_allclose(y, want)


@pytest.mark.parametrize("M, N", [(16, 2048), (10, 203), (32, 1000), (7, 4096)])
def test_flaggems_var_mean_on_the_simulator(rng, M, N):
    from compat_harness import load
    kernel = load("flaggems/var_mean_welford").var_mean_welford_kernel
    x = (rng.standard_normal((M, N)) * 5 + 3).astype(np.float32)
    var, mean = np.full(M, np.nan, np.float32), np.full(M, np.nan, np.float32)
    args = [x, var, mean, np.int32(M), np.int32(N), 1]
    grid = (-(-M // 4),)
    ir = kernel.warmup(*args, BLOCK_M=4, BLOCK_N=1024, num_warps=8, backend="cuda", grid=grid).ir
    run(ir, args, grid, 8 * 32)
    np.testing.assert_allclose(mean, x.astype(np.float64).mean(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(var, x.astype(np.float64).var(1, ddof=1), rtol=1e-4, atol=1e-4)


def _var_mean_ptx(predicated):
    import re

    from compat_harness import load

    from tiles.backends import registry
    from tiles.backends.base import CodegenChoices, Options
    from tiles.backends.cuda import nvptx_target, toolchain
    from tiles.backends.cuda.choices import lower_chosen
    kernel = load("flaggems/var_mean_welford").var_mean_welford_kernel
    sig = {"X": "*fp32:16", "Var": "*fp32:16", "Mean": "*fp32:16", "M": "i32:16", "N": "i32:16", "correction": "i32"}
    ir = kernel.compile(sig, {"BLOCK_M": 4, "BLOCK_N": 1024}, backend="cuda", num_warps=8).ir
    options = Options(8, 3, fp_fusion=True, codegen=CodegenChoices(predicated=predicated))
    ptx = toolchain.to_ptx(lower_chosen(ir, nvptx_target("sm_90a"), options, registry.get("cuda").target()).code,
                           "sm_90a")
    return ptx, re.findall(r"(@%p\d+ )?ld\.global\.v4\.b32", ptx)


def test_var_mean_reads_its_rows_under_one_predicate():
    """At FlagGems' 4x1024 on 8 warps (M specialized divisible by 16) a thread's four rows are all in
    or all out: one predicate for its four 16-byte reads, one count and one divisor."""
    for predicated in ("all", "loads", "outside_loops", ""):
        ptx, loads = _var_mean_ptx(predicated)
        assert len(loads) == 4
        if predicated in ("all", "loads"):  # the reads are predicated either way
            assert loads[0] and len(set(loads)) == 1, loads
        else:  # branches around plain reads (by default: they are in the kernel's loop)
            assert not any(loads)
        loop_divisors = [line.split(",")[-1].strip(" ;") for line in ptx.splitlines() if "div.full.f32" in line][:16]
        assert len(set(loop_divisors)) == 1, loop_divisors


@pytest.mark.parametrize("M, N, K, bm, bn, bk, warps", [(37, 45, 96, 16, 16, 16, 2), (32, 48, 64, 16, 32, 16, 4),
                                                       (20, 33, 50, 16, 32, 16, 4)])
def test_split_k_gemm_rows_of_odd_length_on_the_simulator(rng, M, N, K, bm, bn, bk, warps):
    """FlagGems' split-K GEMM (SPLIT_K 1): B's rows are N elements apart, N = 45 or 33.  A divisibility
    claimed for ``rk[:, None] * stride_bk`` from ``rk``'s first element made them look 8-byte aligned:
    8-byte cp.async at odd addresses, which the simulator refuses as the GPU would."""
    from compat_harness import load
    kernel = load("flaggems/mm_split_k")._mm
    while type(kernel).__name__ != "JITFunction":  # under its @autotune and @heuristics
        kernel = kernel.fn
    a = (rng.standard_normal((M, K)) / 4).astype(np.float16)
    b = (rng.standard_normal((K, N)) / 4).astype(np.float16)
    c = np.full((M, N), 99, np.float32)
    i32 = np.int32
    args = [a, b, c, i32(M), i32(N), i32(K), i32(K), 1, i32(N), 1, i32(N), 1]
    grid = (-(-M // bm) * -(-N // bn), 1)
    ir = kernel.warmup(*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, SPLIT_K=1, EVEN_K=K % bk == 0, num_warps=warps,
                       num_stages=3, backend="cuda", grid=grid).ir
    by_name = dict(zip(["A", "B", "C", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn",
                        "stride_cm", "stride_cn"], args))
    run(ir, [by_name[p.name] for p in ir.params], grid, warps * 32, num_stages=3)  # strides of 1 specialized away
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
