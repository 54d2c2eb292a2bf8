"""Launchers of compiled CUDA kernels: ``launcher(grid, values, stream=None)``.

``general`` takes any mix of torch CUDA tensors, host arrays, DLPack/CUDA-array-interface
objects and scalars, and works out device, context and stream on every call (``runtime``).

``keyed`` serves one launch key of the jit's cache, whose facts fix each argument's type,
dtype and device (``runtime/binder.py``).  When every pointer argument is a torch CUDA tensor
on one device, everything but the argument values is settled once: the device, its primary
context and the kernel's CUfunction in it, the struct layout of the arguments, torch's
current-stream query.  A launch asks torch for the current stream (the capturing one under CUDA
graph capture), packs it, the tensors' ``data_ptr()``s, the scalars and the grid with one
``struct.pack`` and makes one native call (``trampoline``): it checks that the thread's current
context is the kernel's (else the general path runs, which makes it current) and calls
``cuLaunchKernel``.  No allocation on the device, no host synchronization, no copy.  Where the
trampoline cannot be built (no JIT, a stand-in driver written in Python), the same launch takes
two ctypes calls: ``cuCtxGetCurrent`` and ``cuLaunchKernel``.

A keyed launcher carries attributes for the jit's binder (``runtime/binder.py``): ``device`` (the
arguments fix it), and with the trampoline ``direct`` (``direct(stream, grid, *values)`` with each
tensor given as its address: ``direct_launch``'s native builtin, or a Python form where that cannot
be built) and ``failed`` (raises for a failed status); with the native direct launch also
``make_hot`` (``hot_launch.make`` for this direct launch: the jit's native inline cache) and
``link_hot``/``retire_hot`` (``hot_launch.link``/``retire``: chains them, drops one).
"""

from __future__ import annotations

import functools
import struct
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ....core.errors import LaunchError
from ...base import CompiledKernel, LaunchPlan
from .. import driver as cu
from .. import runtime
from . import direct_launch, hot_launch, trampoline

Launcher = Callable[..., None]
Plan = LaunchPlan

# STAND-IN LIBCUDA ONLY (benchmarks/cuda_launch_path_stub.py --torch, tests): when set, torch CPU
# tensors (device -1) count as tensors on this CUDA device, so real torch tensors can drive the
# keyed launch over a driver with no GPU.  Never set with a real libcuda.
stub_cpu_device: int | None = None


def general(compiled: CompiledKernel, loaded: runtime.LoadedKernel, plan: Plan) -> Launcher:
    """A launcher for any arguments; torch CUDA tensors and scalars skip ``LaunchArg`` objects."""
    block = compiled.threads
    indices = [p.position for p in plan]
    pointers = [p.position for p in plan if p.is_pointer]
    pointer_set = set(pointers)
    is_cuda_tensor = runtime.is_cuda_tensor

    def slow(grid: tuple[int, int, int], values: Sequence[Any], stream: Any) -> None:
        args = [p.arg(values) for p in plan]
        runtime.launch(loaded, grid, block, args, stream)

    def launcher(grid: tuple[int, int, int], values: Sequence[Any], stream: Any = None) -> None:
        tensors = [values[i] for i in pointers]
        if not tensors or False in [is_cuda_tensor(v) for v in tensors]:
            return slow(grid, values, stream)
        devices = {v.get_device() for v in tensors}
        if len(devices) > 1:  # the general path names the arguments in its error
            return slow(grid, values, stream)
        device = devices.pop()
        context = runtime.primary_context(device)
        pushed = runtime.make_current(context)
        try:
            function = loaded.functions.get(context) or loaded.function(context)
            handle = runtime.stream_handle(stream, device)
            packed = loaded.pack([values[i].data_ptr() if i in pointer_set else values[i]
                                  for i in indices] + list(grid))
            loaded.launch(function, grid, block, handle, packed)
        finally:
            if pushed:
                runtime.driver().pop()
        return None
    return launcher


