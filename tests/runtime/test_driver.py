"""tiles.runtime.driver.active answers what Triton wrappers ask, from the backend in use."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.runtime import driver
from tiles.runtime.driver import GPUTarget, HostDeviceInterface

TRITON_PROPERTY_KEYS = {"max_shared_mem", "max_num_regs", "multiprocessor_count", "warpSize", "sm_clock_rate",
                        "mem_clock_rate", "mem_bus_width"}  # triton/backends/nvidia/driver.c, Triton 3.9


@pytest.fixture
def use_backend():
    def use(name):
        ok, why = registry.status(name)
        if not ok:
            pytest.skip(f"{name} unavailable: {why}")
        tiles.set_backend(name)
    yield use
    tiles.set_backend(None)


def test_interpreter_describes_the_cpu(use_backend):
    use_backend("interpreter")
    active = driver.active
    assert active.get_current_device() == 0
    assert active.get_current_target() == GPUTarget("interpreter", "numpy", 32)
    props = active.utils.get_device_properties(active.get_current_device())
    assert TRITON_PROPERTY_KEYS <= set(props)
    assert props["multiprocessor_count"] == (os.cpu_count() or 1)
    assert props["warpSize"] == 32 and props["max_threads_per_block"] == 1024
    active.set_current_device(0)
    with pytest.raises(ValueError, match="one device"):
        active.set_current_device(1)


def test_opencl_describes_its_device(use_backend):
    use_backend("opencl")
    from tiles.backends.opencl import runtime
    dev = runtime.device()[2]
    props = driver.active.utils.get_device_properties(0)
    assert props["multiprocessor_count"] == dev.max_compute_units
    assert props["max_shared_mem"] == dev.local_mem_size
    assert props["max_threads_per_block"] == dev.max_work_group_size
    target = driver.active.get_current_target()
    assert target.backend == "opencl" and dev.name in target.arch and target.warp_size == 32


def test_rocm_without_a_device_describes_its_architecture(use_backend, monkeypatch):
    monkeypatch.setenv("TILES_ROCM_ARCH", "gfx90a")
    backend = registry.get("rocm")
    if backend.available()[0]:
        pytest.skip("a ROCm device is present: its properties come from HIP")
    monkeypatch.setattr(registry, "default", lambda: backend)
    target = driver.active.get_current_target()
    assert target == GPUTarget("hip", "gfx90a", 64)  # Triton calls ROCm "hip"
    props = driver.active.utils.get_device_properties(0)
    assert props["warpSize"] == 64 and props["max_shared_mem"] == backend.target().shared_memory


@pytest.mark.skipif(not registry.status("cuda")[0], reason="no CUDA device (the coordinator runs this on the GPU)")
def test_cuda_properties_come_from_the_device(use_backend):
    use_backend("cuda")
    cuda = pytest.importorskip("pycuda.driver", reason="pycuda gives the independent answer")
    cuda.init()
    dev = cuda.Device(0)
    props = driver.active.utils.get_device_properties(0)
    assert TRITON_PROPERTY_KEYS <= set(props)
    assert props["multiprocessor_count"] == dev.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
    assert props["multiprocessor_count"] > 0 and props["warpSize"] == 32
    major, minor = dev.compute_capability()
    assert driver.active.get_current_target() == GPUTarget("cuda", major * 10 + minor, 32)


@tiles.jit
def persistent_scale(x_ptr, out_ptr, n, NUM_SMS: tl.constexpr, BLOCK: tl.constexpr):
    """A persistent kernel: NUM_SMS programs stride over the tiles, as wrappers size them."""
    for tile in range(tl.program_id(0), tl.cdiv(n, BLOCK), NUM_SMS):
        offs = tile * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_a_wrapper_sizes_a_persistent_grid_from_the_properties():
    props = driver.active.utils.get_device_properties(driver.active.get_current_device())
    sms = props["multiprocessor_count"]
    x = np.random.default_rng(11).standard_normal(1000).astype(np.float32)
    out = np.zeros_like(x)
    persistent_scale[(sms,)](x, out, 1000, NUM_SMS=sms, BLOCK=64)
    np.testing.assert_array_equal(out, x * 2)


def test_device_interface_and_benchmark_cache_on_the_host():
    interface = driver.active.get_device_interface()
    assert isinstance(interface, HostDeviceInterface)
    start, end = interface.Event(enable_timing=True), interface.Event(enable_timing=True)
    start.record()
    interface.synchronize()
    end.record()
    assert end.elapsed_time(start) <= 0 <= start.elapsed_time(end)
    cache = driver.active.get_empty_cache_for_benchmark()
    assert cache.nbytes == 256 * 1024 * 1024
    cache[:3] = 7
    driver.active.clear_cache(cache)
    assert not cache[:3].any()
    assert driver.active.get_benchmarker() is tiles.testing.do_bench


def test_set_active_replaces_the_driver():
    class Custom:
        def get_current_device(self):
            return 5
    driver.set_active(Custom())
    try:
        assert driver.active.get_current_device() == 5
    finally:
        driver.reset_active()
    assert driver.active.get_current_device() == 0


def test_triton_module_names_import():
    from tiles.compiler.errors import CompilationError, CompileTimeAssertionFailure
    from tiles.runtime.autotuner import Autotuner, Config, Heuristics
    from tiles.runtime.errors import InterpreterError, OutOfResources, PTXASError
    from tiles.runtime.jit import JITFunction, KernelInterface
    assert issubclass(CompileTimeAssertionFailure, CompilationError)
    assert issubclass(PTXASError, tiles.CompilationError)
    assert OutOfResources is tiles.OutOfResourcesError and InterpreterError is tiles.KernelRuntimeError
    assert Autotuner is tiles.Autotuner and Config is tiles.Config and Heuristics is tiles.Heuristics
    assert isinstance(persistent_scale, (JITFunction, KernelInterface))
    tuned = tiles.autotune([Config({})], key=[])(persistent_scale)
    assert isinstance(tuned, KernelInterface)


@pytest.mark.skipif(not registry.status("cuda")[0], reason="no CUDA device (the coordinator runs this on the GPU)")
def test_cuda_launch_on_a_named_stream(use_backend):
    torch = pytest.importorskip("torch")
    use_backend("cuda")
    x = torch.randn(4096, device="cuda", generator=torch.Generator("cuda").manual_seed(50))
    out = torch.zeros_like(x)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        assert driver.active.get_current_stream() == side.cuda_stream
    persistent_scale[(8,)](x, out, 4096, NUM_SMS=8, BLOCK=256, stream=side.cuda_stream)
    side.synchronize()
    torch.testing.assert_close(out, x * 2, rtol=0, atol=0)


def test_jit_function_source_and_cache_key():
    assert persistent_scale.src.startswith("def persistent_scale(")  # Triton 3.9: from the def on
    assert "NUM_SMS" in persistent_scale.src
    key = persistent_scale.cache_key
    assert len(key) == 64 and key == tiles.jit(persistent_scale.fn).cache_key
    assert key != tiles.jit(double_it).cache_key


def double_it(x):
    return x * 2
