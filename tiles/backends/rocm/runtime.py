"""hip-python side of the ROCm backend: availability, device, memory, module loading, launch.

As on CUDA, a launch runs on the device holding its arrays (torch ``get_device()``, DLPack's
device id), else torch's current device (when torch has initialized it), else the thread's
current HIP device; the calling thread's device is switched with ``hipSetDevice`` for the
launch and switched back after.  A module is loaded once per device.  The stream is the
caller's ``stream=`` or the current torch/cupy stream (``streams.py``); host arrays (strided
views included) are copied on it, and the wait for the copy back polls an event.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.errors import LaunchError
from .. import dlpack
from ..base import LaunchArg
from ..staging import HostSpan, host_pointer
from ..waiting import poll_until

_lock = threading.Lock()


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


def current_device() -> int:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return int(torch.cuda.current_device())
    return int(check(hip().hipGetDevice(), "hipGetDevice"))


def argument_device(v: Any) -> int | None:
    """The device of a device array, or None for host memory (or when it does not say)."""
    if getattr(v, "is_cuda", False) is True:  # torch on ROCm
        return int(v.get_device())
    device = getattr(getattr(v, "device", None), "id", None)  # cupy
    if isinstance(device, int) and hasattr(v, "__cuda_array_interface__"):
        return device
    if dlpack.device_type(v) == dlpack.DLPACK_ROCM:
        return int(v.__dlpack_device__()[1])
    return None


def launch_device(args: Sequence[LaunchArg]) -> int:
    """The device a launch runs on; arguments on two devices are refused."""
    found = [(a.name, d) for a in args if a.is_pointer for d in [argument_device(a.value)] if d is not None]
    if not found:
        return current_device()
    name, device = found[0]
    for other, d in found[1:]:
        if d != device:
            raise LaunchError(f"arguments {name!r} and {other!r} are on different devices ({device} and {d}); "
                              "move them to one device")
    return device


class OnDevice:
    """``with OnDevice(d):`` makes ``d`` this thread's HIP device, restoring the previous one."""

    def __init__(self, device: int) -> None:
        self.device = device
        self.previous = -1

    def __enter__(self) -> OnDevice:
        current = int(check(hip().hipGetDevice(), "hipGetDevice"))
        if current != self.device:
            check(hip().hipSetDevice(self.device), f"hipSetDevice({self.device})")
            self.previous = current
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.previous >= 0:
            check(hip().hipSetDevice(self.previous), f"hipSetDevice({self.previous})")


def _stream(handle: int) -> Any:
    return None if handle == 0 else handle


def wait_for_stream(handle: int) -> None:
    """Wait for the work queued so far on the stream, polling an event (Ctrl-C stays live)."""
    h = hip()
    event = check(h.hipEventCreateWithFlags(h.hipEventDisableTiming), "hipEventCreateWithFlags")
    check(h.hipEventRecord(event, _stream(handle)), "hipEventRecord")

    def done() -> bool:
        status = h.hipEventQuery(event)
        status = status[0] if isinstance(status, tuple) else status
        if status == h.hipError_t.hipErrorNotReady:
            return False
        check(status, "hipEventQuery (an error in the kernel or a copy)")
        return True
    poll_until(done)
    check(h.hipEventDestroy(event), "hipEventDestroy")


@dataclass
class DeviceBuffer:
    """Device memory staged from a host span; ``written`` spans are copied back."""

    address: int
    span: HostSpan
    written: bool

    @classmethod
    def from_host(cls, span: HostSpan, written: bool, stream: int) -> DeviceBuffer:
        address = int(check(hip().hipMalloc(max(span.nbytes, 1)), "hipMalloc"))
        if span.nbytes:
            check(hip().hipMemcpyHtoDAsync(address, host_pointer(span.bytes), span.nbytes, _stream(stream)),
                  "hipMemcpyHtoDAsync")
        return cls(address, span, written)


class ArgumentStaging:
    """Device addresses for array arguments; host arrays are copied in, and back when written."""

    def __init__(self, stream: int = 0) -> None:
        self.stream = stream
        self.buffers: list[DeviceBuffer] = []

    def device_address(self, arg: LaunchArg) -> int:
        v = arg.value
        if getattr(v, "is_cuda", False) is True:
            return int(v.data_ptr())
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
            buffer = DeviceBuffer.from_host(HostSpan(v), arg.writable, self.stream)
            self.buffers.append(buffer)
            return buffer.address + buffer.span.offset
        raise LaunchError(f"argument {arg.name!r}: cannot pass a {type(v).__name__} to the rocm "
                          "backend (expected a NumPy array or a ROCm device array)")

    def finish(self) -> None:
        """Wait for the kernel, copy written host arrays back and free the staging memory."""
        buffers, self.buffers = self.buffers, []
        if not buffers:
            return
        try:
            wait_for_stream(self.stream)
            received = []
            for buffer in buffers:
                if buffer.written and buffer.span.nbytes:
                    host = buffer.span.host_buffer()
                    check(hip().hipMemcpyDtoH(host_pointer(host), buffer.address, buffer.span.nbytes),
                          "hipMemcpyDtoH")
                    received.append((buffer.span, host))
            for span, host in received:
                span.write_back(host)
        except KeyboardInterrupt:
            raise  # the kernel may still use the buffers: they are left allocated
        for buffer in buffers:
            check(hip().hipFree(buffer.address), "hipFree")


class LoadedKernel:
    """A hipFunction_t per device from a code object, launched with a packed kernarg buffer."""

    def __init__(self, hsaco: bytes, name: str) -> None:
        self.image = hsaco  # HIP may read the image lazily; keep it alive with the module
        self.name = name
        self.functions: dict[int, Any] = {}
        self.function = self.function_on(int(check(hip().hipGetDevice(), "hipGetDevice")))

    def function_on(self, device: int) -> Any:
        """The function loaded on ``device`` (this thread's current device), loaded once."""
        function = self.functions.get(device)
        if function is None:
            with _lock:
                function = self.functions.get(device)
                if function is None:
                    module = check(hip().hipModuleLoadData(self.image), "hipModuleLoadData")
                    function = check(hip().hipModuleGetFunction(module, self.name.encode()),
                                     f"hipModuleGetFunction({self.name})")
                    self.functions[device] = function
        return function

    def launch(self, grid: tuple[int, int, int], block: int, kernargs: bytes, shared_bytes: int = 0,
               stream: int = 0, device: int | None = None) -> None:
        h = hip()
        function = self.function if device is None else self.function_on(device)
        buffer = ctypes.create_string_buffer(kernargs, max(len(kernargs), 1))
        size = ctypes.c_size_t(len(kernargs))
        config = (ctypes.c_void_p * 5)(int(h.HIP_LAUNCH_PARAM_BUFFER_POINTER), ctypes.addressof(buffer),
                                       int(h.HIP_LAUNCH_PARAM_BUFFER_SIZE), ctypes.addressof(size),
                                       int(h.HIP_LAUNCH_PARAM_END))
        check(h.hipModuleLaunchKernel(function, *grid, block, 1, 1, shared_bytes, _stream(stream), None,
                                      ctypes.addressof(config)), "hipModuleLaunchKernel")
