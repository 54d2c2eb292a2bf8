"""Triton's ``maxnreg=`` launch option (and ``Config(maxnreg=)``) on CUDA: the PTX carries ``.maxnreg``
after the kernel's thread count, ptxas holds the kernel to it, it is part of the compile key, and the
load-time occupancy tuning (``occupancy.py``) leaves such a kernel alone.  Other backends accept it
and ignore it, as Triton's HIP backend does."""

import numpy as np
import pytest
from test_attention_codegen import needs_ptxas
from test_cuda import needs_gpu
from test_occupancy import StandInDriver

import tiles
import tiles.language as tl
from tiles.backends.cuda import occupancy, toolchain


@tiles.jit
def matmul_tile(a, b, c, K: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm, rn, rk = tl.arange(0, BM), tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * BN + rn[None, :], acc)


def operands(rng, m=128, n=128, k=128):
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    return a, b, np.empty((m, n), np.float32)


def ptx_for(rng, monkeypatch, **options):
    monkeypatch.setenv("TILES_CUDA_ARCH", "sm_90a")
    a, b, c = operands(rng)
    return matmul_tile.warmup(a, b, c, K=128, BM=128, BN=128, BK=32, num_warps=4, backend="cuda",
                              **options).asm["ptx"]


def test_maxnreg_is_a_directive_after_the_thread_count(rng, monkeypatch):
    plain, capped = ptx_for(rng, monkeypatch), ptx_for(rng, monkeypatch, maxnreg=152)
    assert ".maxnreg" not in plain
    assert ".maxntid 128\n.maxnreg 152\n" in capped
    assert capped.replace(".maxnreg 152\n", "") == plain


@needs_ptxas
def test_ptxas_holds_the_kernel_to_maxnreg(rng, monkeypatch):
    plain = toolchain.ptxas_info(ptx_for(rng, monkeypatch), "sm_90a")["registers"]
    assert plain > 152, f"the 128x128 tile on 4 warps took {plain} registers: pick a lower cap"
    assert toolchain.ptxas_info(ptx_for(rng, monkeypatch, maxnreg=152), "sm_90a")["registers"] <= 152


def test_the_occupancy_tuning_leaves_a_capped_kernel_alone():
    ptx = b".visible .entry k()\n.maxntid 256, 1, 1\n.maxnreg 200\n{\nret;\n}\n"
    drv = StandInDriver([(198, 0)])
    assert occupancy.load(drv, ptx, "k", 256, 64 * 1024).asked == 0 and len(drv.images) == 1


def test_maxnreg_is_accepted_and_ignored_on_the_interpreter(rng):
    a, b, c = operands(rng, 32, 32, 64)
    matmul_tile[(1,)](a, b, c, K=64, BM=32, BN=32, BK=32, maxnreg=40, backend="interpreter")
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)


@needs_gpu
@pytest.mark.parametrize("maxnreg", [None, 152])
def test_a_capped_kernel_runs_on_the_gpu(rng, maxnreg):
    from tiles.backends.cuda import driver as cu
    from tiles.backends.cuda import runtime
    a, b, c = operands(rng)
    options = {} if maxnreg is None else {"maxnreg": maxnreg}
    compiled = matmul_tile[(1,)](a, b, c, K=128, BM=128, BN=128, BK=32, num_warps=4, backend="cuda", **options)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)
    loaded = compiled.loaded["cuda"]
    context = runtime.driver().current_context()
    registers = runtime.driver().function_attribute(loaded.function(context), cu.CU_FUNC_ATTRIBUTE_NUM_REGS)
    assert maxnreg is None or registers <= maxnreg
