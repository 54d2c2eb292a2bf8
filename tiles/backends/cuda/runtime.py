"""Where and how a CUDA kernel runs: device, context, stream, arguments, launch.

A launch runs on the device that holds its array arguments (torch ``get_device()``,
DLPack's device, or the driver's answer for a ``__cuda_array_interface__`` pointer);
with only host arrays, on torch's current device (when torch has initialized CUDA),
else the device of the thread's current context, else device 0.  The device's primary
context (the one torch and cupy use) is made current in the calling thread, so any
thread can launch; when the thread had *another* context current it is pushed over and
popped after the launch.  A module is loaded once per context.

The stream is the caller's ``stream=`` (an int handle, torch/cupy/pycuda stream objects,
or anything with ``__cuda_stream__``), else the current torch stream of that device when
torch has initialized CUDA (or cupy's, for cupy arrays), else the legacy default stream.
Host arrays are copied in and out on that stream; the wait for the copy back polls an
event, so Ctrl-C is not held up by a long kernel.
"""

from __future__ import annotations

import ctypes
import struct
import sys
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.errors import LaunchError
from .. import dlpack
from ..base import LaunchArg
from ..staging import HostSpan, host_pointer
from ..streams import stream_handle
from ..waiting import poll_until
from . import driver as cu
from . import occupancy
from .driver import Driver, load_library

# CPython keeps a bytes object's data inline, this many bytes after the object's address:
# the packed argument buffer's address without building a ctypes object per launch.
BYTES_DATA_OFFSET = bytes.__basicsize__ - 1
EXTRA = struct.Struct("@5Q")

_lock = threading.RLock()
_contexts: dict[int, int] = {}


_driver: Driver | None = None
# bumped by use_driver: native launchers built on an earlier driver read it and step aside
driver_generation = ctypes.c_uint64(0)


_driver_error: Exception | None = None


def driver() -> Driver:
    """The initialized driver (raises when there is no libcuda or no device; tried once)."""
    global _driver, _driver_error
    if _driver is None:
        with _lock:
            if _driver_error is not None:
                raise _driver_error
            if _driver is None:
                try:
                    drv = Driver(load_library())
                    drv.init()
                    if drv.device_count() == 0:
                        raise RuntimeError("no CUDA device")
                except Exception as e:
                    _driver_error = e
                    raise
                _driver = drv
    return _driver


def use_driver(drv: Driver | None) -> None:
    """Replace the driver (tests run the launch path over a fake libcuda); None: the real one."""
    global _driver, _driver_error
    _driver, _driver_error = drv, None
    driver_generation.value += 1
    _contexts.clear()
    _archs.clear()
    _abandoned.clear()


def primary_context(device: int) -> int:
    """The device's primary context, retained once per process."""
    context = _contexts.get(device)
    if context is None:
        drv = driver()
        count = drv.device_count()
        if not 0 <= device < count:
            raise LaunchError(f"CUDA device {device} does not exist ({count} visible)")
        with _lock:
            context = _contexts.get(device)
            if context is None:
                context = _contexts[device] = drv.primary_context(device)
    return context


def make_current(context: int) -> bool:
    """Make ``context`` current in this thread; True when another context was pushed over
    (the caller then calls ``driver().pop()`` after its work)."""
    drv = driver()
    current = drv.current_context()
    if current == context:
        return False
    if current == 0:
        drv.set_current(context)
        return False
    drv.push(context)
    return True


