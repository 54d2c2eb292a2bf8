"""``cuda-sim``: the CUDA backend's lowering run on the SIMT simulator, a backend on any CPU.

It compiles as the CUDA backend does up to its lowering (the same passes, layouts, tensor-core
paths and code choices, for sm_90) and, at launch, lowers each program onto ``SimEmitter``,
whose elementwise ops are the interpreter's own (``core/semantics.py``).  Where it disagrees with
the interpreter, the lowering is wrong: what a conformance run on it finds (``python -m conformance
--backend cuda-sim``) is a bug of the CUDA backend found without a GPU.  PTX emission, ptxas and
the hardware's math approximations are not in it; races between threads cannot show (threads run
in lock step), and programs run one after another.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...base import Backend, CompiledKernel, LaunchArg, Options, Stage, Target
from ...interpreter import host_array


class SimulatedCUDABackend(Backend):
    name = "cuda-sim"
    fp_fusion_default = True  # as the CUDA backend

    def available(self) -> tuple[bool, str]:
        return True, ""

    def is_gpu(self) -> bool:
        return False

    def target(self) -> Target:
        from .. import SUPPORTED_DTYPES, UNSUPPORTED_OPS
        return Target("cuda", arch="sm_90", warp_size=32, max_threads_per_block=1024,
                      shared_memory=227 * 1024, dtypes=SUPPORTED_DTYPES, unsupported_ops=UNSUPPORTED_OPS)

    def stages(self, options: Options) -> dict[str, Stage]:
        from ....core.printer import format_kernel

        def ir(kernel: Any, compiled: CompiledKernel) -> str:
            compiled.threads = options.threads(self.target())
            return format_kernel(kernel)
        return {"ir": ir}

    def launch(self, compiled: CompiledKernel, grid: tuple[int, int, int],
               args: Sequence[LaunchArg], stream: Any = None) -> None:
        """Runs the programs one after another on the host; a ``stream`` has nothing to order."""
        from .simt import run
        values = [host_array(a.value) if a.is_pointer else a.value for a in args]
        run(compiled.ir, values, grid, compiled.threads, options=compiled.options)
