"""Tooling on a real GPU: autotune picks among CUDA configs (device-event timing, L2 flushed),
do_bench uses CUDA events, and a CPU tensor on the cuda backend gets a clear error.
Skipped with the reason when there is no CUDA GPU (they run on the H200 before release)."""

from __future__ import annotations

import numpy as np
import pytest
import rt_kernels as kernels

import tiles
from tiles.backends import registry
from tiles.testing import do_bench

GPU, WHY = registry.status("cuda")
pytestmark = pytest.mark.skipif(not GPU, reason=f"no CUDA GPU: {WHY}")


def test_autotune_on_cuda_with_torch_tensors(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_BACKEND", "cuda")
    configs = [tiles.Config({"BLOCK": b}, num_warps=w) for b, w in ((256, 2), (1024, 4), (2048, 8))]
    tuned = tiles.autotune(configs, key=["n"], warmup=5, rep=20)(kernels.add_kernel)
    n = 1 << 20
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    tuned[lambda meta: (tiles.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 2 * x + y)
    assert set(tuned.configs_timings) == set(configs)
    assert tuned.best_config == min(tuned.configs_timings, key=tuned.configs_timings.get)
    assert all(0 < t < 10 for t in tuned.configs_timings.values())


def test_do_bench_times_a_cuda_kernel():
    torch = pytest.importorskip("torch")
    x = torch.randn(1 << 24, device="cuda")
    ms = do_bench(lambda: x.mul_(1.0), warmup=5, rep=20)
    assert 0.005 < ms < 5


def test_do_bench_cudagraph_replays_a_tiles_launch(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TILES_BACKEND", "cuda")
    n = 1 << 20
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.full_like(x, float("nan"))
    counter = torch.zeros(1, device="cuda")

    def step():
        kernels.add_kernel[(tiles.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        counter.add_(1)
    ms = tiles.testing.do_bench_cudagraph(step, rep=5)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 2 * x + y)
    assert 0.001 < ms < 5
    assert counter.item() > 1 + 5 + 10  # eager call, the 5-call estimate, then >= 10 timed replays


def test_cpu_tensor_on_the_cuda_backend_is_a_clear_error():
    torch = pytest.importorskip("torch")
    x = torch.randn(64)
    with pytest.raises(tiles.LaunchError, match="torch tensor on cpu"):
        kernels.add_kernel[(1,)](x, x, x, 64, BLOCK=64, backend="cuda")


def test_numpy_arrays_round_trip_on_cuda(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    out = np.full_like(x, np.nan)
    kernels.add_kernel[(1,)](x, x, out, 1000, BLOCK=1024, backend="cuda")
    np.testing.assert_array_equal(out, 2 * x + x)


class OnlyDLPack:
    """A CUDA tensor seen only through DLPack (as JAX or other frameworks hand them over)."""

    def __init__(self, t):
        self._t, self.dtype, self.shape = t, t.dtype, tuple(t.shape)

    def __dlpack__(self, stream=None):
        return self._t.__dlpack__()

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_dlpack_only_arguments_on_cuda():
    torch = pytest.importorskip("torch")
    x = torch.randn(1000, device="cuda")
    out = torch.full_like(x, float("nan"))
    kernels.add_kernel[(1,)](OnlyDLPack(x), OnlyDLPack(x), OnlyDLPack(out), 1000, BLOCK=1024, backend="cuda")
    torch.cuda.synchronize()
    torch.testing.assert_close(out, 3 * x)
