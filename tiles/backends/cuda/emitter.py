"""The CUDA emitter: the LLVM emitter plus NVIDIA's tensor-core and asynchronous-copy
instructions, and the lowering entry that uses them (``lower_kernel``)."""

from __future__ import annotations

from ...core.ir import Kernel
from ..base import Options, Target
from ..llvm.emit import default_caps
from ..llvm.emitter import LLVMEmitter
from ..llvm.target import LLVMTarget
from ..lowering import Lowered
from ..lowering.entry import lower_with_tensor_cores
from ..lowering.tensorcore import TensorCoreEmitter, persistent
from .atomic_ops import PTXAtomicOps
from .fp8_ops import PTXFloat8Ops
from .mma_ops import PTXMMAOps
from .print_ops import PTXPrintOps
from .rounding_ops import PTXRoundingOps
from .stmatrix_ops import PTXStoreMatrixOps
from .tma_ops import PTXTensorMemoryOps
from .wgmma_ops import PTXWarpgroupOps


class CUDAEmitter(PTXAtomicOps, PTXFloat8Ops, PTXRoundingOps, PTXPrintOps, PTXMMAOps, PTXStoreMatrixOps,
                  PTXWarpgroupOps, PTXTensorMemoryOps, LLVMEmitter, TensorCoreEmitter):
    """LLVM IR for NVPTX with float8 (sm_89+), round-toward-zero downcasts (``cvt.rz``), ``vprintf``,
    ``mma.sync``/``ldmatrix``/``cp.async`` (sm_80+), ``wgmma`` (sm_90a), ``stmatrix`` and TMA (sm_90+),
    atomics carrying Triton's ``sem`` and ``scope`` (``atom.<sem>.<scope>``)."""


def lower_module(kernel: Kernel, target: LLVMTarget, options: Options, caps: Target | None = None) -> Lowered:
    """The kernel as an NVPTX LLVM module (``dot`` on tensor cores where the arch has them), with
    its threads and shared memory per program."""
    try:
        return lower_with_tensor_cores(kernel, CUDAEmitter(caps or default_caps(target), target), options)
    except persistent.NoRoomError:
        return lower_with_tensor_cores(kernel, CUDAEmitter(caps or default_caps(target), target),
                                       options.without("persistent"))


def lower_kernel(kernel: Kernel, target: LLVMTarget, options: Options, caps: Target | None = None) -> str:
    """Only the LLVM IR text of ``lower_module`` (for tests and tools that compile it by hand)."""
    return lower_module(kernel, target, options, caps).code
