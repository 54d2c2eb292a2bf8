"""pycuda side of the CUDA backend: context, module loading, arguments, launch."""

from __future__ import annotations

import atexit
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.errors import LaunchError
from .. import dlpack
from ..base import LaunchArg


@functools.cache
def driver() -> Any:
    """pycuda's driver module with the device's primary context current (shared with torch)."""
    import pycuda.driver as cuda
    cuda.init()
    if cuda.Device.count() == 0:
        raise RuntimeError("no CUDA device")
    ctx = cuda.Device(0).retain_primary_context()
    ctx.push()
    atexit.register(_pop, ctx)
    return cuda


def _pop(ctx: Any) -> None:
    try:
        ctx.pop()
    except Exception:  # the driver may already be shutting down
        pass


def device_arch() -> str:
    cuda = driver()
    major, minor = cuda.Device(0).compute_capability()
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def device_name() -> str:
    return str(driver().Device(0).name())


class LoadedKernel:
    """A CUfunction with a prepared argument signature for cheap launches."""

    def __init__(self, ptx: str, name: str, arg_formats: str, shared_bytes: int) -> None:
        cuda = driver()
        self.module = cuda.module_from_buffer(ptx.encode())
        self.function = self.module.get_function(name)
        self.function.prepare(arg_formats)
        self.shared_bytes = shared_bytes
        if shared_bytes > 48 * 1024:
            attr = cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES
            self.function.set_attribute(attr, shared_bytes)

    def launch(self, grid: tuple[int, int, int], block: int, values: Sequence[Any]) -> None:
        self.function.prepared_call(grid, (block, 1, 1), *values, shared_size=self.shared_bytes)


def is_cuda_tensor(v: Any) -> bool:
    """A torch CUDA tensor (the common, fast case)."""
    return getattr(v, "is_cuda", False) is True


def device_pointer(arg: LaunchArg) -> tuple[int, Any]:
    """(address, host copy-back info) for an array-like argument."""
    v = arg.value
    if getattr(v, "is_cuda", None) is not None:  # torch
        if not v.is_cuda:
            raise LaunchError(f"argument {arg.name!r} is a torch tensor on {v.device}; the cuda "
                              "backend needs it on the GPU (tensor.cuda()) or as a NumPy array")
        return v.data_ptr(), None
    if hasattr(v, "gpudata"):
        return int(v.gpudata), None
    if hasattr(v, "__cuda_array_interface__"):
        return int(v.__cuda_array_interface__["data"][0]), None
    if dlpack.device_type(v) == dlpack.DLPACK_CUDA:
        address, contiguous = dlpack.data_address(v)
        if not contiguous:
            raise LaunchError(f"argument {arg.name!r}: a non-contiguous DLPack tensor; pass a contiguous one")
        return address, None
    if dlpack.device_type(v) is not None and not isinstance(v, np.ndarray):
        raise LaunchError(f"argument {arg.name!r} is a DLPack tensor on device type "
                          f"{dlpack.device_type(v)}; the cuda backend needs CUDA memory (type 2)")
    if isinstance(v, np.ndarray):
        cuda = driver()
        if not (v.flags.c_contiguous or v.flags.f_contiguous):
            raise LaunchError(f"argument {arg.name!r}: non-contiguous NumPy arrays are not supported "
                              "by the cuda backend; pass np.ascontiguousarray(x) or a device array")
        buf = cuda.mem_alloc(max(v.nbytes, 1))
        cuda.memcpy_htod(buf, v)
        return int(buf), (buf, v) if arg.writable else (buf, None)
    raise LaunchError(f"argument {arg.name!r}: cannot pass a {type(v).__name__} to the cuda backend")


def copy_back(pending: Sequence[tuple[Any, Any]]) -> None:
    cuda = driver()
    for buf, host in pending:
        if host is not None:
            cuda.memcpy_dtoh(host, buf)
        buf.free()
