"""pyopencl plumbing: device choice, program builds (cached by source), thread-safe launches
that copy NumPy arguments (strided views included) and wait without blocking Ctrl-C."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ...core.dtypes import PointerType
from ...core.errors import LaunchError
from ..base import CompiledKernel, LaunchArg
from ..staging import HostSpan
from ..waiting import poll_until
from . import stack

BUILD_OPTIONS = ["-cl-fp32-correctly-rounded-divide-sqrt"]


@lru_cache(maxsize=1)
def device() -> tuple[Any, Any, Any]:
    """(context, queue, device): TILES_OPENCL_DEVICE, else the first GPU, else any device."""
    import pyopencl as cl
    choice = os.environ.get("TILES_OPENCL_DEVICE", "").strip()
    with stack.sized_worker_threads():  # pocl starts its worker threads here
        platforms = cl.get_platforms()
    devices = [d for p in platforms for d in p.get_devices()]
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


# pocl counts a launch's work-groups in 32 bits: 2**32 of them end the process (SIGILL).
CPU_MAX_PROGRAMS = 2**32


def is_cpu() -> bool:
    import pyopencl as cl
    return bool(device()[2].type & cl.device_type.CPU)


def global_fence() -> str:
    """The OpenCL C statement that makes this work-item's global accesses visible to every other
    work-group in order (an acquire/release fence of device scope), or "" where none is known.
    OpenCL C 1.2's ``mem_fence`` is enough on a CPU (pocl: one process's threads), but NVIDIA's
    compiler lowers it to ``membar.cta``, which orders nothing for other SMs: a PTX fence instead."""
    import pyopencl as cl
    dev = device()[2]
    if dev.type & cl.device_type.CPU:
        return "mem_fence(CLK_GLOBAL_MEM_FENCE);"
    if "NVIDIA" in dev.platform.name:
        major = getattr(dev, "compute_capability_major_nv", 0)
        return f'asm volatile("{"fence.acq_rel.gpu" if major >= 7 else "membar.gl"};" ::: "memory");'
    return ""


def is_pocl_cpu() -> bool:
    """Whether the device is pocl's CPU device, which runs a work-group on one thread's stack."""
    return is_cpu() and "Portable Computing Language" in device()[2].platform.name


def keeps_binaries() -> bool:
    """Whether compiled programs keep their device binary for the disk cache: not on CPU devices
    (pocl builds the kernel again to produce one, and serves warm builds from its own cache)."""
    return not is_cpu()


def build_from_binary(binary: bytes) -> Any:
    """A program from a binary ``binaries()`` returned on this device earlier; None when the
    driver refuses it (a driver update, say): the caller then builds from source."""
    import pyopencl as cl
    ctx, _, dev = device()
    try:
        return cl.Program(ctx, [dev], [binary]).build(options=BUILD_OPTIONS)
    except cl.Error:
        return None


def binaries(program: Any) -> bytes:
    """The device binary of a built program (on pocl this compiles the kernel once more)."""
    return bytes(program.binaries[0])


def versions() -> str:
    """What an OpenCL binary depends on besides its source: the driver, the device, pyopencl."""
    import pyopencl as cl
    _, _, dev = device()
    return (f"pyopencl {cl.VERSION_TEXT}; {dev.platform.name} {dev.platform.version}; {dev.name}; "
            f"{dev.version}; driver {dev.driver_version}; options {' '.join(BUILD_OPTIONS)}")


_launch_lock = threading.Lock()  # clSetKernelArg + enqueue on a shared cl.Kernel is not thread-safe


# On a CPU device a buffer is host heap: a store past it would corrupt the process.  Host arrays
# are staged with GUARD_BYTES of a known byte on each side, checked after the launch.
GUARD_BYTES = 1 << 16
GUARD_FILL = 0xA5


@dataclass
class _Guard:
    """The guard bytes around one staged argument (its buffer is a sub-buffer of ``parent``)."""

    name: str
    parent: Any
    nbytes: int

    def check(self, queue: Any, kernel_name: str) -> None:
        import pyopencl as cl
        before, after = np.empty(GUARD_BYTES, np.uint8), np.empty(GUARD_BYTES, np.uint8)
        cl.enqueue_copy(queue, before, self.parent, src_offset=0)
        cl.enqueue_copy(queue, after, self.parent, src_offset=GUARD_BYTES + self.nbytes, is_blocking=True)
        bad_before = np.flatnonzero(before != GUARD_FILL)
        bad_after = np.flatnonzero(after != GUARD_FILL)
        if bad_before.size or bad_after.size:
            where = (f"{GUARD_BYTES - bad_before[0]} bytes before its first byte" if bad_before.size
                     else f"{bad_after[-1] + 1} bytes past its end")
            raise LaunchError(f"{kernel_name}: a store wrote outside argument {self.name} (as far as {where}); "
                              f"the CPU device caught it in a guard band, so nothing else was overwritten. "
                              f"Run with TILES_DEBUG=1 (or TILES_INTERPRET=1) to find the kernel line")


def _buffer(arg: LaunchArg, copies: list[tuple[HostSpan, Any]], guards: list[_Guard]) -> Any:
    import pyopencl as cl
    import pyopencl.array as cla
    value = arg.value
    if isinstance(value, cla.Array):
        if value.offset:
            raise LaunchError(f"argument {arg.name}: pyopencl arrays with an offset are not supported; "
                              "pass the base array and add the offset in the kernel")
        return value.base_data
    from ..interpreter import host_array
    span = HostSpan(host_array(value))
    if span.negative_strides:
        raise LaunchError(f"argument {arg.name}: a view with negative strides (such as x[::-1]); the "
                          "OpenCL backend can only pass the address of a buffer's first byte. Pass "
                          "np.ascontiguousarray(x), or index from the end inside the kernel")
    ctx, queue, _ = device()
    flags = cl.mem_flags.READ_WRITE
    if is_cpu():
        parent = cl.Buffer(ctx, flags, 2 * GUARD_BYTES + max(span.nbytes, 16))
        cl.enqueue_fill_buffer(queue, parent, np.full(1, GUARD_FILL, np.uint8), 0, parent.size)
        if span.nbytes:
            cl.enqueue_copy(queue, parent, span.bytes, dst_offset=GUARD_BYTES)
        buf = parent.get_sub_region(GUARD_BYTES, max(span.nbytes, 16))
        guards.append(_Guard(arg.name, parent, max(span.nbytes, 16)))
    elif span.nbytes == 0:
        return cl.Buffer(ctx, flags, 16)
    else:
        buf = cl.Buffer(ctx, flags | cl.mem_flags.COPY_HOST_PTR, hostbuf=span.bytes)
    if arg.writable and span.nbytes:
        copies.append((span, buf))
    return buf


def _kernel(compiled: CompiledKernel) -> Any:
    import pyopencl as cl
    kernel = compiled.loaded.get("kernel")
    if kernel is None:
        kernel = compiled.loaded["kernel"] = cl.Kernel(compiled.loaded["program"], compiled.entry)
    return kernel


def _queue(stream: Any) -> Any:
    """The queue to run on: ``stream`` (a pyopencl CommandQueue of our context) or ours."""
    import pyopencl as cl
    ctx, queue, _ = device()
    if stream is None:
        return queue
    if not isinstance(stream, cl.CommandQueue) or stream.context != ctx:
        raise LaunchError(f"stream={stream!r}: the OpenCL backend takes a pyopencl CommandQueue made on "
                          "its context (tiles.backends.opencl.runtime.device()[0]) as the stream")
    return stream


def wait_for(event: Any) -> None:
    """Wait for ``event`` by polling, so Ctrl-C is not held up by a long kernel."""
    import pyopencl as cl
    complete = cl.command_execution_status.COMPLETE
    event.command_queue.flush()

    def done() -> bool:
        status = event.command_execution_status
        if status < 0:
            raise LaunchError(f"an OpenCL command failed with status {status}")
        return bool(status == complete)
    poll_until(done)


# (event, objects) left by an interrupted wait: kept alive until the event completes
_abandoned: list[tuple[Any, Any, Any]] = []


def _release_finished() -> None:
    import pyopencl as cl
    if _abandoned:
        with _launch_lock:
            _abandoned[:] = [entry for entry in _abandoned
                             if entry[0].command_execution_status != cl.command_execution_status.COMPLETE]


def _prints(compiled: CompiledKernel) -> bool:
    found = compiled.loaded.get("device_print")
    if found is None:
        from ...core.ops import Op
        found = compiled.loaded["device_print"] = any(i.op is Op.DEVICE_PRINT for i in compiled.ir.walk())
    return bool(found)


@lru_cache(maxsize=1)
def _libc() -> Any:
    import ctypes
    return ctypes.CDLL(None)


def _flush_c_stdio() -> None:
    """Flush every C stdio stream, so device_print lines reach the file descriptor before Python reads it."""
    try:
        _libc().fflush(None)
    except (OSError, AttributeError):
        pass


def launch(compiled: CompiledKernel, grid: tuple[int, int, int], args: Sequence[LaunchArg],
           stream: Any = None) -> None:
    import pyopencl as cl
    if is_cpu() and grid[0] * grid[1] * grid[2] >= CPU_MAX_PROGRAMS:
        raise LaunchError(f"{compiled.name}: a grid of {grid} is {grid[0] * grid[1] * grid[2]} programs; the "
                          f"CPU OpenCL device runs fewer than 2**32 in one launch (pocl stops the process "
                          f"beyond); launch in parts, or give each program more of the work")
    queue = _queue(stream)
    kernel = _kernel(compiled)
    _release_finished()
    threads = compiled.threads
    prints = _prints(compiled)
    if prints:  # the device writes to the same file descriptor: Python's earlier lines first
        sys.stdout.flush()
    copies: list[tuple[HostSpan, Any]] = []
    guards: list[_Guard] = []
    values = []
    for param, arg in zip(compiled.ir.params, args):
        dt = param.value.type.dtype
        if isinstance(dt, PointerType):
            values.append(_buffer(arg, copies, guards))
        elif dt.is_bool:
            values.append(np.uint8(bool(arg.value)))
        else:
            values.append(dt.np.type(arg.value))
    with _launch_lock:
        kernel.set_args(*values)
        done = cl.enqueue_nd_range_kernel(queue, kernel, (grid[0] * threads, grid[1], grid[2]),
                                          (threads, 1, 1))
    if not copies and prints:  # device_print's lines come out when the kernel ends
        wait_for(done)
    if copies:  # NumPy arguments: copy back; device arrays stay asynchronous
        received = []
        for span, buf in copies:
            host = span.host_buffer()
            done = cl.enqueue_copy(queue, host, buf, is_blocking=False)
            received.append((span, host))
        try:
            wait_for(done)
        except BaseException:  # Ctrl-C: releasing buffers in use would block until the kernel ends
            with _launch_lock:
                _abandoned.append((done, values, received))
            raise
        for span, host in received:
            span.write_back(host)
    if prints and is_cpu():  # pocl's printf writes through this process's C stdio buffer
        _flush_c_stdio()
    for guard in guards:
        guard.check(queue, compiled.name)
