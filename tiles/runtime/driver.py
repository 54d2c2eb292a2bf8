"""``tiles.runtime.driver.active``: what Triton wrappers ask the driver, answered by the backend.

Wrappers size grids with ``driver.active.utils.get_device_properties(dev)["multiprocessor_count"]``,
pick code paths with ``driver.active.get_current_target().backend``, and time with
``get_device_interface()``/``get_empty_cache_for_benchmark()``.  Here every answer comes from
the backend launches go to now (``tiles.set_backend``, ``TILES_BACKEND``, or the best one present):
the interpreter describes the CPU, OpenCL its device, CUDA the GPU through pycuda (torch's current
device and stream when torch is loaded), ROCm through HIP (its architecture's table without one).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any

from ..backends import registry
from ..backends.base import Backend

BENCHMARK_CACHE_BYTES = 256 * 1024 * 1024  # Triton's: larger than any GPU's L2
TRITON_BACKEND_NAMES = {"rocm": "hip"}  # what Triton calls the same target


@dataclass(frozen=True)
class GPUTarget:
    """Triton's ``GPUTarget``: ``arch`` is the compute capability as an int on CUDA (90), a string
    elsewhere (``gfx942``, the OpenCL device's name, ``numpy``)."""

    backend: str
    arch: int | str
    warp_size: int


def _cuda_capability(arch: str) -> int:
    digits = "".join(c for c in arch if c.isdigit())
    return int(digits) if digits else 0


def _torch_cuda() -> Any:
    """``torch.cuda`` when torch is already loaded and sees a GPU (tiles never imports torch)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        return torch.cuda if torch.cuda.is_available() else None
    except Exception:  # a torch without CUDA support
        return None


class HostEvent:
    """A ``torch.cuda.Event``-shaped timer for backends that finish every launch before returning."""

    def __init__(self, enable_timing: bool = True) -> None:
        self.time = 0.0

    def record(self, stream: Any = None) -> None:
        self.time = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: HostEvent) -> float:
        return (end.time - self.time) * 1000.0


class HostDeviceInterface:
    """The slice of ``torch.cuda`` that benchmarking code calls, for the interpreter and OpenCL."""

    Event = HostEvent

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def is_available(self) -> bool:
        return bool(self.backend.available()[0])

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return self.backend.current_device()

    def set_device(self, device: int) -> None:
        self.backend.set_current_device(device)

    def synchronize(self, device: Any = None) -> None:
        if self.backend.name == "opencl":
            from ..backends.opencl import runtime
            runtime.device()[1].finish()

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        return (0, 0)

    def get_device_properties(self, device: Any = None) -> dict[str, Any]:
        return device_properties(self.backend, 0 if device is None else int(device))

    def current_stream(self, device: Any = None) -> Any:
        return self.backend.current_stream(device)


def device_properties(backend: Backend, device: int) -> dict[str, Any]:
    """Triton's ``get_device_properties`` keys, plus ``max_threads_per_block``."""
    props = backend.device_properties(device)
    if backend.name in ("interpreter", "step"):
        props.update(multiprocessor_count=os.cpu_count() or 1, warpSize=32)
    elif backend.name == "opencl":
        from ..backends.opencl import runtime
        dev = runtime.device()[2]
        props.update(multiprocessor_count=int(dev.max_compute_units), max_shared_mem=int(dev.local_mem_size),
                     max_threads_per_block=int(dev.max_work_group_size),
                     sm_clock_rate=int(dev.max_clock_frequency) * 1000)
    elif backend.name == "cuda" and backend.available()[0]:
        props.update(_cuda_properties(device))
    elif backend.name == "rocm":
        props.update(_rocm_properties(backend, device))
    return props


def _cuda_properties(device: int) -> dict[str, Any]:
    from ..backends.cuda import runtime
    return dict(runtime.device_properties(device))


def _rocm_properties(backend: Backend, device: int) -> dict[str, Any]:
    from ..backends.rocm import runtime
    if not backend.available()[0]:
        return {}  # compile-only: the architecture's table (Backend.device_properties)
    p = runtime.device_properties()
    return {"max_shared_mem": int(p.sharedMemPerBlock), "max_num_regs": int(p.regsPerBlock),
            "multiprocessor_count": int(p.multiProcessorCount), "warpSize": int(p.warpSize),
            "sm_clock_rate": int(p.clockRate), "mem_clock_rate": int(p.memoryClockRate),
            "mem_bus_width": int(p.memoryBusWidth), "max_threads_per_block": int(p.maxThreadsPerBlock)}


class DriverUtils:
    """``driver.active.utils``."""

    def __init__(self, owner: ActiveDriver) -> None:
        self.owner = owner

    def get_device_properties(self, device: Any = None) -> dict[str, Any]:
        index = self.owner.get_current_device() if device is None else _device_index(device)
        return device_properties(self.owner.backend, index)


def _device_index(device: Any) -> int:
    """0, 1, ... from an int, ``torch.device("cuda", 1)`` or ``"cuda:1"``."""
    index = getattr(device, "index", device)
    if index is None:
        return 0
    if isinstance(index, str):
        return int(index.rpartition(":")[2] or 0) if ":" in index else 0
    return int(index)


class ActiveDriver:
    """The driver of whatever backend launches go to now (looked up on every call)."""

    def __init__(self) -> None:
        self.utils = DriverUtils(self)
        self._benchmark_cache: Any = None

    @property
    def backend(self) -> Backend:
        return registry.default()

    def is_active(self) -> bool:
        return True

    def get_current_device(self) -> int:
        torch_cuda = _torch_cuda() if self.backend.name == "cuda" else None
        return int(torch_cuda.current_device()) if torch_cuda else self.backend.current_device()

    def set_current_device(self, device: Any) -> None:
        index = _device_index(device)
        torch_cuda = _torch_cuda() if self.backend.name == "cuda" else None
        if torch_cuda:
            torch_cuda.set_device(index)
        else:
            self.backend.set_current_device(index)

    def get_current_stream(self, device: Any = None) -> Any:
        backend = self.backend
        stream = backend.current_stream(device)
        if stream is None and backend.name == "cuda":
            torch_cuda = _torch_cuda()
            stream = torch_cuda.current_stream(device).cuda_stream if torch_cuda else 0
        return stream

    def get_current_target(self) -> GPUTarget:
        backend = self.backend
        target = backend.target()
        arch: int | str = _cuda_capability(target.arch) if backend.name == "cuda" else target.arch
        warp = 32 if backend.name in ("interpreter", "step") else target.warp_size
        return GPUTarget(TRITON_BACKEND_NAMES.get(backend.name, backend.name), arch, warp)

    def get_active_torch_device(self) -> Any:
        import torch
        if self.backend.name == "cuda":
            return torch.device("cuda", self.get_current_device())
        return torch.device("cpu")

    def get_device_interface(self) -> Any:
        torch_cuda = _torch_cuda() if self.backend.name == "cuda" else None
        return torch_cuda or HostDeviceInterface(self.backend)

    def get_benchmarker(self) -> Any:
        from ..testing import do_bench
        return do_bench

    def get_empty_cache_for_benchmark(self) -> Any:
        """A buffer larger than the caches; ``clear_cache`` overwrites it between timed runs."""
        torch_cuda = _torch_cuda() if self.backend.name == "cuda" else None
        if torch_cuda:
            import torch
            return torch.empty(BENCHMARK_CACHE_BYTES // 4, dtype=torch.int, device="cuda")
        if self._benchmark_cache is None:
            import numpy as np
            self._benchmark_cache = np.empty(BENCHMARK_CACHE_BYTES // 4, dtype=np.int32)
        return self._benchmark_cache

    def clear_cache(self, cache: Any) -> None:
        if hasattr(cache, "zero_"):
            cache.zero_()
        else:
            cache.fill(0)


class DriverConfig:
    """``tiles.runtime.driver``: ``.active`` is the driver launches use; ``set_active`` replaces it."""

    def __init__(self) -> None:
        self.default = ActiveDriver()
        self._active: Any = None

    @property
    def active(self) -> Any:
        return self._active or self.default

    def set_active(self, driver: Any) -> None:
        self._active = driver

    def reset_active(self) -> None:
        self._active = None


driver = DriverConfig()
