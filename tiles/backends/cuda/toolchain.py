"""LLVM IR text -> optimized module -> PTX, all through llvmlite; ptxas when present."""

from __future__ import annotations

import functools
import glob
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from ..llvm.target import pipeline_tuning

TRIPLE = "nvptx64-nvidia-cuda"
# Shared (3), constant (4) and local (5) pointers are 32 bits wide (LLVM's nvptx-short-ptr):
# shared-memory addresses then stay in 32-bit registers instead of 64-bit round trips.
DATA_LAYOUT = "e-p3:32:32-p4:32:32-p5:32:32-p6:32:32-i64:64-i128:128-v16:16-v32:32-n16:32:64"


@functools.cache
def _target_machine(arch: str, ptx_version: int):
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.set_option("tiles", "--nvptx-short-ptr")
    target = llvm.Target.from_triple(TRIPLE)
    return target.create_target_machine(cpu=arch, features=f"+ptx{ptx_version}", opt=3)


def ptx_version_for(arch: str) -> int:
    """The PTX ISA version LLVM should emit for ``arch`` (sm_90a needs 8.0)."""
    num = int(re.sub(r"\D", "", arch) or 80)
    return 80 if num >= 90 else 78


@functools.cache
def libdevice_path() -> str | None:
    """NVIDIA's libdevice bitcode (accurate math), from TILES_LIBDEVICE, CUDA_HOME, the usual
    CUDA install folders, or Triton's copy; None when there is none."""
    candidates = [os.environ.get("TILES_LIBDEVICE")]
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda",
                 *sorted(glob.glob("/usr/local/cuda-*"), reverse=True)):
        if home:
            candidates.append(os.path.join(home, "nvvm", "libdevice", "libdevice.10.bc"))
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.origin:
        candidates.append(os.path.join(os.path.dirname(spec.origin), "backends", "nvidia", "lib",
                                       "libdevice.10.bc"))
    return next((c for c in candidates if c and os.path.isfile(c)), None)


@functools.cache
def _libdevice_bitcode(path: str) -> bytes:
    return Path(path).read_bytes()


def optimize(llir: str, arch: str) -> llvm.ModuleRef:
    module = llvm.parse_assembly(llir)
    module.verify()
    if "@__nv_" in llir:
        path = libdevice_path()
        if path is None:
            raise RuntimeError("the kernel calls libdevice functions but no libdevice.10.bc was found")
        lib = llvm.parse_bitcode(_libdevice_bitcode(path))
        lib.triple, lib.data_layout = module.triple, module.data_layout
        ours = {f.name for f in module.functions if not f.is_declaration}
        module.link_in(lib)
        for value in (*module.functions, *module.global_variables):
            if not value.is_declaration and value.name not in ours:
                value.linkage = "internal"  # libdevice's: the optimizer drops what the kernel does not call
    tm = _target_machine(arch, ptx_version_for(arch))
    pb = llvm.create_pass_builder(tm, pipeline_tuning())
    pb.getModulePassManager().run(module, pb)
    return module


@functools.lru_cache(maxsize=4)  # choices.py assembles its pick once; the ptx stage then asks again
def to_ptx(llir: str, arch: str) -> str:
    module = optimize(llir, arch)
    return _target_machine(arch, ptx_version_for(arch)).emit_assembly(module)


def toolchain_version() -> str:
    return f"llvmlite-{llvmlite.__version__}"


def ptxas_path() -> str | None:
    return shutil.which("ptxas")


def ptxas_info(ptx: str, arch: str) -> dict[str, int]:
    """Assemble with ptxas (when on PATH) and return registers, spills and shared memory."""
    exe = ptxas_path()
    if exe is None:
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        proc = subprocess.run([exe, f"-arch={arch}", "-v", str(src), "-o", str(Path(tmp) / "k.cubin")],
                              capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"ptxas rejected the PTX:\n{proc.stderr}")
    text = proc.stderr
    info: dict[str, int] = {}
    for key, pattern in (("registers", r"Used (\d+) registers"),
                         ("spill_stores", r"(\d+) bytes spill stores"),
                         ("spill_loads", r"(\d+) bytes spill loads"),
                         ("shared_memory", r"(\d+) bytes smem"),
                         ("stack_frame", r"(\d+) bytes stack frame")):
        m = re.search(pattern, text)
        if m:
            info[key] = int(m.group(1))
    return info