def _torch_device(values: Sequence[Any], pointers: Sequence[int]) -> int | None:
    """The one device of ``values``' pointer arguments when all are torch CUDA tensors (or
    subclasses such as ``nn.Parameter``: the launch key holds each argument's type)."""
    torch = sys.modules.get("torch")
    tensor = getattr(torch, "Tensor", None)
    if tensor is None or not pointers:
        return None
    devices = set()
    for i in pointers:
        v = values[i]
        if not isinstance(v, tensor):
            return None
        if getattr(v, "is_cuda", False) is not True:
            if stub_cpu_device is None or v.get_device() != -1:
                return None
            devices.add(stub_cpu_device)  # the stand-in's stub mode (see stub_cpu_device)
            continue
        devices.add(v.get_device())
    return devices.pop() if len(devices) == 1 else None


def _raw_stream_query() -> Callable[[int], int]:
    torch = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw  # type: ignore[no-any-return]
    return lambda device: int(torch.cuda.current_stream(device).cuda_stream)


def keyed(compiled: CompiledKernel, loaded: runtime.LoadedKernel, plan: Plan,
          example: Sequence[Any]) -> Launcher:
    """A launcher for values with the types, dtypes and devices of ``example`` (see the module
    docstring); ``general``'s when they are not all torch tensors on one CUDA device."""
    fallback = general(compiled, loaded, plan)
    device = _torch_device(example, [p.position for p in plan if p.is_pointer])
    if device is None:
        return fallback
    drv = runtime.driver()
    context = runtime.primary_context(device)
    pushed = runtime.make_current(context)
    try:
        function = loaded.function(context)
    finally:
        if pushed:
            drv.pop()
    bfloat16 = {p.position for n, p in enumerate(plan) if n in loaded.bfloat16}  # kernel params
    arguments = ", ".join(f"values[{p.position}].data_ptr()" if p.is_pointer else f"_bf16(values[{p.position}])"
                          if p.position in bfloat16 else f"values[{p.position}]" for p in plan)
    record = struct.Struct(trampoline.record_format(loaded.codes))
    native = trampoline.make(drv.native_address("cuCtxGetCurrent"), drv.native_address("cuLaunchKernel"),
                             context, function, compiled.threads, loaded.shared_bytes, record.size) \
        if trampoline.enabled else None
    namespace: dict[str, Any] = {
        "_runtime": runtime, "_driver": drv, "_general": fallback, "_bf16": runtime.bfloat16_bits,
        "_pack_errors": (struct.error, OverflowError, TypeError, ValueError),
        "_raw_stream": _raw_stream_query(), "_stream_handle": runtime.stream_handle, "_device": device,
        "_failed": _failure(drv, loaded, compiled.threads), "_grid3": _grid3,
    }
    if native is not None:
        namespace.update(_pack=record.pack, _native=native, _FALLBACK=trampoline.FALLBACK)
        direct_arguments = ", ".join(f"_bf16(v{p.position})" if p.position in bfloat16 else f"v{p.position}"
                                     for p in plan)
        source = _NATIVE_SOURCE.format(arguments=arguments) + _DIRECT_SOURCE.format(
            params="".join(f", v{i}" for i in range(len(example))), arguments=direct_arguments)
    else:
        namespace.update(
            _pack=loaded.arguments.pack, _current=drv.context_reader(), _context=context,
            _launch=drv.launch_function(), _function=function, _block=compiled.threads,
            _shared=loaded.shared_bytes, _extra=runtime.EXTRA.pack, _id=id,
            _offset=runtime.BYTES_DATA_OFFSET, _size=loaded.size_address)
        source = _CTYPES_SOURCE.format(arguments=arguments, buffer=cu.CU_LAUNCH_PARAM_BUFFER_POINTER,
                                       size=cu.CU_LAUNCH_PARAM_BUFFER_SIZE, end=cu.CU_LAUNCH_PARAM_END)
    exec(source, namespace)  # noqa: S102 - built from the plan's indices only
    launcher: Launcher = namespace["launcher"]
    launcher.device = device  # type: ignore[attr-defined]  # the arguments fix the device (jit's FastLaunch)
    if native is not None:  # the jit's binder calls it with the tensors' addresses (runtime/binder.py)
        codes: list[str | None] = [None] * len(example)
        for n, p in enumerate(plan):
            codes[p.position] = loaded.codes[n]
        fully_native = None if bfloat16 else direct_launch.make(
            drv.native_address("cuCtxGetCurrent"), drv.native_address("cuLaunchKernel"), context, function,
            compiled.threads, loaded.shared_bytes, codes, runtime.driver_generation, namespace["_raw_stream"],
            device)
        launcher.direct = fully_native or namespace["direct"]  # type: ignore[attr-defined]
        launcher.failed = namespace["_failed"]  # type: ignore[attr-defined]
        if fully_native is not None:  # the jit's hot launch of one key (runtime/hot_path.py)
            launcher.make_hot = functools.partial(hot_launch.make, fully_native)  # type: ignore[attr-defined]
            launcher.link_hot = hot_launch.link  # type: ignore[attr-defined]
            launcher.retire_hot = hot_launch.retire  # type: ignore[attr-defined]
    return launcher


