"""LLVM IR text -> optimized module -> AMDGPU object and ISA (llvmlite) -> HSACO (ld.lld).

The linker is the only external tool: ROCm's ``/opt/rocm/llvm/bin/ld.lld`` when installed,
else any ``ld.lld`` on PATH.  Older linkers (Debian's LLD 14) only accept code object v4,
so the code object version is chosen by linking a probe kernel with each candidate.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from ..llvm.target import pipeline_tuning

TRIPLE = "amdgcn-amd-amdhsa"
# Newest first: the first one the linker accepts wins.
CODE_OBJECT_VERSIONS = (6, 5, 4)
ROCM_LINKER_DIRS = ("/opt/rocm/llvm/bin",)


class ToolchainError(RuntimeError):
    pass


def code_object_version_flag(version: int) -> str:
    """The module flag that makes LLVM emit code object ``version`` (4, 5, 6)."""
    return f'!{{i32 1, !"amdhsa_code_object_version", i32 {version * 100}}}'


@functools.cache
def target_machine(arch: str) -> llvm.TargetMachine:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, opt=3, reloc="pic")


def optimize(llir: str, arch: str) -> llvm.ModuleRef:
    """Parse, verify and run the O3 pipeline; raises on IR the verifier rejects."""
    module = llvm.parse_assembly(llir)
    module.verify()
    tm = target_machine(arch)
    pb = llvm.create_pass_builder(tm, pipeline_tuning())
    pb.getModulePassManager().run(module, pb)
    return module


@dataclass(frozen=True)
class MachineCode:
    object: bytes   # relocatable ELF, input of the linker
    assembly: str   # the same code as GCN/RDNA ISA text


def emit_machine_code(module: llvm.ModuleRef, arch: str) -> MachineCode:
    """Object and ISA text of an optimized module.

    AMDGPU code generation rewrites the module in place (control flow becomes
    ``llvm.amdgcn.if`` intrinsics), so each emission gets its own copy.
    """
    tm = target_machine(arch)
    optimized = str(module)
    obj = tm.emit_object(llvm.parse_assembly(optimized))
    asm = tm.emit_assembly(llvm.parse_assembly(optimized))
    return MachineCode(obj, asm)


def find_linker() -> str | None:
    """``ld.lld`` from ROCm ($ROCM_PATH, /opt/rocm) first, then from PATH."""
    dirs = [str(Path(os.environ["ROCM_PATH"]) / "llvm" / "bin")] if os.environ.get("ROCM_PATH") else []
    for d in (*dirs, *ROCM_LINKER_DIRS):
        candidate = Path(d) / "ld.lld"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("ld.lld")


def _run_linker(linker: str, obj: bytes) -> bytes:
    with tempfile.TemporaryDirectory(prefix="tiles-rocm-") as tmp:
        src, out = Path(tmp) / "kernel.o", Path(tmp) / "kernel.hsaco"
        src.write_bytes(obj)
        proc = subprocess.run([linker, "-shared", "--no-undefined", str(src), "-o", str(out)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ToolchainError(f"{linker} failed to link the AMDGPU object:\n{proc.stderr.strip()}")
        return out.read_bytes()


def link(obj: bytes, linker: str | None = None) -> bytes:
    """The loadable code object (HSACO) for a relocatable AMDGPU object."""
    linker = linker or find_linker()
    if linker is None:
        raise ToolchainError("no ld.lld found (looked in $ROCM_PATH/llvm/bin, /opt/rocm/llvm/bin "
                             "and PATH); install ROCm or `apt-get install lld`")
    return _run_linker(linker, obj)


_PROBE_KERNEL = """
target triple = "amdgcn-amd-amdhsa"
define amdgpu_kernel void @probe() {{
  ret void
}}
!llvm.module.flags = !{{!0}}
!0 = {flag}
"""


@functools.cache
def code_object_version(linker: str, arch: str = "gfx942") -> int:
    """The newest code object version ``linker`` links, found by linking a probe kernel."""
    errors = []
    for version in CODE_OBJECT_VERSIONS:
        module = optimize(_PROBE_KERNEL.format(flag=code_object_version_flag(version)), arch)
        try:
            _run_linker(linker, emit_machine_code(module, arch).object)
            return version
        except ToolchainError as e:
            errors.append(f"v{version}: {e}")
    raise ToolchainError(f"{linker} links no AMDGPU code object version we emit:\n" + "\n".join(errors))


@functools.cache
def toolchain_version() -> str:
    """llvmlite and linker versions: part of the compile cache key."""
    linker = find_linker()
    if linker is None:
        return f"llvmlite-{llvmlite.__version__}"
    lines = subprocess.run([linker, "--version"], capture_output=True, text=True).stdout.splitlines()
    return f"llvmlite-{llvmlite.__version__}; {lines[0] if lines else linker}"
