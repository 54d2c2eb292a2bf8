"""pyopencl plumbing: device choice, program builds (cached by source), launches."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ...core.dtypes import PointerType
from ...core.errors import LaunchError
from ..base import CompiledKernel, LaunchArg

BUILD_OPTIONS = ["-cl-fp32-correctly-rounded-divide-sqrt"]


@lru_cache(maxsize=1)
def device() -> tuple[Any, Any, Any]:
    """(context, queue, device): TILES_OPENCL_DEVICE, else the first GPU, else any device."""
    import pyopencl as cl
    choice = os.environ.get("TILES_OPENCL_DEVICE", "").strip()
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    if not devices:
        raise RuntimeError("no OpenCL device found")
    if choice:
        if choice.isdigit():
            picked = devices[int(choice)] if int(choice) < len(devices) else None
        else:
            picked = next((d for d in devices if choice.lower() in
                           f"{d.platform.name} {d.name}".lower()), None)
        if picked is None:
            names = ", ".join(f"{i}: {d.platform.name} / {d.name}" for i, d in enumerate(devices))
            raise RuntimeError(f"TILES_OPENCL_DEVICE={choice!r} matches no device ({names})")
    else:
        gpus = [d for d in devices if d.type & cl.device_type.GPU]
        others = [d for d in devices if not d.type & cl.device_type.GPU]
        picked = next((d for d in gpus + others if _can_build(d)), None)
        if picked is None:
            raise RuntimeError("no OpenCL device can build a kernel (for CPUs newer than the "
                               "bundled pocl knows, install the distribution's pocl-opencl-icd)")
    ctx = cl.Context([picked])
    return ctx, cl.CommandQueue(ctx), picked


def _can_build(dev: Any) -> bool:
    """Some pocl builds list a CPU they cannot compile for; try a tiny kernel first."""
    import pyopencl as cl
    try:
        cl.Program(cl.Context([dev]), "__kernel void probe(__global int* a) { a[0] = 1; }").build()
        return True
    except Exception:
        return False


def has_fp64() -> bool:
    dev = device()[2]
    return "cl_khr_fp64" in dev.extensions or bool(getattr(dev, "double_fp_config", 0))


_programs: dict[str, Any] = {}


def build(source: str) -> Any:
    import pyopencl as cl
    program = _programs.get(source)
    if program is None:
        program = cl.Program(device()[0], source).build(options=BUILD_OPTIONS)
        _programs[source] = program
    return program


def _buffer(arg: LaunchArg, copies: list[tuple[np.ndarray, Any]]) -> Any:
    import pyopencl as cl
    import pyopencl.array as cla
    value = arg.value
    if isinstance(value, cla.Array):
        if value.offset:
            raise LaunchError(f"argument {arg.name}: pyopencl arrays with an offset are not supported; "
                              "pass the base array and add the offset in the kernel")
        return value.base_data
    from ..interpreter import host_array
    arr = host_array(value)
    if arr.size and not arr.flags.c_contiguous:
        raise LaunchError(f"argument {arg.name}: the OpenCL backend copies NumPy arrays to the device "
                          "and needs them C-contiguous; pass np.ascontiguousarray(...) or a pyopencl array")
    ctx = device()[0]
    flags = cl.mem_flags.READ_WRITE
    if arr.nbytes == 0:
        return cl.Buffer(ctx, flags, 16)
    buf = cl.Buffer(ctx, flags | cl.mem_flags.COPY_HOST_PTR, hostbuf=arr)
    if arg.writable:
        copies.append((arr, buf))
    return buf


def launch(compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[LaunchArg]) -> None:
    import pyopencl as cl
    ctx, queue, _ = device()
    kernel = compiled.metadata.get("kernel")
    if kernel is None:
        kernel = compiled.metadata["kernel"] = cl.Kernel(compiled.metadata["program"],
                                                         compiled.metadata["entry"])
    threads = compiled.metadata["threads"]
    copies: list[tuple[np.ndarray, Any]] = []
    values = []
    for param, arg in zip(compiled.ir.params, args):
        dt = param.value.type.dtype
        if isinstance(dt, PointerType):
            values.append(_buffer(arg, copies))
        elif dt.is_bool:
            values.append(np.uint8(bool(arg.value)))
        else:
            values.append(dt.np.type(arg.value))
    kernel.set_args(*values)
    cl.enqueue_nd_range_kernel(queue, kernel, (grid[0] * threads, grid[1], grid[2]),
                               (threads, 1, 1))
    if copies:  # NumPy arguments: wait and copy back; device arrays stay asynchronous
        for arr, buf in copies:
            cl.enqueue_copy(queue, arr, buf)
        queue.finish()
