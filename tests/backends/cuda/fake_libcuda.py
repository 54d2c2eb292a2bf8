"""A fake libcuda for testing the CUDA runtime without a GPU.

It keeps what the real driver keeps per process and per thread (primary contexts, the
current context of each thread, device memory, loaded modules) and refuses what the
real one refuses: a launch or copy with no current context fails with
CUDA_ERROR_INVALID_CONTEXT, as in the bug where only the first thread had one.  A
"kernel" is a Python function of (memory, argument bytes); launches are recorded.
"""

from __future__ import annotations

import ctypes
import itertools
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

INVALID_CONTEXT = 201
_instances = itertools.count(1)
NOT_READY = 600


def _set(ref: Any, value: Any) -> None:
    ref._obj.value = value  # ctypes.byref(x)._obj is x


@dataclass
class Launch:
    name: str
    context: int
    stream: int
    grid: tuple[int, int, int]
    block: int
    arguments: bytes
    thread: str


@dataclass
class FakeLibCUDA:
    devices: int = 2
    kernels: dict[str, Callable[[FakeLibCUDA, bytes], None]] = field(default_factory=dict)
    launches: list[Launch] = field(default_factory=list)
    modules_loaded: list[int] = field(default_factory=list)  # the context of each load
    copies: list[tuple[str, int]] = field(default_factory=list)  # (direction, stream)
    pointer_devices: dict[int, int] = field(default_factory=dict)  # allocation base -> device
    capturing: set[int] = field(default_factory=set)  # streams capturing a CUDA graph

    def __post_init__(self) -> None:
        self.local = threading.local()
        # context handles unique to this fake: kernels compiled in one test keep per-context state
        self.context_base = 0x1000 * next(_instances)
        self.memory: dict[int, bytearray] = {}
        self.next_address = 0x7000_0000_0000
        self.functions: dict[int, str] = {}
        self.pending_events: dict[int, int] = {}  # event -> polls left before it is done

    # -- helpers for tests ---------------------------------------------------------
    def primary(self, device: int) -> int:
        return self.context_base + device

    def current(self) -> int:
        return getattr(self.local, "stack", [0])[-1] if getattr(self.local, "stack", None) else 0

    def allocate(self, nbytes: int, device: int = 0) -> int:
        address = self.next_address
        self.next_address += (nbytes + 255) // 256 * 256 + 256
        self.memory[address] = bytearray(nbytes)
        self.pointer_devices[address] = device
        return address

    def find(self, address: int) -> tuple[bytearray, int]:
        for base, mem in self.memory.items():
            if base <= address < base + max(len(mem), 1):
                return mem, address - base
        raise AssertionError(f"address {address:#x} is not device memory")

    def read(self, address: int, nbytes: int) -> bytes:
        mem, at = self.find(address)
        return bytes(mem[at:at + nbytes])

    def write(self, address: int, data: bytes) -> None:
        mem, at = self.find(address)
        mem[at:at + len(data)] = data

    # -- the driver API --------------------------------------------------------------
    def cuInit(self, flags: int) -> int:
        return 0

    def cuDeviceGetCount(self, count: Any) -> int:
        _set(count, self.devices)
        return 0

    def cuDeviceGetAttribute(self, value: Any, attribute: int, device: int) -> int:
        _set(value, {75: 9, 76: 0}.get(attribute, 1000 + attribute))
        return 0

    def cuDeviceGetName(self, name: Any, size: int, device: int) -> int:
        name.value = f"Fake GPU {device}".encode()
        return 0

    def cuDevicePrimaryCtxRetain(self, context: Any, device: int) -> int:
        _set(context, self.primary(device))
        return 0

    def cuCtxGetCurrent(self, context: Any) -> int:
        _set(context, self.current() or None)
        return 0

    def cuCtxSetCurrent(self, context: int) -> int:
        stack = getattr(self.local, "stack", None) or [0]
        stack[-1] = context
        self.local.stack = stack
        return 0

    def cuCtxPushCurrent_v2(self, context: int) -> int:
        self.local.stack = (getattr(self.local, "stack", None) or []) + [context]
        return 0

    def cuCtxPopCurrent_v2(self, context: Any) -> int:
        _set(context, self.local.stack.pop())
        return 0

    def cuCtxGetDevice(self, device: Any) -> int:
        if not self.current():
            return INVALID_CONTEXT
        _set(device, self.current() - self.context_base)
        return 0

    def cuPointerGetAttribute(self, value: Any, attribute: int, address: int) -> int:
        mem, at = self.find(address)
        base = address - at
        device = self.pointer_devices[base]
        _set(value, device if attribute == 9 else self.primary(device))
        return 0

    def cuModuleLoadData(self, module: Any, image: bytes) -> int:
        if not self.current():
            return INVALID_CONTEXT
        assert image.startswith(b"//") or b".entry" in image
        self.modules_loaded.append(self.current())
        _set(module, 0x5000 + len(self.modules_loaded))
        return 0

    def cuModuleGetFunction(self, function: Any, module: int, name: bytes) -> int:
        handle = module * 16 + 1
        self.functions[handle] = name.decode()
        _set(function, handle)
        return 0

    def cuFuncSetAttribute(self, function: int, attribute: int, value: int) -> int:
        return 0

    def cuLaunchKernel(self, function: int, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                       shared: int, stream: Any, params: Any, extra: bytes) -> int:
        if not self.current():
            return INVALID_CONTEXT
        marker, address, size_marker, size_address, end = struct.unpack("@5Q", extra)
        assert (marker, size_marker, end) == (1, 2, 0) and params is None
        size = ctypes.c_uint64.from_address(size_address).value
        arguments = ctypes.string_at(address, size)
        name = self.functions[function]
        self.launches.append(Launch(name, self.current(), int(stream or 0), (gx, gy, gz), bx, arguments,
                                    threading.current_thread().name))
        if name in self.kernels:
            self.kernels[name](self, arguments)
        return 0

    def cuMemAlloc_v2(self, address: Any, nbytes: int) -> int:
        if not self.current():
            return INVALID_CONTEXT
        _set(address, self.allocate(nbytes, self.current() - self.context_base))
        return 0

    def cuMemFree_v2(self, address: int) -> int:
        del self.memory[address]
        return 0

    def cuMemcpyHtoDAsync_v2(self, address: int, host: int, nbytes: int, stream: Any) -> int:
        self.copies.append(("HtoD", int(stream or 0)))
        self.write(address, ctypes.string_at(host, nbytes))
        return 0

    def cuMemcpyDtoHAsync_v2(self, host: int, address: int, nbytes: int, stream: Any) -> int:
        self.copies.append(("DtoH", int(stream or 0)))
        ctypes.memmove(host, self.read(address, nbytes), nbytes)
        return 0

    def cuEventCreate(self, event: Any, flags: int) -> int:
        handle = 0xE000 + len(self.pending_events) + 1
        self.pending_events[handle] = 3  # "running" for a few polls
        _set(event, handle)
        return 0

    def cuEventRecord(self, event: int, stream: Any) -> int:
        return 0

    def cuEventQuery(self, event: int) -> int:
        left = self.pending_events[event]
        if left:
            self.pending_events[event] = left - 1
            return NOT_READY
        return 0

    def cuEventDestroy_v2(self, event: int) -> int:
        return 0

    def cuStreamIsCapturing(self, stream: Any, status: Any) -> int:
        _set(status, 1 if int(stream or 0) in self.capturing else 0)
        return 0

    def cuGetErrorName(self, status: int, name: Any) -> int:
        _set(name, {201: b"CUDA_ERROR_INVALID_CONTEXT"}.get(status, b"CUDA_ERROR_UNKNOWN"))
        return 0


class FakeTensor:
    """Just enough of a torch CUDA tensor for the launcher's fast path."""

    __module__ = "torch"  # the runtime asks the module for cupy; torch tensors say torch

    def __init__(self, lib: FakeLibCUDA, data: bytes, device: int = 0) -> None:
        self.lib = lib
        self.address = lib.allocate(len(data), device)
        lib.write(self.address, data)
        self.device_index = device
        self.is_cuda = True

    def get_device(self) -> int:
        return self.device_index

    def data_ptr(self) -> int:
        return self.address
