"""Kernels and a fake cacheable backend shared by the runtime tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tiles
import tiles.language as tl
from tiles.backends.base import Backend, CompiledKernel, LaunchArg, Options, Stage, Target
from tiles.backends.interpreter import InterpreterBackend
from tiles.core.printer import format_kernel


@tiles.jit
def double(x):
    return x * 2


@tiles.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, double(x) + y, mask=mask)


@tiles.jit
def sum_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    """total += sum(x): accumulates, so a second launch without zeroing doubles it."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(total_ptr, tl.sum(x, axis=0))


@tiles.jit
def increment_kernel(x_ptr, n, BLOCK: tl.constexpr):
    """x += 1 in place."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


@tiles.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 3)
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3, mask=mask)


@tiles.jit
def positive_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.device_assert(x > 0, "x must be positive")


@tiles.jit(debug=True)
def positive_kernel_debug(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    tl.device_assert(x > 0, "x must be positive")


@tiles.jit(do_not_specialize=["n"])
def copy_unspecialized(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@tiles.jit
def copy_specialized(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class CachingBackend(Backend):
    """The interpreter with a slow-looking 'fake_asm' stage, opted in to the disk cache.

    ``compiles`` counts real compilations, ``loads`` reloads from disk entries.
    """

    name = "caching-test"
    compiles = 0
    loads = 0

    def available(self) -> tuple[bool, str]:
        return True, ""

    def target(self) -> Target:
        return Target("caching-test", "numpy", warp_size=1)

    def toolchain_version(self) -> str:
        return "fake-toolchain 1.0"

    def stages(self, options: Options) -> dict[str, Stage]:
        def text(kernel: Any, compiled: CompiledKernel) -> str:
            type(self).compiles += 1
            compiled.shared = 16
            return format_kernel(kernel)
        return {"ir": text, "fake_asm": lambda ir, compiled: ir.encode() + b"\x00\xff"}

    def load_cached(self, asm: dict[str, Any], metadata: dict[str, Any], kernel: Any,
                    options: Options) -> CompiledKernel:
        type(self).loads += 1
        return CompiledKernel.restore(kernel, options, asm, metadata, asm["fake_asm"])

    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int],
               args: Sequence[LaunchArg]) -> None:
        InterpreterBackend().launch(compiled, grid, args)
