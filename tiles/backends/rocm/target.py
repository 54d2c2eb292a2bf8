"""AMDGPU facts for the shared LLVM emitter (``LLVMTarget``) and for the backend (``Target``).

What the emitter must know beyond the ``LLVMTarget`` fields:

* Grid sizes: there is no intrinsic for them here (``num_blocks`` is empty); the kernel
  takes them as three trailing ``i32`` arguments and the launcher appends them.
* Barriers: ``llvm.amdgcn.s.barrier`` only synchronizes execution.  For LDS writes
  before it to be visible to reads after it, emit ``LDS_BARRIER`` (workgroup-scope
  release fence, barrier, acquire fence); the fences become the ``s_waitcnt`` that
  wait for outstanding LDS operations.
* LDS is ``addrspace(3)``, global memory ``addrspace(1)``; kernel arguments that are
  pointers should be ``ptr addrspace(1)`` so the metadata marks them ``global_buffer``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ...core import dtypes as D
from ..base import Target
from ..llvm.target import LLVMTarget
from . import toolchain

DEFAULT_ARCH = "gfx942"
# Architectures the tests compile for; any other gfx name LLVM knows also works.
TESTED_ARCHS = ("gfx90a", "gfx942", "gfx1100")
GLOBAL_ADDRSPACE = 1
LDS_ADDRSPACE = 3
BARRIER = "llvm.amdgcn.s.barrier"
LDS_BARRIER = (
    'fence syncscope("workgroup") release',
    f"call void @{BARRIER}()",
    'fence syncscope("workgroup") acquire',
)
MAX_WORKGROUP_SIZE = 1024


@dataclass(frozen=True)
class ArchInfo:
    name: str
    wavefront_size: int
    lds_bytes: int


_LDS_BYTES = {"gfx950": 160 * 1024}


def arch_info(arch: str) -> ArchInfo:
    """Wavefront size and LDS of ``arch`` (gfx9 and older: wave64; gfx10 and newer: wave32)."""
    m = re.fullmatch(r"gfx(\d+?)([0-9a-f]{2})", arch)
    if m is None:
        raise ValueError(f"{arch!r} is not an AMDGPU architecture name (expected e.g. {DEFAULT_ARCH})")
    major = int(m.group(1))
    return ArchInfo(arch, 64 if major <= 9 else 32, _LDS_BYTES.get(arch, 64 * 1024))


@functools.cache
def data_layout(arch: str) -> str:
    """The data layout string of the LLVM that llvmlite links (read, not hard-coded)."""
    return str(toolchain.target_machine(arch).target_data)


def llvm_target(arch: str, code_object_version: int, max_workgroup_size: int = MAX_WORKGROUP_SIZE
                ) -> LLVMTarget:
    """What the shared emitter needs to write a kernel for ``arch``.

    ``module_flags`` holds complete metadata nodes; ``max_workgroup_size`` (threads per
    program) bounds the registers LLVM may give each thread, so pass the real one.
    """
    info = arch_info(arch)
    if not 1 <= max_workgroup_size <= MAX_WORKGROUP_SIZE:
        raise ValueError(f"a workgroup has 1..{MAX_WORKGROUP_SIZE} work-items, not {max_workgroup_size}")
    return LLVMTarget(
        triple=toolchain.TRIPLE,
        data_layout=data_layout(arch),
        arch=arch,
        warp_size=info.wavefront_size,
        global_addrspace=GLOBAL_ADDRSPACE,
        shared_addrspace=LDS_ADDRSPACE,
        kernel_calling_conv="amdgpu_kernel",
        thread_id="llvm.amdgcn.workitem.id.x",
        block_id=("llvm.amdgcn.workgroup.id.x", "llvm.amdgcn.workgroup.id.y",
                  "llvm.amdgcn.workgroup.id.z"),
        num_blocks=("", "", ""),
        barrier=BARRIER,
        barrier_fence_scope="workgroup",
        sync_scopes={"cta": "workgroup", "gpu": "agent", "sys": ""},
        kernel_attributes={"amdgpu-flat-work-group-size": f"1,{max_workgroup_size}"},
        module_flags=(toolchain.code_object_version_flag(code_object_version),),
    )


def backend_target(arch: str) -> Target:
    info = arch_info(arch)
    # fp8 needs software conversions the shared LLVM emitter does not have yet (gfx942's
    # native fp8 formats are not the ones tiles uses): declared unsupported.
    dtypes = D.LOWERED_DTYPES - {D.float8e4nv, D.float8e5}
    return Target("rocm", arch, warp_size=info.wavefront_size, max_threads_per_block=MAX_WORKGROUP_SIZE,
                  shared_memory=info.lds_bytes, dtypes=dtypes)
