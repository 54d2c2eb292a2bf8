"""The CUDA driver API through ctypes: the handful of calls the CUDA backend makes.

No pycuda: contexts, modules, memory and launches are plain driver calls, so any thread
can make the right primary context current (``cuCtxSetCurrent``) and a launch takes a
raw stream handle from any library (torch, cupy, pycuda, an int).  ``Driver`` wraps a
loaded ``libcuda``; tests give it a fake library with the same function names.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from collections.abc import Callable
from typing import Any

from ...core.errors import LaunchError

CUDA_SUCCESS = 0
CUDA_ERROR_NOT_READY = 600
CU_POINTER_ATTRIBUTE_CONTEXT = 1
CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39
CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81
CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82
CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106
CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK = 111
CU_EVENT_DISABLE_TIMING = 2
# the `extra` launch array: a packed argument buffer and its size
CU_LAUNCH_PARAM_END = 0
CU_LAUNCH_PARAM_BUFFER_POINTER = 1
CU_LAUNCH_PARAM_BUFFER_SIZE = 2

_p = ctypes.c_void_p
_u = ctypes.c_uint
_SIGNATURES: dict[str, list[Any]] = {
    "cuInit": [_u],
    "cuDeviceGetCount": [ctypes.POINTER(ctypes.c_int)],
    "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
    "cuDeviceGetName": [ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
    "cuDeviceGetAttribute": [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int],
    "cuDevicePrimaryCtxRetain": [ctypes.POINTER(_p), ctypes.c_int],
    "cuCtxGetCurrent": [ctypes.POINTER(_p)],
    "cuCtxSetCurrent": [_p],
    "cuCtxGetDevice": [ctypes.POINTER(ctypes.c_int)],
    "cuCtxPushCurrent_v2": [_p],
    "cuCtxPopCurrent_v2": [ctypes.POINTER(_p)],
    "cuModuleLoadData": [ctypes.POINTER(_p), ctypes.c_char_p],
    "cuModuleGetFunction": [ctypes.POINTER(_p), _p, ctypes.c_char_p],
    "cuFuncSetAttribute": [_p, ctypes.c_int, ctypes.c_int],
    "cuFuncGetAttribute": [ctypes.POINTER(ctypes.c_int), ctypes.c_int, _p],
    "cuModuleUnload": [_p],
    "cuLaunchKernel": [_p, _u, _u, _u, _u, _u, _u, _u, _p, _p, ctypes.c_char_p],  # extra: packed void*[5]
    "cuPointerGetAttribute": [_p, ctypes.c_int, ctypes.c_uint64],
    "cuMemAlloc_v2": [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t],
    "cuMemFree_v2": [ctypes.c_uint64],
    "cuMemcpyHtoDAsync_v2": [ctypes.c_uint64, _p, ctypes.c_size_t, _p],
    "cuMemcpyDtoHAsync_v2": [_p, ctypes.c_uint64, ctypes.c_size_t, _p],
    "cuEventCreate": [ctypes.POINTER(_p), _u],
    "cuEventRecord": [_p, _p],
    "cuEventQuery": [_p],
    "cuEventDestroy_v2": [_p],
    "cuGetErrorName": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
    "cuStreamIsCapturing": [_p, ctypes.POINTER(ctypes.c_int)],
    "cuStreamSynchronize": [_p],
    # TMA (tensor_map.py): map out, data type, rank, address, dims, byte strides, box, element
    # strides, interleave, swizzle, L2 promotion, out-of-bounds fill
    "cuTensorMapEncodeTiled": [_p, ctypes.c_int, _u, _p, _p, _p, _p, _p, ctypes.c_int, ctypes.c_int,
                               ctypes.c_int, ctypes.c_int],
}
# stand-in libraries (and drivers before CUDA 12 for the last two) may leave these out
OPTIONAL = frozenset({"cuStreamIsCapturing", "cuStreamSynchronize", "cuTensorMapEncodeTiled",
                      "cuFuncGetAttribute", "cuModuleUnload"})
CU_STREAM_CAPTURE_STATUS_NONE = 0


# Where every C argument travels in its own 64-bit register or stack slot, the launch's unsigned
# ints can be declared c_void_p: ctypes converts those about a third faster than c_uint.
_WIDE_SLOTS = platform.machine().lower() in ("x86_64", "amd64", "aarch64", "arm64") and ctypes.sizeof(_p) == 8


class CUDAError(LaunchError):
    """A CUDA driver call failed; the message names the call and the driver's error."""


