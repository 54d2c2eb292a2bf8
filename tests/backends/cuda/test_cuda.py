"""CUDA backend: PTX for every kernel here (ptxas-checked when on PATH); runs on a GPU when present."""

import cuda_kernels as K
import numpy as np
import pytest

from tiles.backends import registry
from tiles.backends.cuda import toolchain

GPU, WHY = registry.status("cuda")
needs_gpu = pytest.mark.skipif(not GPU, reason=f"no CUDA GPU: {WHY}")
rng = np.random.default_rng(20261201)  # fixed: every run draws the same inputs


def _compile(kernel, *args, **kw):
    return kernel.warmup(*args, backend="cuda", **kw)


CASES = [
    (K.add_kernel, lambda: (np.ones(1000, np.float32),) * 3 + (1000,), {"BLOCK": 1024}),
    (K.softmax_kernel, lambda: (np.ones((8, 100), np.float32),) * 2 + (100, 100), {"BLOCK": 128}),
    (K.loop_sum_kernel, lambda: (np.ones(1000, np.float32), np.ones(1, np.float32), 1000), {"BLOCK": 256}),
    (K.atomic_kernel, lambda: (np.ones(1000, np.int32), np.zeros(2, np.int32), 1000), {"BLOCK": 256}),
    (K.int_ops_kernel, lambda: (np.ones(1000, np.int32),) * 3 + (1000,), {"BLOCK": 256}),
    (K.matrix_kernel, lambda: (np.ones((64, 64), np.float32),) * 3 + (64, 64, 64), {"BM": 32, "BN": 32, "BK": 16}),
]


