"""wgmma beyond fp16: tf32 (fp32 operands), 8-bit integers and fp8, which Hopper reads K-major only.

A is always stored K-major; B is written transposed into its swizzled tile when it is loaded
K x N, or copied as is when the kernel loads it N x K and transposes it (then the loop is
pipelined with cp.async).  PTX is checked for sm_90a (with ptxas when installed), numerics
against the interpreter on the simulator, and on a GPU when there is one."""

import ml_dtypes
import numpy as np
import pytest
from test_tensorcore import needs_gpu

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel

NAMES = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "sam", "sak", "sbk", "sbn")


@tiles.jit
def tutorial_mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, BM: tl.constexpr, BN: tl.constexpr,
                BK: tl.constexpr, ACC: tl.constexpr):
    """The tutorial's loop: pointer tiles advanced by BK, K masks, edge masks on the store."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + (rm[:, None] % M) * sam + rk[None, :] * sak
    b_ptrs = b_ptr + rk[:, None] * sbk + (rn[None, :] % N) * sbn
    acc = tl.zeros((BM, BN), dtype=ACC)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BK, other=0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BK, other=0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def _case(dtype, m, n, k, trans_b, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        a = rng.integers(-128, 128, (m, k)).astype(dtype)
        b = rng.integers(-128, 128, (k, n)).astype(dtype)
        out = np.int32
    else:
        a = rng.standard_normal((m, k)).astype(np.float32).astype(dtype)
        b = rng.standard_normal((k, n)).astype(np.float32).astype(dtype)
        out = np.float32
    c = np.full((m, n), 7, out)
    if trans_b:  # B held N x K in memory: strides (1, K)
        b_mem = np.ascontiguousarray(b.T)
        strides = (k, 1, 1, k)
    else:
        b_mem = b
        strides = (k, 1, n, 1)
    return a, b, b_mem, c, (a, b_mem, c, m, n, k, *strides)


def _meta(dtype, bm, bn, bk, warps, stages):
    acc = tl.int32 if np.dtype(dtype).kind == "i" else tl.float32
    return dict(BM=bm, BN=bn, BK=bk, ACC=acc, num_warps=warps, num_stages=stages)


def _ptx(ir, warps, stages):
    return toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(warps, stages)), "sm_90a")


E4M3, E5M2 = ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
KINDS = {np.float32: "k8.f32.tf32.tf32", np.int8: "k32.s32.s8.s8", E4M3: "k32.f32.e4m3.e4m3",
         E5M2: "k32.f32.e5m2.e5m2"}


@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, E4M3, E5M2], ids=["tf32", "int8", "e4m3", "e5m2"])
def test_ptx_uses_wgmma(dtype, trans_b):
    *_, args = _case(dtype, 256, 256, 256, trans_b, 0)
    ir = tutorial_mm.warmup(*args, backend="cuda", **_meta(dtype, 128, 128, 64, 8, 3)).ir
    ptx = _ptx(ir, 8, 3)
    assert KINDS[dtype] in ptx and "mma.sync" not in ptx
    # B along K in memory: both operands come through cp.async stages; else B is written transposed
    assert ("cp.async" in ptx) == trans_b
    if toolchain.ptxas_path():
        assert toolchain.ptxas_info(ptx, "sm_90a").get("spill_stores", 0) == 0
    else:
        pytest.skip("ptxas not installed: PTX not assembled")


def _simulate(dtype, m, n, k, trans_b, bm, bn, bk, warps, stages, seed):
    from tiles.backends.cuda.simulator import simt as sim_emitter
    a, b, b_mem, c, args = _case(dtype, m, n, k, trans_b, seed)
    meta = _meta(dtype, bm, bn, bk, warps, stages)
    ir = tutorial_mm.warmup(*args, backend="cuda", **meta).ir
    given = dict(zip(NAMES, args))
    sim_emitter.run(ir, [given[p.name] if isinstance(given[p.name], np.ndarray) else np.int32(given[p.name])
                         for p in ir.params], (-(-m // bm), -(-n // bn)), warps * 32, num_stages=stages)
    want = np.full_like(c, 7)
    tutorial_mm[(-(-m // bm), -(-n // bn))](a, b_mem, want, *args[3:], backend="interpreter", **meta)
    return c, want


@pytest.mark.parametrize("trans_b,stages", [(False, 1), (True, 3)])
@pytest.mark.parametrize("m,n,k,bm,bn,bk,warps", [(100, 72, 96, 64, 64, 32, 4), (128, 64, 80, 128, 32, 64, 8)])
def test_int8_simulated(m, n, k, bm, bn, bk, warps, trans_b, stages):
    c, want = _simulate(np.int8, m, n, k, trans_b, bm, bn, bk, warps, stages, seed=m + k)
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("trans_b,stages", [(False, 1), (True, 3)])
@pytest.mark.parametrize("m,n,k,bm,bn,bk,warps", [(100, 72, 48, 64, 64, 16, 4), (128, 64, 80, 128, 32, 32, 8)])
def test_tf32_simulated(m, n, k, bm, bn, bk, warps, trans_b, stages):
    """tf32 keeps 10 mantissa bits of each operand: within 2^-10 of the interpreter's sums."""
    c, want = _simulate(np.float32, m, n, k, trans_b, bm, bn, bk, warps, stages, seed=m + k)
    assert np.linalg.norm(c - want) / np.linalg.norm(want) < 2e-3


@pytest.mark.parametrize("trans_b,stages", [(False, 1), (True, 3)])
@pytest.mark.parametrize("dtype", [E4M3, E5M2], ids=["e4m3", "e5m2"])
def test_fp8_simulated(dtype, trans_b, stages):
    """fp8 products are exact in float32: only the order of the sums differs."""
    c, want = _simulate(dtype, 128, 72, 96, trans_b, 64, 64, 32, 4, stages, seed=7)
    assert np.linalg.norm(c - want) / np.linalg.norm(want) < 1e-5


@needs_gpu
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, E4M3, E5M2], ids=["tf32", "int8", "e4m3", "e5m2"])
def test_wgmma_dtypes_gpu(dtype, trans_b):
    m, n, k = 200, 136, 200
    a, b, b_mem, c, args = _case(dtype, m, n, k, trans_b, 5)
    compiled = tutorial_mm.warmup(*args, backend="cuda", **_meta(dtype, 128, 64, 64, 4, 3))
    tutorial_mm[(-(-m // 128), -(-n // 64))](*args, backend="cuda", **_meta(dtype, 128, 64, 64, 4, 3))
    if compiled.metadata["arch"] == "sm_90a":
        assert KINDS[dtype] in compiled.asm["ptx"]
    if dtype is np.int8:
        np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
    else:  # tf32 keeps 10 mantissa bits; fp8 products are exact, Hopper's fp8 sums are not full fp32
        want = a.astype(np.float64) @ b.astype(np.float64)
        assert np.linalg.norm(c - want) / np.linalg.norm(want) < 2e-3
