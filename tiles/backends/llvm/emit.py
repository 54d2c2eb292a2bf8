"""Tile IR -> LLVM IR text for a GPU target, through the shared lowering."""

from __future__ import annotations

import re

from ...core.ir import Kernel
from ..base import Options, Target
from ..lowering.lower import lower
from .emitter import LLVMEmitter
from .target import LLVMTarget


def threads_per_program(target: LLVMTarget, options: Options) -> int:
    return options.num_warps * target.warp_size


def default_caps(target: LLVMTarget) -> Target:
    return Target(backend=target.triple.split("-")[0], arch=target.arch, warp_size=target.warp_size)


def lower_kernel(kernel: Kernel, target: LLVMTarget, options: Options, caps: Target | None = None) -> str:
    """The kernel as an LLVM module; its first line records the shared memory it needs."""
    emitter = LLVMEmitter(caps or default_caps(target), target)
    return lower(kernel, emitter, threads_per_program(target, options))


def local_bytes_of(llir: str) -> int:
    """Shared (local) memory, in bytes, that a module from ``lower_kernel`` needs at launch."""
    m = re.match(r"; tiles.local_bytes = (\d+)", llir)
    return int(m.group(1)) if m else 0
