"""The OpenCL backend: shared GPU lowering -> OpenCL C -> pyopencl build -> launch.

Stages: ``ir`` (tile IR text), ``opencl`` (the generated OpenCL C), ``build`` (the
pyopencl program); on devices other than CPUs, ``asm["binary"]`` also keeps the device
binary for the disk cache (pocl compiles a kernel once more to hand out its binary, and
its own kernel cache serves a warm build from source anyway).  ``TILES_OPENCL_DEVICE`` picks the device
(an index into all platforms' devices, or part of "<platform> <device>").
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from ...core import dtypes as D  # noqa: N812
from ...core.ir import Kernel
from ...core.ops import Op
from ...core.printer import format_kernel
from ..base import Backend, CompiledKernel, LaunchArg, Options, Stage, Staged, Target
from ..cstyle.dialect import NARROW_FLOATS

UNSUPPORTED_OPS = frozenset({Op.DEVICE_ASSERT})


def largest_tile(kernel: Kernel) -> int:
    """The element count of the kernel's largest tile value."""
    return max((math.prod(v.type.shape) for instr in kernel.walk() for v in instr.results), default=1)


class OpenCLBackend(Backend):
    name = "opencl"
    cpu_elements_per_work_item = 4  # see _threads
    cpu_tree_levels_per_barrier = 3  # see _generate
    cpu_recompute_budget = 32  # see _generate
    cpu_defer_exchange_barriers = True  # see _generate

    def available(self) -> tuple[bool, str]:
        try:
            import pyopencl  # noqa: F401
        except ImportError as e:
            return False, f"pyopencl is not installed ({e})"
        try:
            from . import runtime
            runtime.device()
        except Exception as e:  # no platform, no device, ICD errors...
            return False, f"no usable OpenCL device: {e}"
        return True, ""

    def is_gpu(self) -> bool:
        import pyopencl as cl

        from . import runtime
        return bool(runtime.device()[2].type & cl.device_type.GPU)

    def target(self) -> Target:
        import pyopencl as cl

        from . import runtime
        _, _, dev = runtime.device()
        dtypes = set(D.LOWERED_DTYPES)
        if not runtime.has_fp64():
            dtypes.discard(D.float64)
        ops = UNSUPPORTED_OPS
        if not dev.type & cl.device_type.CPU:  # addresses from integers are host addresses: only a CPU reads them
            ops = ops | {Op.INT_TO_PTR}
        return Target("opencl", arch=f"{dev.platform.name} / {dev.name}", warp_size=32,
                      max_threads_per_block=dev.max_work_group_size,
                      shared_memory=dev.local_mem_size, dtypes=frozenset(dtypes),
                      unsupported_ops=ops)

    def target_key(self) -> tuple[int, int]:
        from . import runtime
        return (id(runtime.device()[2]), 0)  # the chosen device, fixed for the process

    def unsupported(self, kernel: Kernel) -> list[str]:
        reasons = super().unsupported(kernel)
        for instr in kernel.walk():
            if instr.op not in (Op.ATOMIC, Op.ATOMIC_CAS):
                continue
            element = instr.results[0].type.element
            in_word = element.bits == 16 or (element in NARROW_FLOATS and instr.op is Op.ATOMIC)
            if element.bits < 32 and not in_word:
                reasons.append(f"{instr.loc}: {'atomic_cas' if instr.op is Op.ATOMIC_CAS else 'atomics'} on "
                               f"{element} are not supported on opencl (64-, 32- and 16-bit types, and "
                               "read-modify-write atomics on 8-bit floats, only)")
        return reasons

    def toolchain_version(self) -> str:
        from . import runtime
        return runtime.versions()

    def stages(self, options: Options) -> dict[str, Stage]:
        return {"ir": lambda kernel, compiled: format_kernel(kernel),
                "opencl": lambda _, compiled: self._generate(compiled, options),
                "build": lambda source, compiled: self._build(source, compiled)}

    def _threads(self, options: Options, kernel: Kernel) -> int:
        """Work-items per program: ``num_warps * 32``; on a CPU device at least enough that
        each holds at most ``cpu_elements_per_work_item`` elements of the largest tile.  The lowering
        unrolls a work-item's elements, and pocl compiles the unrolled code slowly (the
        matmul example's 64x64 tile: 32 elements each at 128 work-items, 99 KB of C), while
        one CPU thread runs a whole work-group as a loop either way."""
        from . import runtime
        threads = options.num_warps * 32
        if runtime.is_cpu():
            wanted = largest_tile(kernel) // self.cpu_elements_per_work_item
            threads = max(threads, 1 << max(wanted, 1).bit_length() - 1)
        return min(threads, self.target().max_threads_per_block)

    def _generate(self, compiled: CompiledKernel, options: Options) -> Staged:
        """The OpenCL C.  On a CPU device a reduction's tree does ``cpu_tree_levels_per_barrier``
        levels between barriers instead of one: pocl's compile time grows faster than the number
        of barriers (a 64-element sum: 3 barriers instead of 8).  For the same reason a CPU program
        recomputes index expressions of up to ``cpu_recompute_budget`` ops per element (a block
        pointer's 2-D boundary mask) rather than broadcast them through local memory, and defers
        the trailing barrier of each exchange through local memory (``lowering/exchanges.py``)."""
        from ..lowering import lower
        from . import runtime
        from .emit_c import OpenCLEmitter
        threads = self._threads(options, compiled.ir)
        cpu = runtime.is_cpu()
        levels = self.cpu_tree_levels_per_barrier if cpu else 1
        budget = self.cpu_recompute_budget if cpu else OpenCLEmitter.recompute_budget
        emitter = OpenCLEmitter(self.target(), runtime.has_fp64(), levels, budget,
                                defer_exchange_barriers=cpu and self.cpu_defer_exchange_barriers,
                                global_fence=runtime.global_fence())
        lowered = lower(compiled.ir, emitter,
                        dataclasses.replace(options, num_warps=threads // 32))
        self._check_stack(lowered.code, lowered.threads, compiled.ir)
        return Staged.lowered(lowered)

    @staticmethod
    def _check_stack(source: str, threads: int, kernel: Kernel) -> None:
        """On pocl's CPU device, refuse a work-group that may overflow its thread's stack."""
        from . import runtime, stack
        if runtime.is_pocl_cpu():
            stack.check(source, threads, kernel.name, kernel.loc)

    def _build(self, source: str, compiled: CompiledKernel) -> Staged:
        from . import runtime
        program = runtime.build(source)
        # the binary for the disk cache; pocl compiles the kernel again for it
        binary = {"binary": runtime.binaries(program)} if runtime.keeps_binaries() else {}
        return Staged(program, loaded={"program": program}, more_asm=binary)

    def load_cached(self, asm: dict[str, Any], metadata: dict[str, Any], kernel: Kernel,
                    options: Options) -> CompiledKernel | None:
        """The program from its cached binary, else from its cached OpenCL C (on pocl, whose own
        kernel cache then skips the compiler)."""
        from . import runtime
        if not isinstance(asm.get("opencl"), str) or "entry" not in metadata:
            return None
        # the process that compiled it may have given pocl's threads more stack than this one did
        self._check_stack(asm["opencl"], int(metadata.get("threads", 0)), kernel)
        binary = asm.get("binary")
        program = runtime.build_from_binary(binary) if isinstance(binary, bytes) else None
        if program is None:
            program = runtime.build(asm["opencl"])
        compiled = CompiledKernel(kernel.name, kernel, options, dict(asm), dict(metadata), program)
        compiled.loaded["program"] = program
        return compiled

    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int],
               args: Sequence[LaunchArg], stream: Any = None) -> None:
        """``stream``: a pyopencl CommandQueue on the backend's context (default: its own queue)."""
        from . import runtime
        if "launched" in compiled.loaded:
            runtime.launch(compiled, grid, args, stream)
            return
        from ... import progress
        with progress.compiling(compiled.name, self.name, "the OpenCL driver's part, at the first launch"):
            runtime.launch(compiled, grid, args, stream)
        compiled.loaded["launched"] = True


__all__ = ["OpenCLBackend"]
