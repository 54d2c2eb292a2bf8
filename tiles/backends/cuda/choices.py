"""The code choices a kernel is lowered with on CUDA: one search over ``Options.codegen``.

Every choice is on unless the launch's environment turned it off (the jit reads ``TILES_*`` into
``Options.codegen``).  The search turns one off where it does not serve the kernel:

1. the tensor-core lowering returns ``NotApplicable`` naming it: top-level descriptor loads taken
   for a producer that does not copy them all (``tma_top_loads``), consumers whose shared memory
   reaches the persistent programs' ring (``persistent``).  Lowered again without it
   (``applicable``; ``lower_module`` is this step alone, for tests and tools that lower by hand).
2. A producer warpgroup (``hopper/tma_producer.py``) where ptxas does not launch the kernel with exactly
   the registers its ``setmaxnreg`` balance divides, unspilled (without ptxas: never): the search
   again without it.
3. Products left in flight (``hopper/inflight.py``).  Leaving attention's P@V in flight into the next
   iteration keeps the MMA busy across the loop's turn (d=128, 128x64 on 8 warps: 442 -> 473
   TFLOP/s on the H200, within 3 % of Triton's 484), but its registers can cost a program per SM:
   the d=64 causal kernel then no longer fits two programs per SM and fell from 352 to 293 TFLOP/s.
   So when the lowering reports it took that shape, the kernel is lowered again without it and both
   go through ptxas; the in-flight version is kept where it fits as many programs per SM as the
   plain one settles at (``occupancy.settled``: after the register cap the loader would add, unless
   ``codegen.occupancy`` is off), without that cap, and with no more local memory.  Without ptxas
   the plain version is kept.

The one choice made at launch, TMA off for launches whose tensors TMA cannot describe, is
``tma_launch.py``'s (``CUDABackend._with_tensor_maps``).
"""

from __future__ import annotations

from collections.abc import Callable

from ...core.ir import Kernel
from ...core.ops import Op
from ..base import Options, Target
from ..llvm.emit import default_caps
from ..llvm.target import LLVMTarget
from ..lowering import Lowered
from ..lowering.entry import NotApplicable, lower_with_tensor_cores
from . import occupancy, toolchain
from .emitter import CUDAEmitter
from .hopper import inflight, tma_producer
from .hopper.extension import HOPPER


def applicable(lower_once: Callable[[Options], Lowered | NotApplicable], options: Options) -> Lowered:
    """``lower_once(options)``, again with each choice it reports not applicable turned off."""
    while True:
        result = lower_once(options)
        if isinstance(result, Lowered):
            return result
        if not getattr(options.codegen, result.choice):  # (each retry turns one more off: it ends)
            raise AssertionError(f"{result.choice} reported not applicable with it off: {result.why}")
        options = options.without(result.choice)


def lower_module(kernel: Kernel, target: LLVMTarget, options: Options, caps: Target | None = None) -> Lowered:
    """The kernel as an NVPTX LLVM module (``dot`` on tensor cores where the arch has them, the
    Hopper parts added through ``hopper.extension.HOPPER``), with its threads and shared memory
    per program: step 1 of the search alone."""
    caps = caps or default_caps(target)
    return applicable(lambda o: lower_with_tensor_cores(kernel, _emitter(caps, target, o, kernel), o, HOPPER), options)


def _emitter(caps: Target, target: LLVMTarget, options: Options, kernel: Kernel) -> CUDAEmitter:
    emitter = CUDAEmitter(caps, target)
    mode = options.codegen.predicated
    if mode == "outside_loops" and any(i.op is Op.DOT for i in kernel.walk()):
        mode = ""  # the default was measured on memory-bound kernels; tensor-core ones keep their branches
    emitter.predicated_access = mode
    return emitter


def lower_kernel(kernel: Kernel, target: LLVMTarget, options: Options, caps: Target | None = None) -> str:
    """Only the LLVM IR text of ``lower_module`` (for tests and tools that compile it by hand)."""
    return lower_module(kernel, target, options, caps).code


def lower_chosen(kernel: Kernel, target: LLVMTarget, options: Options, caps: Target | None = None) -> Lowered:
    """The kernel lowered with the choices the whole search keeps (module doc)."""
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
