"""The CUDA emitter: the LLVM emitter plus NVIDIA's tensor-core and asynchronous-copy
instructions (``choices.py`` lowers kernels onto it)."""

from __future__ import annotations

from ..llvm.emitter import LLVMEmitter
from ..lowering.mma import TensorCoreEmitter
from .atomic_ops import PTXAtomicOps
from .fp8_ops import PTXFloat8Ops
from .hopper.stmatrix_ops import PTXStoreMatrixOps
from .hopper.tma_ops import PTXTensorMemoryOps
from .hopper.wgmma_ops import PTXWarpgroupOps
from .mma_ops import PTXMMAOps
from .predicated_ops import PTXPredicatedMemoryOps
from .print_ops import PTXPrintOps
from .rounding_ops import PTXRoundingOps


class CUDAEmitter(PTXAtomicOps, PTXFloat8Ops, PTXRoundingOps, PTXPrintOps, PTXMMAOps, PTXStoreMatrixOps,
                  PTXWarpgroupOps, PTXTensorMemoryOps, PTXPredicatedMemoryOps, LLVMEmitter, TensorCoreEmitter):
    """LLVM IR for NVPTX with float8 (sm_89+), round-toward-zero downcasts (``cvt.rz``), ``vprintf``,
    ``mma.sync``/``ldmatrix``/``cp.async`` (sm_80+), ``wgmma`` (sm_90a), ``stmatrix`` and TMA (sm_90+),
    atomics carrying Triton's ``sem`` and ``scope`` (``atom.<sem>.<scope>``), and, with
    ``Options.codegen.predicated``, masked global accesses as predicated instructions."""

