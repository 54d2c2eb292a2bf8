"""Finding backends: built-in ones by name, third-party ones by entry point.

Modules are imported lazily, so a missing pycuda or pyopencl never breaks
``import tiles``; an unavailable backend says why.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import threading
from importlib.metadata import entry_points
from typing import Any

from .. import config
from ..core.errors import TilesError
from .base import Backend

BUILTIN: dict[str, str] = {
    "interpreter": "tiles.backends.interpreter:InterpreterBackend",
    "cuda": "tiles.backends.cuda:CUDABackend",
    "opencl": "tiles.backends.opencl:OpenCLBackend",
    "rocm": "tiles.backends.rocm:ROCmBackend",
    "step": "tiles.backends.stepping:StepBackend",  # the interpreter, one program at a time (debugging)
    "cuda-sim": "tiles.backends.cuda.simulator.backend:SimulatedCUDABackend",  # CUDA's lowering, simulated on the CPU
}
PREFERENCE = ("cuda", "rocm", "opencl", "interpreter")
ENTRY_POINT_GROUP = "tiles.backends"

_instances: dict[str, Backend] = {}
_override: list[str] = []
_lock = threading.RLock()  # one instance per backend name, even when threads ask at once


class BackendUnavailable(TilesError):  # noqa: N818  (reads better than ...Error here)
    pass


def _load(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


def known() -> dict[str, str]:
    """Every backend name with where it comes from (built-in or entry point)."""
    names = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        names.setdefault(ep.name, ep.value)
    return names


def get(name: str) -> Backend:
    """The backend called ``name`` or given as ``module:object``; raises if it cannot load."""
    found = _instances.get(name)
    if found is not None:
        return found
    with _lock:
        found = _instances.get(name)
        return found if found is not None else _create(name)


def _create(name: str) -> Backend:
    spec = known().get(name, name if ":" in name else None)
    if spec is None:
        raise BackendUnavailable(f"unknown backend {name!r}; known: {', '.join(known())}")
    try:
        obj = _load(spec)
    except ImportError as e:
        raise BackendUnavailable(f"backend {name!r} cannot be imported: {e}") from None
    backend = obj() if isinstance(obj, type) else obj
    if not isinstance(backend, Backend):
        raise BackendUnavailable(f"{spec} is not a tiles Backend")
    _instances[name] = backend
    return backend


def register(name: str, backend: Backend) -> None:
    """Make ``backend`` (an instance) available as ``name``: ``backend=name``, ``set_backend(name)``.
    For backends built at run time (a test's compile-only variant of a built-in one); installed
    packages declare theirs as entry points instead."""
    if not isinstance(backend, Backend):
        raise TypeError(f"register({name!r}, ...) takes a tiles Backend instance, got {type(backend).__name__}")
    with _lock:
        _instances[name] = backend
        _default_cache.clear()
        _by_environment.clear()
        default_generation.value += 1


def status(name: str) -> tuple[bool, str]:
    try:
        return get(name).available()
    except Exception as e:  # a broken third-party backend must not break the others
        return False, str(e)


_default_cache: dict[Any, Backend] = {}
# Launches ask for the default backend every time: read TILES_INTERPRET / TILES_BACKEND from the
# dict behind os.environ (CPython's, updated by every os.environ write), without decoding.
_RAW_ENVIRON: dict[Any, Any] | None = getattr(os.environ, "_data", None)
_encode = getattr(os.environ, "encodekey", None)
_RAW_KEYS = (_encode("TILES_INTERPRET"), _encode("TILES_BACKEND")) if callable(_encode) else None
_by_environment: dict[tuple[Any, Any], Backend] = {}
# bumped by every set_backend: what default() returns may then change without the environment
# changing (the kernels' native hot launches compare it, backends/cuda/launch/hot_launch.py)
default_generation = ctypes.c_uint64(0)


def default() -> Backend:
    """The backend kernels launch on: override, then TILES_BACKEND, then the best available."""
    raw = _RAW_ENVIRON if _RAW_KEYS is not None and not _override else None
    if raw is not None:
        settings = (raw.get(_RAW_KEYS[0]), raw.get(_RAW_KEYS[1]))  # type: ignore[index]
        found = _by_environment.get(settings)
        if found is not None:
            return found
    chosen = (_override[-1] if _override else None) or config.backend_name()
    found = _default_cache.get(chosen)
    if found is None:
        with _lock:
            found = _default_cache.get(chosen)
            if found is None:
                found = _default_cache[chosen] = _pick(chosen)
    if raw is not None:
        _by_environment[settings] = found
    return found


def default_state() -> tuple[Any, Any, tuple[Any, Any], tuple[Any, Any]] | None:
    """What ``default()``'s answer depends on right now: ``default_generation``, the raw
    environment dict (None when an override is set: it is not consulted), its two keys and
    their values there (None when absent).  While the generation's value and those values
    (compared by identity) stay, ``default()`` answers as it did.  None where the environment
    cannot be read this way (not CPython's ``os.environ``)."""
    if _override:
        return default_generation, None, (None, None), (None, None)
    if _RAW_ENVIRON is None or _RAW_KEYS is None:
        return None
    return (default_generation, _RAW_ENVIRON, _RAW_KEYS,
            (_RAW_ENVIRON.get(_RAW_KEYS[0]), _RAW_ENVIRON.get(_RAW_KEYS[1])))


def _pick(chosen: str | None) -> Backend:
    if chosen:
        backend = get(chosen)
        ok, why = backend.available()
        if not ok:
            raise BackendUnavailable(f"backend {chosen!r} is not available: {why}")
        return backend
    for name in PREFERENCE:
        ok, _ = status(name)
        if ok and get(name).is_gpu():
            return get(name)
    return get("interpreter")


def set_backend(name: str | None) -> None:
    """Choose the backend for later launches in this process (None: back to the default)."""
    with _lock:
        _override.clear()
        _default_cache.clear()
        _by_environment.clear()
        try:
            if name is not None:
                get(name)
                _override.append(name)
        finally:
            default_generation.value += 1
