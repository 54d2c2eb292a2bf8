"""Keep freed NumPy temporaries in the process heap.

The interpreter allocates and frees one large array per op.  glibc hands blocks
above its mmap threshold straight back to the kernel, so the next op page-faults
fresh zeroed pages: on a 2^20-element grid that was about half of the run time.
Raising the thresholds (once, for the process) lets freed blocks be reused.
"""

from __future__ import annotations

import ctypes
import functools
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_MMAP_MAX_ON_64BIT = 32 << 20   # glibc refuses larger thresholds


@functools.cache
def reuse_freed_memory() -> bool:
    """True when the C allocator was tuned (glibc on Linux); a no-op elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_MAX_ON_64BIT)) and bool(mallopt(_M_TRIM_THRESHOLD, 1 << 30))
