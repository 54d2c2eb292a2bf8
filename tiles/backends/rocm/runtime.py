"""hip-python side of the ROCm backend: availability, device, memory, module loading, launch."""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.errors import LaunchError
from .. import dlpack
from ..base import LaunchArg


class HIPError(RuntimeError):
    pass


def _init_hip() -> Any:
    try:
        from hip import hip as hip_module
    except ImportError as e:
        raise HIPError(f"hip-python is not installed (pip install hip-python): {e}") from None
    try:
        check(hip_module.hipInit(0), "hipInit", hip_module)
    except RuntimeError as e:
        if "dlopen" in str(e) or "libamdhip64" in str(e):
            raise HIPError(f"libamdhip64.so cannot be loaded (is ROCm installed?): {e}") from None
        raise HIPError(str(e)) from None
    if check(hip_module.hipGetDeviceCount(), "hipGetDeviceCount", hip_module) == 0:
        raise HIPError("HIP sees no ROCm device")
    return hip_module


@functools.cache
def load_hip() -> tuple[Any, str]:
    """(hip-python's initialized ``hip`` module, "") or (None, why not); tried once per process."""
    try:
        return _init_hip(), ""
    except HIPError as e:
        return None, str(e)


def hip() -> Any:
    module, why = load_hip()
    if module is None:
        raise HIPError(why)
    return module


def check(result: Any, what: str, module: Any = None) -> Any:
    """The value(s) after a hip-python call's status; raises HIPError on failure."""
    module = module or hip()
    status, *values = result if isinstance(result, tuple) else (result,)
    if status != module.hipError_t.hipSuccess:
        text = module.hipGetErrorString(status)
        text = text[-1] if isinstance(text, tuple) else text
        raise HIPError(f"{what} failed: {status} ({text.decode() if isinstance(text, bytes) else text})")
    return values[0] if len(values) == 1 else tuple(values) or None


def available() -> tuple[bool, str]:
    module, why = load_hip()
    return module is not None, why


def device_properties() -> Any:
    props = hip().hipDeviceProp_t()
    check(hip().hipGetDeviceProperties(props, 0), "hipGetDeviceProperties")
    return props


def device_arch() -> str:
    """``gfx942`` from the device's ``gfx942:sramecc+:xnack-``."""
    name = device_properties().gcnArchName
    return (name.decode() if isinstance(name, bytes) else str(name)).split(":")[0]


def device_name() -> str:
    name = device_properties().name
    return name.decode() if isinstance(name, bytes) else str(name)


@dataclass
class DeviceBuffer:
    """Device memory staged from a host array; copied back on ``release`` when ``host`` is set."""

    address: int
    nbytes: int
    host: np.ndarray | None

    @classmethod
    def from_host(cls, array: np.ndarray, copy_back: bool) -> DeviceBuffer:
        address = int(check(hip().hipMalloc(max(array.nbytes, 1)), "hipMalloc"))
        buffer = cls(address, array.nbytes, array if copy_back else None)
        if array.nbytes:
            check(hip().hipMemcpyHtoD(address, array.ctypes.data, array.nbytes), "hipMemcpyHtoD")
        return buffer

    def release(self) -> None:
        if self.host is not None and self.nbytes:
            check(hip().hipMemcpyDtoH(self.host.ctypes.data, self.address, self.nbytes), "hipMemcpyDtoH")
        check(hip().hipFree(self.address), "hipFree")


class ArgumentStaging:
    """Device addresses for array arguments; host arrays are copied in, and back when written."""

    def __init__(self) -> None:
        self.buffers: list[DeviceBuffer] = []

    def device_address(self, arg: LaunchArg) -> int:
        v = arg.value
        if hasattr(v, "__cuda_array_interface__"):
            return int(v.__cuda_array_interface__["data"][0])
        kind = dlpack.device_type(v)
        if kind in (dlpack.DLPACK_ROCM, dlpack.DLPACK_ROCM_HOST):
            address, contiguous = dlpack.data_address(v)
            if not contiguous:
                raise LaunchError(f"argument {arg.name!r}: non-contiguous device tensors are not "
                                  "supported by the rocm backend; make it contiguous first")
            return address
        if kind == dlpack.DLPACK_CPU and not isinstance(v, np.ndarray):
            v = np.from_dlpack(v)
        if isinstance(v, np.ndarray):
            if not (v.flags.c_contiguous or v.flags.f_contiguous):
                raise LaunchError(f"argument {arg.name!r}: non-contiguous NumPy arrays are not "
                                  "supported by the rocm backend; pass np.ascontiguousarray(x)")
            buffer = DeviceBuffer.from_host(v, copy_back=arg.writable)
            self.buffers.append(buffer)
            return buffer.address
        raise LaunchError(f"argument {arg.name!r}: cannot pass a {type(v).__name__} to the rocm "
                          "backend (expected a NumPy array or a ROCm device array)")

    def finish(self) -> None:
        """Copy written host arrays back (this waits for the kernel) and free the staging memory."""
        buffers, self.buffers = self.buffers, []
        for buffer in buffers:
            buffer.release()


class LoadedKernel:
    """A hipFunction_t from a code object, launched with a packed kernarg buffer."""

    def __init__(self, hsaco: bytes, name: str) -> None:
        self.image = hsaco  # HIP may read the image lazily; keep it alive with the module
        self.module = check(hip().hipModuleLoadData(hsaco), "hipModuleLoadData")
        self.function = check(hip().hipModuleGetFunction(self.module, name.encode()),
                              f"hipModuleGetFunction({name})")

    def launch(self, grid: tuple[int, int, int], block: int, kernargs: bytes, shared_bytes: int = 0) -> None:
        h = hip()
        buffer = ctypes.create_string_buffer(kernargs, max(len(kernargs), 1))
        size = ctypes.c_size_t(len(kernargs))
        config = (ctypes.c_void_p * 5)(int(h.HIP_LAUNCH_PARAM_BUFFER_POINTER), ctypes.addressof(buffer),
                                       int(h.HIP_LAUNCH_PARAM_BUFFER_SIZE), ctypes.addressof(size),
                                       int(h.HIP_LAUNCH_PARAM_END))
        check(h.hipModuleLaunchKernel(self.function, *grid, block, 1, 1, shared_bytes, None, None,
                                      ctypes.addressof(config)), "hipModuleLaunchKernel")

