"""Every environment variable tiles reads, in one place.

| variable | meaning |
|---|---|
| ``TILES_INTERPRET=1`` | run kernels on the NumPy interpreter |
| ``TILES_BACKEND=<name>`` | run kernels on this backend (``interpreter``, ``opencl``, ``cuda``, ``rocm``) |
| ``TILES_DUMP=<stage>[,<stage>]`` | print these compile stages (``ir``, ``opencl``, ``llir``, ``ptx``...) |
| ``TILES_CHECK=1`` | run the IR verifier after every pass |
| ``TILES_DEBUG=1`` | ``debug=True`` unless ``@jit(debug=)`` says: device_assert, checked memory (docs/debugging.md) |
| ``TILES_CACHE_DIR`` | on-disk compile cache, every backend (default: ``~/.cache/tiles``) |
| ``TILES_ALWAYS_COMPILE=1`` | trace and compile every kernel: the on-disk cache is neither read nor written |
| ``TILES_PRINT_AUTOTUNING=1`` | print each configuration tried, why one failed, and the one the autotuner picks |
| ``TILES_OPENCL_DEVICE`` | OpenCL device: index into all devices, or part of "<platform> <device>" |
| ``TILES_INTERPRET_CHECKS=races`` | interpreter: report unsynchronized writes of one address |
| ``TILES_ROCM_ARCH=<gfx...>`` | rocm: architecture when no device is present (default ``gfx942``) |
"""

from __future__ import annotations

import os
from pathlib import Path


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def interpret() -> bool:
    return _flag("TILES_INTERPRET")


def backend_name() -> str | None:
    if interpret():
        return "interpreter"
    return os.environ.get("TILES_BACKEND") or None


def dump_stages() -> set[str]:
    return {s.strip() for s in os.environ.get("TILES_DUMP", "").split(",") if s.strip()}


def check_ir() -> bool:
    return _flag("TILES_CHECK")


def debug() -> bool:
    return _flag("TILES_DEBUG")


def cache_dir() -> Path:
    return Path(os.environ.get("TILES_CACHE_DIR") or Path.home() / ".cache" / "tiles")


def always_compile() -> bool:
    return _flag("TILES_ALWAYS_COMPILE")


def print_autotuning() -> bool:
    return _flag("TILES_PRINT_AUTOTUNING")


def interpreter_checks() -> set[str]:
    return {s.strip() for s in os.environ.get("TILES_INTERPRET_CHECKS", "").split(",") if s.strip()}


def rocm_arch() -> str:
    return os.environ.get("TILES_ROCM_ARCH", "").strip() or "gfx942"