_STREAM = """
    if stream is None:
        handle = _raw_stream(_device)
    else:
        handle = stream if type(stream) is int else _stream_handle(stream, _device)"""

# one native call: the trampoline checks the current context and calls cuLaunchKernel
_NATIVE_SOURCE = """
def launcher(grid, values, stream=None):
    if _runtime._driver is not _driver:
        return _general(grid, values, stream)""" + _STREAM + """
    try:
        record = _pack(handle, {arguments}, grid[0], grid[1], grid[2])
    except _pack_errors:
        return _general(grid, values, stream)  # says which argument does not fit
    status = _native(record)
    if status:
        if status == _FALLBACK:
            return _general(grid, values, stream)  # makes the kernel's context current
        _failed(status, grid)
"""

# the same from the binder: ``direct(stream, grid, *values)`` with each tensor given as its
# address; returns 0 (launched), FALLBACK (the caller takes the launcher) or a failure status
_DIRECT_SOURCE = """
def direct(stream, grid{params}):
    launch_grid = _grid3(grid)
    if launch_grid is None or _runtime._driver is not _driver:
        return _FALLBACK
    if stream is None:
        handle = _raw_stream(_device)
    elif type(stream) is int:
        handle = stream
    else:
        return _FALLBACK
    try:
        record = _pack(handle, {arguments}, *launch_grid)
    except _pack_errors:
        return _FALLBACK
    return _native(record)
"""

# without the trampoline: cuCtxGetCurrent (PyDLL) and cuLaunchKernel (CDLL) through ctypes
_CTYPES_SOURCE = """
def launcher(grid, values, stream=None):
    if _current() != _context or _runtime._driver is not _driver:
        return _general(grid, values, stream)
    try:
        packed = _pack({arguments}, grid[0], grid[1], grid[2])
    except _pack_errors:
        return _general(grid, values, stream)  # says which argument does not fit""" + _STREAM + """
    status = _launch(_function, grid[0], grid[1], grid[2], _block, 1, 1, _shared, handle, None,
                     _extra({buffer}, _id(packed) + _offset, {size}, _size, {end}))
    if status:
        _failed(status, grid)
"""


def _grid3(grid: Any) -> tuple[int, ...] | None:
    """A tuple of one to three ints in 1 .. 2**31 - 1 as three sizes; None for anything else."""
    if type(grid) is not tuple or not 1 <= len(grid) <= 3:
        return None
    for size in grid:
        if type(size) is not int or not 0 < size < 2**31:
            return None
    return grid + (1,) * (3 - len(grid))


def _failure(drv: cu.Driver, loaded: runtime.LoadedKernel, block: int
             ) -> Callable[[int, tuple[int, int, int]], None]:
    def failed(status: int, grid: tuple[int, int, int]) -> None:
        if status == trampoline.BAD_RECORD:
            raise LaunchError(f"{loaded.name}: the launch record's size is not the kernel's (a bug in tiles' "
                              "launcher; trampoline.enabled = False avoids the native launch)")
        drv.check(status, f"cuLaunchKernel({loaded.name}, grid={grid}, block={block})")
        raise LaunchError(f"cuLaunchKernel({loaded.name}) failed with status {status}")
    return failed