@pytest.mark.parametrize("kernel,args,meta", CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_ptx_compiles(kernel, args, meta):
    compiled = _compile(kernel, *args(), **meta)
    assert ".entry" in compiled.asm["ptx"] and "define" in compiled.asm["llir"]
    if toolchain.ptxas_path():
        info = toolchain.ptxas_info(compiled.asm["ptx"], compiled.metadata["arch"])
        assert info.get("spill_stores", 0) == 0, info


def test_vector_add_is_vectorized():
    x = np.ones(4096, np.float32)
    compiled = _compile(K.add_kernel, x, x, x, 4096, BLOCK=1024)
    assert "ld.global.v4" in compiled.asm["ptx"]


@needs_gpu
@pytest.mark.parametrize("n", [1, 1000, 4097, 1 << 20])
def test_add(n):
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    K.add_kernel[(-(-n // 1024),)](x, y, out, n, BLOCK=1024, backend="cuda")
    np.testing.assert_array_equal(out, x + y)


@needs_gpu
@pytest.mark.parametrize("m,n", [(1, 1), (7, 100), (64, 1000), (33, 4096)])
def test_softmax(m, n):
    x = rng.standard_normal((m, n)).astype(np.float32)
    x[0, 0] = np.inf if n > 1 else x[0, 0]
    x = np.where(np.isinf(x), 30.0, x).astype(np.float32)
    out = np.full_like(x, np.nan)
    block = 1 << max(0, (n - 1).bit_length())
    K.softmax_kernel[(m,)](out, x, n, n, BLOCK=block, num_warps=4, backend="cuda")
    ref = np.exp(x - x.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)


@needs_gpu
def test_loop_sum():
    n = 12345
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(3, np.float32)
    K.loop_sum_kernel[(3,)](x, out, n, BLOCK=256, backend="cuda")
    np.testing.assert_allclose(out, np.full(3, x.sum(dtype=np.float64)), rtol=1e-4, atol=1e-3)


@needs_gpu
def test_atomics_from_many_programs():
    n = 100_000
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    out = np.array([0, np.iinfo(np.int32).min], np.int32)
    K.atomic_kernel[(-(-n // 256),)](x, out, n, BLOCK=256, backend="cuda")
    assert out[0] == x.sum() and out[1] == x.max()


@needs_gpu
def test_int_ops_match_interpreter():
    n = 5000
    a = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-100, 100, n).astype(np.int32)
    b[b == 0] = 7
    a[:4] = [np.iinfo(np.int32).min, -1, 0, np.iinfo(np.int32).max]
    out_gpu = np.zeros(n, np.int32)
    out_ref = np.zeros(n, np.int32)
    K.int_ops_kernel[(-(-n // 256),)](a, b, out_gpu, n, BLOCK=256, backend="cuda")
    K.int_ops_kernel[(-(-n // 256),)](a, b, out_ref, n, BLOCK=256, backend="interpreter")
    np.testing.assert_array_equal(out_gpu, out_ref)


@needs_gpu
@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (100, 70, 45)])
def test_dot(m, n, k):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    K.matrix_kernel[(-(-m // 32), -(-n // 32))](a, b, c, m, n, k, BM=32, BN=32, BK=16, backend="cuda")
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=2e-2, atol=2e-2)


def _fmod_operands(dtype):
    x = (rng.standard_normal(997) * 10.0 ** rng.integers(-8, 30, 997)).astype(dtype)
    y = (rng.standard_normal(997) * 10.0 ** rng.integers(-30, 8, 997)).astype(dtype)
    edges = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, 1e30, -7.5, 3.0, 1e-30, -0.0], dtype)
    x[:10], y[:10] = edges, edges[::-1]
    return x, y


@pytest.mark.skipif(toolchain.libdevice_path() is None, reason="no libdevice to provide fmod")
def test_float_mod_calls_exact_fmod():
    """LLVM's own frem expansion on NVPTX (divide, truncate, multiply back) is wrong once the
    quotient is large; float % calls libdevice's fmod, and only what the kernel calls of
    libdevice stays in the PTX."""
    x = np.ones(64, np.float32)
    compiled = _compile(K.fmod_kernel, x, x, x, 64, BLOCK=64)
    assert "@__nv_fmodf" in compiled.asm["llir"] and "frem" not in compiled.asm["llir"]
    assert ".func" not in compiled.asm["ptx"] and len(compiled.asm["ptx"]) < 20_000


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_mod_matches_fmod(dtype):
    x, y = _fmod_operands(dtype)
    out = np.zeros_like(x)
    K.fmod_kernel[(1,)](x, y, out, x.size, BLOCK=1024, backend="cuda")
    want = np.fmod(x, y)
    assert np.array_equal(out, want, equal_nan=True), np.flatnonzero(~((out == want) | np.isnan(want)))[:5]
    numbers = ~np.isnan(want)  # a NaN's sign bit is not specified
    assert np.array_equal(np.signbit(out[numbers]), np.signbit(want[numbers]))  # -0.0 stays -0.0


def test_too_much_shared_memory_is_a_clear_error():
    """A tile whose pipeline stages cannot fit the device's shared memory fails at compile time,
    naming the kernel's line, the bytes needed and the limit (autotuning skips such configs)."""
    import sys
    from pathlib import Path

    import tiles
    sys.path.insert(0, str(Path(__file__).parent))
    from test_tensorcore import _operands, pipelined_kernel
    a, b = _operands(512, 512, 512, np.float16)
    c = np.zeros((512, 512), np.float32)
    with pytest.raises(tiles.OutOfResourcesError) as info:
        pipelined_kernel.warmup(a, b, c, 512, 512, 512, 512, 512, 512, BM=256, BN=256, BK=128, num_warps=8,
                                num_stages=4, backend="cuda")
    text = str(info.value)
    assert "test_tensorcore.py:" in text and "bytes of shared memory" in text and "num_stages" in text


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_mod_without_libdevice_is_long_division(dtype, monkeypatch):
    """With no math library, float % is the integer long division of lowering/fmod.py (checked
    against numpy on the simulator in test_fmod.py), not LLVM's inexact frem expansion."""
    from tiles.backends.base import Options
    from tiles.backends.cuda import nvptx_target
    from tiles.backends.llvm.emit import lower_kernel
    monkeypatch.setattr(toolchain, "libdevice_path", lambda: None)
    x = np.ones(64, dtype)
    ir = K.fmod_kernel.warmup(x, x, x, 64, BLOCK=64, backend="interpreter").ir
    llir = lower_kernel(ir, nvptx_target("sm_90"), Options())
    assert "frem" not in llir and "__nv_" not in llir
    ptx = toolchain.to_ptx(llir, "sm_90")
    if toolchain.ptxas_path():
        assert toolchain.ptxas_info(ptx, "sm_90").get("registers", 0) > 0
