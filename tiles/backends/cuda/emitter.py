"""The CUDA emitter: the LLVM emitter plus NVIDIA's tensor-core and asynchronous-copy
instructions, and the lowering entry that uses them (``lower_kernel``)."""

from __future__ import annotations

from ...core.ir import Kernel
from ..base import Options, Target
from ..llvm.emit import default_caps, threads_per_program
from ..llvm.emitter import LLVMEmitter
from ..llvm.target import LLVMTarget
from ..lowering.tensorcore import TensorCoreEmitter, TensorCoreOptions, lower_with_tensor_cores
from .fp8_ops import PTXFloat8Ops
from .mma_ops import PTXMMAOps
from .wgmma_ops import PTXWarpgroupOps


class CUDAEmitter(PTXFloat8Ops, PTXMMAOps, PTXWarpgroupOps, LLVMEmitter, TensorCoreEmitter):
    """LLVM IR for NVPTX with float8 (sm_89+), ``mma.sync``/``ldmatrix``/``cp.async`` (sm_80+) and
    ``wgmma`` (sm_90a)."""


def lower_kernel(kernel: Kernel, target: LLVMTarget, options: Options, caps: Target | None = None) -> str:
    """The kernel as an NVPTX LLVM module (``dot`` on tensor cores where the arch has them);
    its first line records the shared memory it needs."""
    emitter = CUDAEmitter(caps or default_caps(target), target)
    return lower_with_tensor_cores(kernel, emitter, threads_per_program(target, options),
                                   TensorCoreOptions(num_stages=options.num_stages))
