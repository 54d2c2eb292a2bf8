"""The NumPy interpreter as a backend: the reference every other backend is checked against."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.ir import Kernel
from ..core.licm import hoist_loop_invariants
from ..core.ops import REDUCTION, Op
from ..core.printer import format_kernel
from .base import Backend, CompiledKernel, LaunchArg, Options, Stage, Stages, Target

# torch float dtypes NumPy lacks; ml_dtypes has each under the same name
TORCH_ONLY_FLOATS = frozenset({"bfloat16", "float8_e5m2", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2fnuz"})


def host_array(value: Any) -> np.ndarray:
    """A NumPy view of an array-like argument that shares its memory where possible."""
    if isinstance(value, np.ndarray):
        return value
    if getattr(type(value), "tiles_tensor_wrapper", False):  # runtime/tensor_wrapper.py (same element size)
        return host_array(value.base).view(value.dtype.np)
    mod = type(value).__module__
    if mod.startswith("torch"):
        if value.device.type != "cpu":
            raise TypeError(f"the interpreter needs CPU tensors, got one on {value.device}")
        name = str(value.dtype).removeprefix("torch.")
        if name in TORCH_ONLY_FLOATS:  # NumPy has no such type: view the bits as ml_dtypes' type
            import ml_dtypes
            import torch
            bits = value.view(torch.int16 if value.element_size() == 2 else torch.uint8).numpy()
            return bits.view(getattr(ml_dtypes, name))
        return value.numpy()
    if hasattr(value, "__array_interface__") or hasattr(value, "__array__"):
        return np.asarray(value)
    raise TypeError(f"cannot use a {type(value).__name__} as a kernel array argument")


# The interpreter has no registers or shared memory.  So that occupancy arithmetic written for GPUs
# (``NUM_REGS // (kernel.n_regs * WARP_SIZE * num_warps)``, ``SIZE_SMEM // kernel.metadata.shared``)
# runs, a compiled kernel reports a model: this many registers per thread, and as ``shared`` the
# bytes of the largest tile a reduction, scan or dot reads (what a GPU program stages in shared memory).
MODELLED_REGISTERS = 32


def modelled_shared_bytes(kernel: Kernel) -> int:
    """The bytes of the largest tile operand of a reduction, scan, sort or dot in ``kernel``."""
    sizes = [v.type.numel * v.type.dtype.itemsize for instr in kernel.walk()
             if instr.op in REDUCTION or instr.op is Op.DOT for v in instr.operands if v.type.shape]
    return max(sizes, default=0)


def _stages(kernel: Kernel, stored: dict[str, Any] | None = None) -> Stages:
    """The one stage, ``ir``: its text is printed when first read."""
    stages = Stages(stored or {})
    if "ir" not in stages:
        stages.later("ir", lambda: format_kernel(kernel))
    return stages


class InterpreterBackend(Backend):
    name = "interpreter"
    divisibility_free = True  # the walker reads no divisibility fact: one trace serves every alignment

    def available(self) -> tuple[bool, str]:
        return True, ""

    def is_gpu(self) -> bool:
        return False

    def target(self) -> Target:
        return Target("interpreter", "numpy", warp_size=1)

    def stages(self, options: Options) -> dict[str, Stage]:
        return {"ir": lambda kernel, compiled: kernel}

    def compile(self, kernel: Any, options: Options) -> CompiledKernel:
        # Each loop iteration re-runs its body on whole grids: hoisting invariants pays here.
        kernel = hoist_loop_invariants(kernel)
        compiled = CompiledKernel(kernel.name, kernel, options, _stages(kernel))
        compiled.shared = modelled_shared_bytes(kernel)
        compiled.extra.update(registers=MODELLED_REGISTERS, spill_stores=0)
        compiled.handle = kernel
        return compiled

    def respecialized(self, compiled: CompiledKernel, kernel: Kernel) -> CompiledKernel:
        """``compiled`` (whose IR's body ``kernel`` shares) for ``kernel``'s parameters."""
        twin = CompiledKernel(kernel.name, kernel, compiled.options, _stages(kernel), dict(compiled.extra),
                              handle=kernel)
        twin.shared = compiled.shared
        return twin

    def load_cached(self, asm: dict[str, Any], metadata: dict[str, Any], kernel: Any,
                    options: Options) -> CompiledKernel:
        """The cached traced IR is all the interpreter runs."""
        return CompiledKernel(kernel.name, kernel, options, _stages(kernel, asm), dict(metadata), handle=kernel)

    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int],
               args: Sequence[LaunchArg], stream: Any = None) -> None:
        """Runs synchronously on the host; a ``stream`` is accepted and has nothing to order."""
        from ..interp import interpret
        values = [host_array(a.value) if a.is_pointer else a.value for a in args]
        interpret(compiled.ir, grid, values)
