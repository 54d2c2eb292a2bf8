"""Tile IR -> LLVM IR text for a GPU target, through the shared lowering."""

from __future__ import annotations

from ...core.ir import Kernel
from ..base import Options, Target
from ..lowering import Lowered, lower
from .emitter import LLVMEmitter
from .target import LLVMTarget


def lower_module(kernel: Kernel, target: LLVMTarget, options: Options, caps: Target | None = None) -> Lowered:
    """The kernel as an LLVM module (``code``), with its threads and shared memory per program."""
    return lower(kernel, LLVMEmitter(caps or default_caps(target), target), options)


def default_caps(target: LLVMTarget) -> Target:
    return Target(backend=target.triple.split("-")[0], arch=target.arch, warp_size=target.warp_size)


def lower_kernel(kernel: Kernel, target: LLVMTarget, options: Options, caps: Target | None = None) -> str:
    """Only the LLVM IR text of ``lower_module`` (for tests and tools that compile it by hand)."""
    return lower_module(kernel, target, options, caps).code
