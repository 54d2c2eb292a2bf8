"""tiles: write GPU kernels in Triton's tile language, run them anywhere."""

from . import compiler, knobs, language, runtime, testing  # noqa: F401  (as triton.compiler, .knobs, .runtime, .testing)
from .as_triton import install_as_triton, uninstall_as_triton
from .backends.registry import set_backend
from .core.errors import (
    CompilationError,
    KernelRuntimeError,
    LaunchError,
    OutOfResourcesError,
    TilesError,
    UnsupportedError,
)
from .language.aggregate import aggregate
from .language.constexpr import constexpr_function
from .language.control import must_use_result
from .language.core import constexpr
from .runtime.autotune import AutotuneError, Autotuner, Config, autotune
from .runtime.errors import InterpreterError, OutOfResources, TritonError
from .runtime.heuristics import Heuristics, heuristics
from .runtime.jit import JITFunction, KernelInterface, MockTensor, jit
from .runtime.reinterpret import reinterpret
from .version import __version__


def cdiv(x: int, y: int) -> int:
    """Ceiling division of two ints."""
    return (x + y - 1) // y


_allocator: object = None


def set_allocator(allocator: object) -> None:
    """Triton's scratch allocator for tensor descriptors built on the device.  tiles needs no
    scratch (descriptors are bounds-masked pointer accesses, or TMA copies whose tensor maps
    the host encodes at launch): the allocator is kept, never called."""
    global _allocator
    _allocator = allocator


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


__all__ = [
    "AutotuneError", "Autotuner", "aggregate", "Config", "Heuristics", "autotune", "heuristics", "testing",
    "CompilationError", "InterpreterError", "JITFunction", "KernelInterface", "KernelRuntimeError", "LaunchError",
    "MockTensor", "OutOfResources", "OutOfResourcesError", "TilesError", "TritonError", "UnsupportedError",
    "cdiv", "compiler", "constexpr", "constexpr_function", "jit", "language", "must_use_result", "next_power_of_2",
    "reinterpret",
    "install_as_triton", "knobs", "runtime", "set_allocator", "set_backend", "uninstall_as_triton",
]