def current_device() -> int:
    """The device for a launch whose arrays are all on the host."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return int(torch.cuda.current_device())
    drv = driver()
    if drv.current_context():
        return drv.context_device()
    return 0


def set_current_device(device: int) -> None:
    """Make ``device`` current for this thread (its primary context; torch's device too)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.set_device(device)
    driver().set_current(primary_context(device))


_archs: dict[int, str] = {}


def device_arch(device: int | None = None) -> str:
    """``sm_90a`` for an H100/H200: asked once per device (jit cache keys ask on every launch)."""
    device = current_device() if device is None else device
    arch = _archs.get(device)
    if arch is None:
        drv = driver()
        major = drv.device_attribute(cu.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device)
        minor = drv.device_attribute(cu.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device)
        arch = _archs[device] = f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")
    return arch


# Triton's get_device_properties keys -> CUdevice_attribute
PROPERTY_ATTRIBUTES = {"max_threads_per_block": 1, "warpSize": 10, "max_num_regs": 12, "sm_clock_rate": 13,
                       "multiprocessor_count": 16, "mem_clock_rate": 36, "mem_bus_width": 37,
                       "max_shared_mem": 97}  # 97: the opt-in maximum per block


_sm_counts: dict[int, int] = {}


def multiprocessor_count(device: int) -> int:
    count = _sm_counts.get(device)
    if count is None:
        count = _sm_counts[device] = driver().device_attribute(PROPERTY_ATTRIBUTES["multiprocessor_count"], device)
    return count


def device_properties(device: int) -> dict[str, int]:
    drv = driver()
    return {key: drv.device_attribute(attribute, device) for key, attribute in PROPERTY_ATTRIBUTES.items()}


def device_name(device: int | None = None) -> str:
    return driver().device_name(current_device() if device is None else device)


# -- where an argument lives -----------------------------------------------------------
def is_cuda_tensor(v: Any) -> bool:
    """A torch CUDA tensor (the common, fast case)."""
    return getattr(v, "is_cuda", False) is True


def _pointer_place(address: int) -> tuple[int, int]:
    """(device, context) of a device address; context 0 means the device's primary context."""
    drv = driver()
    device = drv.pointer_attribute(cu.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address)
    try:
        owner = drv.pointer_attribute(cu.CU_POINTER_ATTRIBUTE_CONTEXT, address)
    except cu.CUDAError:  # memory from a pool or virtual memory management has no one context
        owner = 0
    return device, (0 if owner in (0, primary_context(device)) else owner)


def device_address(arg: LaunchArg) -> tuple[int, int, int] | None:
    """(address, device, context or 0) of device memory, or None for host memory to stage."""
    v = arg.value
    if getattr(v, "is_cuda", None) is not None:  # torch: a CPU tensor is refused, as Triton does
        if not v.is_cuda:
            raise LaunchError(f"argument {arg.name!r} is a torch tensor on {v.device}; the cuda backend "
                              "needs it on the GPU (tensor.cuda()) or as a NumPy array")
        return v.data_ptr(), v.get_device(), 0
    if hasattr(v, "gpudata"):  # pycuda GPUArray
        return (int(v.gpudata), *_pointer_place(int(v.gpudata)))
    if hasattr(v, "__cuda_array_interface__"):
        address = int(v.__cuda_array_interface__["data"][0])
        device = getattr(getattr(v, "device", None), "id", None)  # cupy
        return (address, device, 0) if isinstance(device, int) else (address, *_pointer_place(address))
    kind = dlpack.device_type(v)
    if kind == dlpack.DLPACK_CUDA:
        address, contiguous = dlpack.data_address(v)
        if not contiguous:
            raise LaunchError(f"argument {arg.name!r}: a non-contiguous DLPack tensor; pass a contiguous one")
        return address, int(v.__dlpack_device__()[1]), 0
    if kind is not None and kind != dlpack.DLPACK_CPU and not isinstance(v, np.ndarray):
        raise LaunchError(f"argument {arg.name!r} is a DLPack tensor on device type {kind}; the cuda "
                          "backend needs CUDA memory (type 2) or host memory")
    return None


class Staging:
    """Host arrays copied to the device on a stream, and back after the launch when written."""

    def __init__(self, stream: int) -> None:
        self.stream = stream
        self.buffers: list[int] = []
        self.written: list[tuple[HostSpan, int]] = []

    def address(self, arg: LaunchArg) -> int:
        from ..interpreter import host_array
        try:
            span = HostSpan(host_array(arg.value))
        except TypeError as e:
            raise LaunchError(f"argument {arg.name!r}: cannot pass a {type(arg.value).__name__} to the cuda "
                              f"backend ({e})") from None
        drv = driver()
        if not self.buffers and drv.stream_capturing(self.stream):
            raise LaunchError(f"argument {arg.name!r} is a host array, but the launch's stream is capturing a "
                              "CUDA graph: copies to and from the host cannot be captured; pass a torch CUDA "
                              "tensor (see docs/torch.md)")
        buffer = drv.alloc(span.nbytes)
        self.buffers.append(buffer)
        if span.nbytes:
            drv.copy_to_device(buffer, host_pointer(span.bytes), span.nbytes, self.stream)
        if arg.writable:
            self.written.append((span, buffer))
        return buffer + span.offset

    def finish(self) -> None:
        """Wait for the kernel (polling), copy written arrays back, free the device copies."""
        if not self.buffers:
            return
        drv = driver()
        self._wait(drv)
        received = []
        for span, buffer in self.written:
            host = span.host_buffer()
            if span.nbytes:
                drv.copy_to_host(host_pointer(host), buffer, span.nbytes, self.stream)
            received.append((span, host))
        if received:
            self._wait(drv)
        for span, host in received:
            span.write_back(host)
        self.release()

    def _wait(self, drv: Driver) -> None:
        event = drv.record_event(self.stream)
        try:
            poll_until(lambda: drv.event_done(event))
        except KeyboardInterrupt:  # the kernel still uses the buffers: free them once it is done
            _abandoned.append((drv.current_context(), event, self.buffers))
            self.buffers = []
            raise
        drv.destroy_event(event)

    def release(self) -> None:
        drv = driver()
        buffers, self.buffers = self.buffers, []
        for buffer in buffers:
            drv.free(buffer)


_abandoned: list[tuple[int, int, list[int]]] = []  # (context, event, buffers) of interrupted waits


def release_abandoned(context: int) -> None:
    """Free the copies of interrupted launches in ``context`` whose kernels have ended."""
    drv = driver()
    for entry in list(_abandoned):
        owner, event, buffers = entry
        if owner == context and drv.event_done(event):
            _abandoned.remove(entry)
            drv.destroy_event(event)
            for buffer in buffers:
                drv.free(buffer)


# -- kernels ---------------------------------------------------------------------------
def _struct_code(dtype: Any) -> str:
    from ...core.dtypes import PointerType
    if isinstance(dtype, PointerType):
        return "Q"
    if dtype.is_bool:
        return "?"
    if dtype.is_floating:
        return {16: "H" if dtype.name == "bfloat16" else "e", 32: "f", 64: "d"}[dtype.bits]
    return {(8, True): "b", (8, False): "B", (16, True): "h", (16, False): "H", (32, True): "i",
            (32, False): "I", (64, True): "q", (64, False): "Q"}[(dtype.bits, dtype.is_signed)]


def bfloat16_bits(value: Any) -> int:
    import ml_dtypes
    return int(np.asarray(value, ml_dtypes.bfloat16).view(np.uint16))


class LoadedKernel:
    """A PTX kernel: its CUfunction per context and the packing of its arguments."""

    def __init__(self, ptx: str, name: str, param_dtypes: Sequence[Any], shared_bytes: int,
                 threads: int = 0, occupancy: bool = True) -> None:
        self.image = ptx.encode()
        self.name = name
        self.shared_bytes = shared_bytes
        self.threads = threads  # per program; 0: unknown, loaded as ptxas sizes it (occupancy.py)
        self.occupancy = occupancy  # whether it may be loaded again for occupancy (Options.codegen.occupancy)
        # arguments in the native layout of a C struct (what the `extra` buffer launch expects)
        self.codes = "".join(_struct_code(d) for d in param_dtypes) + "iii"  # the grid's sizes last
        self.arguments = struct.Struct("@" + self.codes)
        self.bfloat16 = [i for i, d in enumerate(param_dtypes) if getattr(d, "name", "") == "bfloat16"]
        self.size = struct.pack("@Q", self.arguments.size)  # read by the driver through a pointer
        self.size_address = id(self.size) + BYTES_DATA_OFFSET
        self.functions: dict[int, int] = {}
        self.programs_asked: dict[int, int] = {}  # per context: .minnctapersm given to ptxas, 0 if none

    def function(self, context: int) -> int:
        """The CUfunction in ``context`` (current in this thread), loading the module once."""
        function = self.functions.get(context)
        if function is None:
            with _lock:
                function = self.functions.get(context)
                if function is None:
                    drv = driver()
                    loaded = occupancy.load(drv, self.image, self.name, self.threads, self.shared_bytes,
                                            self.occupancy)
                    function, self.programs_asked[context] = loaded.function, loaded.asked
                    if self.shared_bytes > 48 * 1024:
                        drv.set_max_dynamic_shared(function, self.shared_bytes)
                    self.functions[context] = function
        return function

    def pack(self, values: Sequence[Any]) -> bytes:
        """The argument buffer for ``values`` (the parameters, then the three grid sizes)."""
        if self.bfloat16:
            values = list(values)
            for i in self.bfloat16:
                values[i] = bfloat16_bits(values[i])
        try:
            return self.arguments.pack(*values)
        except (struct.error, OverflowError, TypeError) as e:
            raise LaunchError(f"{self.name}: an argument does not fit its parameter type ({e})") from None

    def launch(self, function: int, grid: tuple[int, int, int], block: int, stream: int,
               packed: bytes) -> None:
        extra = EXTRA.pack(cu.CU_LAUNCH_PARAM_BUFFER_POINTER, id(packed) + BYTES_DATA_OFFSET,
                           cu.CU_LAUNCH_PARAM_BUFFER_SIZE, self.size_address, cu.CU_LAUNCH_PARAM_END)
        drv = driver()
        status = drv.lib.cuLaunchKernel(function, grid[0], grid[1], grid[2], block, 1, 1,
                                        self.shared_bytes, stream, None, extra)
        if status:
            drv.check(status, f"cuLaunchKernel({self.name}, grid={grid}, block={block})")


def place_of(args: Sequence[LaunchArg]) -> tuple[int, int, list[tuple[int, int, int] | None]]:
    """(device, context, per-argument device location or None) for one launch."""
    places = [device_address(a) if a.is_pointer else None for a in args]
    on_device = [(a.name, p) for a, p in zip(args, places) if p is not None]
    if not on_device:
        device = current_device()
        return device, primary_context(device), places
    name, (_, device, context) = on_device[0]
    for other, (_, d, c) in on_device[1:]:
        if (d, c) != (device, context):
            raise LaunchError(f"arguments {name!r} and {other!r} are on different CUDA devices or contexts "
                              f"(cuda:{device} and cuda:{d}); move them to one device")
    return device, context or primary_context(device), places


def launch(loaded: LoadedKernel, grid: tuple[int, int, int], block: int, args: Sequence[LaunchArg],
           stream: Any = None) -> None:
    """The general launch: any mix of device arrays, host arrays and scalars."""
    device, context, places = place_of(args)
    pushed = make_current(context)
    try:
        if _abandoned:
            release_abandoned(context)
        cupy_args = any("cupy" in type(a.value).__module__ for a in args if a.is_pointer)
        handle = stream_handle(stream, device, cupy_args)
        function = loaded.function(context)
        staging = Staging(handle)
        try:
            values = [(place[0] if place is not None else staging.address(a)) if a.is_pointer else a.value
                      for a, place in zip(args, places)]
            loaded.launch(function, grid, block, handle, loaded.pack([*values, *grid]))
            staging.finish()
        except BaseException:
            try:
                staging.release()
            except Exception:  # after a kernel fault the driver refuses frees; report the fault
                pass
            raise
    finally:
        if pushed:
            driver().pop()
