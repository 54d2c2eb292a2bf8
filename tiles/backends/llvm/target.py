"""What the shared LLVM emitter needs to know about a GPU target.

Grid sizes (``tl.num_programs``) reach kernels as three trailing i32 arguments,
so no target needs an intrinsic for them.

One ``LLVMTarget`` per architecture family: the CUDA backend fills it for NVPTX,
the ROCm backend for AMDGPU.  The emitter never names a vendor directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class LLVMTarget:
    triple: str
    data_layout: str
    arch: str                      # sm_90a, gfx942, ...
    warp_size: int
    global_addrspace: int = 1
    shared_addrspace: int = 3
    # How a kernel entry is declared: e.g. "ptx_kernel" or "amdgpu_kernel" calling convention.
    kernel_calling_conv: str = ""
    # Intrinsics returning i32: thread id x, block id x/y/z, grid dims x/y/z.
    thread_id: str = ""
    block_id: tuple[str, str, str] = ("", "", "")
    num_blocks: tuple[str, str, str] = ("", "", "")
    barrier: str = ""              # intrinsic called with no arguments
    # Memory scope of the fences around the barrier ("" when the barrier orders shared memory itself).
    barrier_fence_scope: str = ""
    # LLVM syncscope of each Triton atomic scope ("" is LLVM's system scope).
    sync_scopes: dict[str, str] = field(default_factory=lambda: {"cta": "block", "gpu": "device", "sys": ""})
    # The code generator drops the ordering of ``atomicrmw`` (LLVM's NVPTX keeps only cmpxchg's), so
    # an acquire/release atomic is written as fences around a monotonic one.
    fence_ordered_rmw: bool = False
    # i32 butterfly shuffle intrinsic (membermask, value, lane mask, clamp), "" when absent.
    shuffle_xor: str = ""
    # i32 indexed shuffle intrinsic (membermask, value, source lane, clamp), "" when absent.
    shuffle_idx: str = ""
    # fp32 math intrinsics that replace the generic llvm.<name>.f32 ones (e.g. NVPTX has no
    # lowering for llvm.log2.f32): {"log2": "llvm.nvvm.lg2.approx.f"}.
    math_f32: dict[str, str] = field(default_factory=dict)
    # float64 math functions by name (exp, log, sin...), e.g. from NVIDIA's libdevice.
    math_f64: dict[str, str] = field(default_factory=dict)
    # NVIDIA's libdevice is linked: math functions without an LLVM spelling call its __nv_* ones.
    libdevice: bool = False
    # core/mathfns.py LLVM spellings this target cannot lower (the function then needs the library).
    math_fn_avoid: frozenset[str] = frozenset()
    # Extra function attributes for the kernel (e.g. amdgpu-flat-work-group-size).
    kernel_attributes: dict[str, str] = field(default_factory=dict)
    module_flags: tuple[str, ...] = ()


def pipeline_tuning() -> Any:
    """LLVM's -O3 pipeline options for GPU kernels.  The loop vectorizer is off: the lowering
    already emits per-thread vector accesses, it found nothing to do in our kernels, and in
    LLVM 22 it can abort on some reduction loops (a failed cost-model assertion)."""
    import llvmlite.binding as llvm
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = False
    return options
