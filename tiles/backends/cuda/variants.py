"""A kernel lowered two ways, where the lowering took a code shape that may cost occupancy.

Leaving attention's P@V in flight into the next iteration (``lowering/tensorcore/inflight.py``)
keeps the MMA busy across the loop's turn (d=128, 128x64 on 8 warps: 442 -> 473 TFLOP/s on the
H200, within 3 % of Triton's 484), but its registers can cost a program per SM: the d=64 causal
kernel then no longer fits two programs per SM and fell from 352 to 293 TFLOP/s.  So when the
lowering reports it took that shape, the kernel is lowered again without it and both go through
ptxas; the in-flight version is kept where it fits as many programs per SM as the plain one
settles at (``occupancy.settled``: after the register cap the loader would add), without that
cap, and with no more local memory.  Without ptxas the plain version is kept.
"""

from __future__ import annotations

from ...core.ir import Kernel
from ..base import Options, Target
from ..llvm.target import LLVMTarget
from ..lowering import Lowered
from ..lowering.tensorcore import inflight, tma_producer
from . import occupancy, toolchain
from .emitter import lower_module


def lower_chosen(kernel: Kernel, target: LLVMTarget, options: Options, caps: Target | None = None) -> Lowered:
    """``lower_module``'s result, or its lowering without products left in flight where that keeps
    more programs per SM or less local memory (module doc), without a producer warpgroup unless
    ptxas gives the kernel the registers its ``setmaxnreg`` balance assumes."""
    lowered = lower_module(kernel, target, options, caps)
    if tma_producer.VARIANT in lowered.variants and not _producer_fits(lowered, target.arch):
        return lower_chosen(kernel, target, options.without("producer"), caps)
    if inflight.VARIANT not in lowered.variants:
        return lowered
    plain = lower_module(kernel, target, options.without("inflight"), caps)
    arch = target.arch
    # the in-flight version as ptxas sizes it: one that needs the loader's register cap to fit as
    # many programs gives back the registers it was made for (d=64 on 8 warps: 2.5 % slower so)
    late = occupancy.settled(toolchain.to_ptx(lowered.code, arch), arch, lowered.threads, lowered.shared_bytes,
                             cap=False)
    if late is None:
        return plain
    base = occupancy.settled(toolchain.to_ptx(plain.code, arch), arch, plain.threads, plain.shared_bytes,
                             cap=options.codegen.occupancy)
    assert base is not None
    return lowered if late[0] >= base[0] and late[1] <= base[1] else plain


def _producer_fits(lowered: Lowered, arch: str) -> bool:
    """ptxas launches the kernel with exactly the registers ``tma_producer`` divides, unspilled."""
    if toolchain.ptxas_path() is None:
        return False
    info = toolchain.ptxas_info(toolchain.to_ptx(lowered.code, arch), arch)
    return info.get("registers") == tma_producer.LAUNCH_REGISTERS and not info.get("spill_stores", 0)
