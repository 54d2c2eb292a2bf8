"""The stack pocl runs a work-group on, and whether a kernel's work-group fits in it.

pocl's CPU driver runs a whole work-group as one function on one of its worker threads.  A private
variable that lives across a barrier becomes an array with one element per work-item in that
function's frame, on the worker thread's stack; with the thousands of work-items a CPU launch uses
(``OpenCLBackend._threads``) a large kernel's frame passes the 8 MiB of a default thread stack
(test_tensor_descriptor's 128x256x64 GEMM: 8.5 MiB), and the process dies of SIGSEGV, without a
message.  pocl creates its threads, with the process's default attributes, when the platform is
first listed; ``sized_worker_threads`` makes that default larger for that call only
(``TILES_OPENCL_STACK_MB``, default 256: address space, touched only as far as a frame reaches).
``check`` refuses, before pocl compiles it, a kernel whose frame may not fit the stack its
work-groups will get (an upper bound from the OpenCL C: every private variable on every work-item).
"""

from __future__ import annotations

import ctypes
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from ...core.errors import OutOfResourcesError

DEFAULT_STACK_MB = 256
# the frame pocl builds holds at most every declared private variable once per work-item; LLVM may
# keep a few more values alive across a barrier than the C names: bound = MARGIN * declared + SLACK
MARGIN = 2
SLACK_BYTES = 1 << 20

_sized: list[int] = []  # the stack pocl's worker threads were created with, when we chose it


def requested_bytes() -> int:
    """The stack asked for pocl's worker threads: ``TILES_OPENCL_STACK_MB`` MiB (default 256)."""
    text = os.environ.get("TILES_OPENCL_STACK_MB", "").strip()
    mb = int(text) if text.isdigit() and int(text) > 0 else DEFAULT_STACK_MB
    return mb << 20


def _affordable(size: int) -> int:
    """``size``, or less where the kernel counts every thread's stack against a strict commit limit
    (``vm.overcommit_memory=2``): pocl starts about one thread per core and ends the process if
    it cannot, so all of them together take at most a quarter of the commit left."""
    try:
        with open("/proc/sys/vm/overcommit_memory") as f:
            if f.read().strip() != "2":
                return size
        info = {}
        with open("/proc/meminfo") as f:
            for line in f:
                key, _, rest = line.partition(":")
                info[key] = int(rest.split()[0]) * 1024
        left = info["CommitLimit"] - info["Committed_AS"]
    except (OSError, KeyError, ValueError, IndexError):
        return size
    share = left // (4 * ((os.cpu_count() or 1) + 1))
    return max(min(size, share), 0)


def _pocl_loaded() -> bool:
    try:
        with open("/proc/self/maps") as maps:
            return "libpocl" in maps.read()
    except OSError:
        return True  # cannot tell: assume its threads exist already


@contextmanager
def sized_worker_threads() -> Iterator[None]:
    """Around the process's first listing of OpenCL platforms: threads created inside get a
    ``requested_bytes()`` stack (glibc's default thread attributes, restored afterwards)."""
    libc = None
    if not _pocl_loaded():
        try:
            libc = ctypes.CDLL(None)
            libc.pthread_getattr_default_np, libc.pthread_setattr_default_np  # noqa: B018
        except (OSError, AttributeError, TypeError):
            libc = None
    if libc is None:
        yield
        return
    saved, sized = ctypes.create_string_buffer(256), ctypes.create_string_buffer(256)
    if libc.pthread_getattr_default_np(saved) != 0:
        yield
        return
    size = _affordable(requested_bytes())
    made = size >= 1 << 20 and libc.pthread_attr_init(sized) == 0
    ok = (made and libc.pthread_attr_setstacksize(sized, ctypes.c_size_t(size)) == 0
          and libc.pthread_setattr_default_np(sized) == 0)
    try:
        yield
    finally:
        if ok:
            libc.pthread_setattr_default_np(saved)
            if _pocl_loaded():
                _sized[:] = [size]
        if made:
            libc.pthread_attr_destroy(sized)
        libc.pthread_attr_destroy(saved)


def _default_thread_stack() -> int:
    """The stack a thread gets by default (glibc: the stack rlimit when the process started)."""
    try:
        libc = ctypes.CDLL(None)
        attr, size = ctypes.create_string_buffer(256), ctypes.c_size_t(0)
        if libc.pthread_getattr_default_np(attr) == 0:
            libc.pthread_attr_getstacksize(attr, ctypes.byref(size))
            libc.pthread_attr_destroy(attr)
            if size.value:
                return size.value
    except (OSError, AttributeError, TypeError):  # not glibc
        pass
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_STACK)[0]
    except (ImportError, OSError, ValueError):  # no rlimits (Windows)
        return 1 << 20
    return soft if 0 < soft != resource.RLIM_INFINITY else 8 << 20


def available_bytes() -> int:
    """The stack a work-group runs on: what pocl's threads were created with, if tiles listed the
    platforms first, else a default thread's."""
    return _sized[0] if _sized else _default_thread_stack()


_SIZES = {"bool": 1, "char": 1, "uchar": 1, "short": 2, "ushort": 2, "half": 2,
          "int": 4, "uint": 4, "float": 4, "long": 8, "ulong": 8, "double": 8}
_DECL = re.compile(r"^\s*(?:for \()?(?:const )?(?:(__global|__local|__constant) )?([a-z]+?)(\d*)\s*(\*?)\s*"
                   r"[A-Za-z_]\w*\s*(?:\[(\d+)\])?\s*[=;]", re.M)


def private_bytes(source: str) -> int:
    """Bytes of private variables the OpenCL C kernel declares (per work-item), helpers excluded."""
    start = source.find("__kernel")
    total = 0
    for space, base, width, star, count in _DECL.findall(source[max(start, 0):]):
        if star:
            size = 8
        elif space or base not in _SIZES:  # local buffers live outside the stack
            continue
        else:
            size = _SIZES[base] * int(width or 1)
        total += size * int(count or 1)
    return total


def frame_bound(source: str, threads: int) -> int:
    """An upper bound on the work-group function's frame on pocl."""
    return MARGIN * threads * private_bytes(source) + SLACK_BYTES


def check(source: str, threads: int, kernel_name: str, loc: object) -> None:
    """Refuse a kernel whose work-group may not fit pocl's worker stack (it would kill the process)."""
    need, have = frame_bound(source, threads), available_bytes()
    if need <= have:
        return
    mib = 1 << 20
    why = ("" if _sized else " (pocl's threads were created before tiles could size them: let tiles list "
           "the OpenCL platforms first, or start Python with a larger `ulimit -s`)")
    raise OutOfResourcesError(
        f"kernel {kernel_name} may need up to {need / mib:.0f} MiB of stack per work-group on the CPU OpenCL "
        f"device ({threads} work-items x {private_bytes(source)} bytes of private values, kept across "
        f"barriers by pocl), more than the {have / mib:.0f} MiB its threads have{why}; it would end the "
        f"process. Use smaller blocks, or set TILES_OPENCL_STACK_MB higher before the first OpenCL use",
        loc)  # type: ignore[arg-type]
