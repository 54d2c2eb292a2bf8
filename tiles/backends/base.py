"""The lowering interface every backend implements.

A backend describes its target (``Target``), turns a traced ``Kernel`` into a
``CompiledKernel`` through an ordered set of named stages (each output is kept in
``asm[stage]`` and can be printed with ``TILES_DUMP=<stage>``), and launches it.
Arguments reach ``launch`` already classified by the jit layer: one ``LaunchArg``
per kernel parameter.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import dtypes as D
from ..core.dtypes import DType
from ..core.ir import Kernel
from ..core.ops import Op


@dataclass(frozen=True)
class Target:
    """What a device can do; backends read it, the conformance suite reports it."""

    backend: str
    arch: str = ""
    warp_size: int = 32
    max_threads_per_block: int = 1024
    shared_memory: int = 48 * 1024
    dtypes: frozenset[DType] = frozenset(D.ALL_DTYPES)
    unsupported_ops: frozenset[Op] = frozenset()
    # float32 ops computed by hardware approximations, with the bound their results keep:
    # (op, rtol, atol) means |got - exact| <= rtol * |exact| + atol.  Declared, not hidden.
    approximate: tuple[tuple[Op, float, float], ...] = ()


@dataclass(frozen=True)
class Options:
    """Launch-time compile options (Triton's ``num_warps``/``num_stages``)."""

    num_warps: int = 4
    num_stages: int = 3
    debug: bool = False


@dataclass
class CompiledKernel:
    """A kernel ready to launch: its stage outputs, metadata and the loaded handle."""

    name: str
    ir: Kernel
    options: Options
    asm: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    handle: Any = None


@dataclass
class LaunchArg:
    """One kernel argument as the user passed it: an array-like or a scalar."""

    name: str
    value: Any
    is_pointer: bool
    writable: bool = True  # False when the kernel provably never writes through it


Stage = Callable[[Any, CompiledKernel], Any]


class Backend(abc.ABC):
    name: str = ""

    @abc.abstractmethod
    def available(self) -> tuple[bool, str]:
        """(True, "") when kernels can run here; otherwise (False, why)."""

    @abc.abstractmethod
    def target(self) -> Target:
        """The capabilities of the device kernels will run on."""

    @abc.abstractmethod
    def stages(self, options: Options) -> dict[str, Stage]:
        """Ordered compile stages: each takes the previous stage's output."""

    @abc.abstractmethod
    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int],
               args: Sequence[LaunchArg]) -> None:
        """Run the compiled kernel over ``grid`` programs."""

    def is_gpu(self) -> bool:
        """Whether kernels run on a GPU (only GPU backends are picked by default)."""
        return True

    def make_launcher(self, compiled: CompiledKernel, plan: Sequence[tuple[int, str, bool, bool]]
                      ) -> Callable[[tuple[int, int, int], Sequence[Any]], None]:
        """A function ``(grid, values)`` that launches ``compiled``; ``plan`` lists, per run-time
        parameter, (index into values, name, is pointer, may be written).  Backends override
        this to make repeated launches cheap."""
        def launcher(grid: tuple[int, int, int], values: Sequence[Any]) -> None:
            self.launch(compiled, grid, [LaunchArg(name, values[i], is_ptr, writable)
                                         for i, name, is_ptr, writable in plan])
        return launcher

    def load_cached(self, asm: dict[str, Any], metadata: dict[str, Any], kernel: Kernel,
                    options: Options) -> CompiledKernel | None:
        """Rebuild a kernel from the ``str``/``bytes`` stages of an on-disk cache entry.

        The default (None) means "not cacheable": nothing is written to the disk cache.
        """
        return None

    def toolchain_version(self) -> str:
        """Versions of the compilers this backend calls; part of the disk-cache key."""
        return ""

    def unsupported(self, kernel: Kernel) -> list[str]:
        """Human-readable reasons this backend cannot run ``kernel`` (empty when it can)."""
        target = self.target()
        reasons = []
        for instr in kernel.walk():
            if instr.op in target.unsupported_ops:
                reasons.append(f"{instr.loc}: op {instr.op.value} is not supported on {self.name}")
            for v in instr.results:
                dt = v.type.element
                if dt not in target.dtypes:
                    reasons.append(f"{instr.loc}: dtype {dt} is not supported on {self.name}")
        return reasons

    def compile(self, kernel: Kernel, options: Options) -> CompiledKernel:
        from ..core.errors import UnsupportedError
        reasons = self.unsupported(kernel)
        if reasons:
            raise UnsupportedError("; ".join(dict.fromkeys(reasons)), kernel.loc)
        compiled = CompiledKernel(kernel.name, kernel, options)
        value: Any = kernel
        limit = self.target().shared_memory
        for stage_name, stage in self.stages(options).items():
            value = stage(value, compiled)
            compiled.asm[stage_name] = value
            needed = compiled.metadata.get("shared", 0)
            if needed > limit:
                from ..core.errors import OutOfResourcesError
                raise OutOfResourcesError(
                    f"kernel {kernel.name} needs {needed} bytes of shared memory per program with num_warps="
                    f"{options.num_warps}, num_stages={options.num_stages}; {self.name} allows {limit}. Use smaller "
                    "block sizes or fewer num_stages (each stage holds a copy of the tl.dot operands)", kernel.loc)
        compiled.handle = value
        return compiled
