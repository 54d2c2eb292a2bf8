"""The on-disk compile cache: a kernel traced and compiled in one process launches in the next
without tracing, lowering or calling the backend's compiler.

``compile_cached`` is the jit layer's compile path below its in-memory cache.  On a miss it
traces (the ``trace`` callback), compiles and stores an entry (``cache_entry``: the IR, the
``str``/``bytes`` stages, plain metadata); on a hit it hands that entry to the backend's
``load_cached``, which rebuilds whatever live handle it launches with.  Backends that keep
``Backend.load_cached``'s default (None) are never written to disk.

Key (``compile_key``): tiles version and a hash of its own source; the source of the kernel,
of every ``@jit`` helper and user function it reaches and the values of the globals they read
(``fingerprint.py``); the specialization; the options; the target; the backend's name and
``toolchain_version()`` (driver and device versions for OpenCL).  Files: ``cache_files.py``.
``TILES_CACHE_DIR`` picks the folder (default ``~/.cache/tiles``); ``TILES_ALWAYS_COMPILE=1``
neither reads nor writes it.  ``STATS`` counts hits, misses, traces and stores in this process.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .. import config
from ..backends.base import Backend, CompiledKernel, Options
from ..core.ir import Kernel
from . import checked_launch
from .cache_entry import decode, encode
from .cache_files import (
    FORMAT,
    MAGIC,
    STALE_TEMP_SECONDS,
    CacheWarning,
    entry_path,
    read_entry,
    read_json,
    warn_damaged,
    write_entry,
    write_json,
)
from .fingerprint import called_jit_functions, compiler_fingerprint, source_fingerprint, stable
from .specialize import ArgSpec

__all__ = ["FORMAT", "MAGIC", "STALE_TEMP_SECONDS", "STATS", "CacheWarning", "called_jit_functions",
           "compile_cached", "compile_key", "compiler_fingerprint", "entry_path", "is_cacheable", "load",
           "read_entry", "read_json", "source_fingerprint", "store", "write_entry", "write_json"]

KERNEL_SUFFIX = ".bin"
STATS: Counter[str] = Counter()  # hits, misses, traces, stores, in this process
_stats_lock = threading.Lock()


class Traceable(Protocol):
    """What the cache needs of a ``@jit`` function: the Python function it wraps."""

    fn: Callable[..., Any]


def _count(event: str) -> None:
    with _stats_lock:
        STATS[event] += 1


def compile_key(jit_fn: Traceable, specs: Sequence[ArgSpec], backend: Backend,
                options: Options) -> str:
    from ..version import __version__
    parts = {
        "rules": "triton" if config.triton_rules() else "tiles",  # the mode refuses what Triton refuses
        "tiles": [__version__, compiler_fingerprint()],
        "source": source_fingerprint(jit_fn),
        "specialization": [repr(s.key()) for s in specs],
        "options": stable(options),
        "target": stable(backend.target()),
        "backend": [backend.name, backend.toolchain_version()],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def is_cacheable(backend: Backend) -> bool:
    return type(backend).load_cached is not Backend.load_cached


def store(key: str, compiled: CompiledKernel) -> bool:
    """Write ``compiled`` under ``key``; False when it cannot be stored or the disk refuses."""
    payload = encode(key, compiled, checked_launch.plan_of(compiled))
    if payload is None:
        return False
    written = write_entry(entry_path(key, suffix=KERNEL_SUFFIX), payload)
    if written:
        _count("stores")
    return written


def load(key: str, backend: Backend, options: Options) -> CompiledKernel | None:
    """The kernel stored under ``key``, rebuilt by the backend; None on a miss (a damaged entry
    also warns)."""
    path = entry_path(key, suffix=KERNEL_SUFFIX)
    payload = read_entry(path)
    if payload is None:
        return None
    try:
        entry = decode(payload)
    except ValueError as e:
        warn_damaged(path, str(e))
        return None
    if entry.key != key:
        warn_damaged(path, "it belongs to another key")
        return None
    if entry.check_plan is not None:
        checked_launch.remember_plan(entry.kernel, entry.check_plan)
    return backend.load_cached(dict(entry.asm), entry.metadata, entry.kernel, options)


def compile_cached(jit_fn: Traceable, specs: Sequence[ArgSpec], backend: Backend, options: Options,
                   trace: Callable[[], Kernel]) -> CompiledKernel:
    """``backend.compile(trace(), options)``, served from and saved to the disk cache when allowed."""
    if config.always_compile() or not is_cacheable(backend):
        _count("traces")
        return backend.compile(trace(), options)
    key = compile_key(jit_fn, specs, backend, options)
    compiled = load(key, backend, options)
    if compiled is not None:
        _count("hits")
        return compiled
    _count("misses")
    _count("traces")
    compiled = backend.compile(trace(), options)
    store(key, compiled)
    return compiled