def load_library(path: str = "libcuda.so.1") -> Any:
    """libcuda (or a stand-in at ``path``) with argument types declared; OSError when absent."""
    lib = ctypes.CDLL(path)
    for name, argtypes in _SIGNATURES.items():
        try:
            function = getattr(lib, name)
        except AttributeError:  # a driver that exports only the unversioned name
            try:
                function = getattr(lib, name.removesuffix("_v2"))
            except AttributeError:
                if name in OPTIONAL:
                    continue
                raise
            setattr(lib, name, function)
        function.argtypes = argtypes
        function.restype = ctypes.c_int
    return lib


class Driver:
    """Typed, checked wrappers over a libcuda (real or fake)."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib

    def check(self, status: int, what: str) -> None:
        if status != CUDA_SUCCESS:
            name = ctypes.c_char_p()
            try:
                self.lib.cuGetErrorName(status, ctypes.byref(name))
            except Exception:  # a fake or broken library: the number still says what failed
                pass
            label = name.value.decode() if name.value else "unknown error"
            raise CUDAError(f"{what} failed: CUDA error {status} ({label})")

    def _out(self, kind: Any, call: str, *args: Any) -> Any:
        value = kind()
        self.check(getattr(self.lib, call)(ctypes.byref(value), *args), call)
        return value.value

    # -- devices and contexts ------------------------------------------------------
    def init(self) -> None:
        self.check(self.lib.cuInit(0), "cuInit")

    def device_count(self) -> int:
        return int(self._out(ctypes.c_int, "cuDeviceGetCount"))

    def device_attribute(self, attribute: int, device: int) -> int:
        return int(self._out(ctypes.c_int, "cuDeviceGetAttribute", attribute, device))

    def device_name(self, device: int) -> str:
        name = ctypes.create_string_buffer(256)
        self.check(self.lib.cuDeviceGetName(name, 256, device), "cuDeviceGetName")
        return name.value.decode()

    def primary_context(self, device: int) -> int:
        return int(self._out(_p, "cuDevicePrimaryCtxRetain", device) or 0)

    def current_context(self) -> int:
        value = _p()  # (asked on every launch: no generic helper in the way)
        status = self.lib.cuCtxGetCurrent(ctypes.byref(value))
        if status:
            self.check(status, "cuCtxGetCurrent")
        return value.value or 0

    def context_reader(self) -> Callable[[], int]:
        """A cheaper ``current_context`` for the launch path: with the GIL (the call holds it,
        so one shared out-value is safe) the query is a PyDLL call on a preallocated pointer."""
        handle = getattr(self.lib, "_handle", None)
        gil = getattr(sys, "_is_gil_enabled", lambda: True)()
        if handle is None or not gil:  # a fake library, or free-threaded Python
            return self.current_context
        query = ctypes.PyDLL(None, handle=handle).cuCtxGetCurrent
        query.argtypes, query.restype = [ctypes.POINTER(_p)], ctypes.c_int
        box = _p()
        out = ctypes.byref(box)

        def current() -> int:
            if query(out):
                return self.current_context()  # raises with the driver's message
            return box.value or 0
        return current

    def launch_function(self) -> Any:
        """``cuLaunchKernel`` for the launch path (every argument an int or None, ``extra`` a
        bytes object holding the packed void*[5]); see ``_WIDE_SLOTS``."""
        handle = getattr(self.lib, "_handle", None)
        if handle is None or not _WIDE_SLOTS:
            return self.lib.cuLaunchKernel
        launch = ctypes.CDLL(None, handle=handle).cuLaunchKernel
        launch.argtypes, launch.restype = [_p] * 11, ctypes.c_int
        return launch

    def native_address(self, name: str) -> int:
        """The address of the library's function ``name`` (0 for a library that is not native)."""
        if getattr(self.lib, "_handle", None) is None:
            return 0
        return int(ctypes.cast(getattr(self.lib, name), _p).value or 0)

    def set_current(self, context: int) -> None:
        self.check(self.lib.cuCtxSetCurrent(context), "cuCtxSetCurrent")

    def push(self, context: int) -> None:
        self.check(self.lib.cuCtxPushCurrent_v2(context), "cuCtxPushCurrent")

    def pop(self) -> None:
        self._out(_p, "cuCtxPopCurrent_v2")

    def context_device(self) -> int:
        return int(self._out(ctypes.c_int, "cuCtxGetDevice"))

    def pointer_attribute(self, attribute: int, address: int) -> int:
        value = ctypes.c_uint64(0) if attribute == CU_POINTER_ATTRIBUTE_CONTEXT else ctypes.c_int(-1)
        self.check(self.lib.cuPointerGetAttribute(ctypes.byref(value), attribute, address),
                   f"cuPointerGetAttribute({attribute}) of address {address:#x}")
        return int(value.value)

    # -- modules and launches ------------------------------------------------------
    def load_module(self, image: bytes) -> int:
        return int(self._out(_p, "cuModuleLoadData", image))

    def get_function(self, module: int, name: str) -> int:
        return int(self._out(_p, "cuModuleGetFunction", module, name.encode()))

    def function_attribute(self, function: int, attribute: int) -> int | None:
        """A CUfunction attribute (registers, local bytes, ...), or None where the library lacks the call."""
        if not hasattr(self.lib, "cuFuncGetAttribute"):
            return None
        return int(self._out(ctypes.c_int, "cuFuncGetAttribute", attribute, function))

    def unload_module(self, module: int) -> None:
        if hasattr(self.lib, "cuModuleUnload"):
            self.check(self.lib.cuModuleUnload(module), "cuModuleUnload")

    def set_max_dynamic_shared(self, function: int, nbytes: int) -> None:
        self.check(self.lib.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                               nbytes), "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")

    # -- memory and events ---------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        return int(self._out(ctypes.c_uint64, "cuMemAlloc_v2", max(nbytes, 1)))

    def free(self, address: int) -> None:
        self.check(self.lib.cuMemFree_v2(address), "cuMemFree")

    def copy_to_device(self, address: int, host: int, nbytes: int, stream: int) -> None:
        self.check(self.lib.cuMemcpyHtoDAsync_v2(address, host, nbytes, stream), "cuMemcpyHtoDAsync")

    def copy_to_host(self, host: int, address: int, nbytes: int, stream: int) -> None:
        self.check(self.lib.cuMemcpyDtoHAsync_v2(host, address, nbytes, stream), "cuMemcpyDtoHAsync")

    def record_event(self, stream: int) -> int:
        event = int(self._out(_p, "cuEventCreate", CU_EVENT_DISABLE_TIMING) or 0)
        self.check(self.lib.cuEventRecord(event, stream), "cuEventRecord")
        return event

    def event_done(self, event: int) -> bool:
        status = self.lib.cuEventQuery(event)
        if status == CUDA_ERROR_NOT_READY:
            return False
        self.check(status, "cuEventQuery (an error in the kernel or a copy)")
        return True

    def stream_capturing(self, stream: int) -> bool:
        """Whether ``stream`` is capturing a CUDA graph (False where the library cannot tell)."""
        query = getattr(self.lib, "cuStreamIsCapturing", None)
        if query is None:
            return False
        status = ctypes.c_int(CU_STREAM_CAPTURE_STATUS_NONE)
        self.check(query(stream, ctypes.byref(status)), "cuStreamIsCapturing")
        return status.value != CU_STREAM_CAPTURE_STATUS_NONE

    def destroy_event(self, event: int) -> None:
        self.check(self.lib.cuEventDestroy_v2(event), "cuEventDestroy")
