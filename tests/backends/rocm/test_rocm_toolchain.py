"""Hand-written AMDGPU kernels through llvmlite and ld.lld, checked by reading the code object."""

from __future__ import annotations

import re
import struct

import llvmlite.binding as llvm
import pytest
import rocm_ir

from tiles.backends.rocm import toolchain
from tiles.backends.rocm.codeobject import ELFOSABI_AMDGPU_HSA, EM_AMDGPU, read_code_object
from tiles.backends.rocm.target import LDS_BARRIER, TESTED_ARCHS, llvm_target

# e_flags & EF_AMDGPU_MACH (0xff), from LLVM's ELF.h.
MACH = {"gfx90a": 0x3F, "gfx942": 0x4C, "gfx1100": 0x41}
WAVEFRONT = {"gfx90a": 64, "gfx942": 64, "gfx1100": 32}


def build(arch: str, version: int, *kernels, block: int = 256) -> toolchain.MachineCode:
    target = llvm_target(arch, version, block)
    text = rocm_ir.module(target, "".join(k(target) for k in kernels))
    return toolchain.emit_machine_code(toolchain.optimize(text, arch), arch)


@pytest.fixture(scope="module", params=TESTED_ARCHS)
def compiled(request, linker, code_object_version):
    arch = request.param
    code = build(arch, code_object_version, rocm_ir.vector_add, rocm_ir.scale)
    return arch, code, toolchain.link(code.object, linker)


def test_linked_code_object_is_an_amdgpu_shared_object(compiled, code_object_version):
    arch, _, image = compiled
    ident, e_type, e_machine = struct.unpack_from("<16sHH", image)
    assert ident[:4] == b"\x7fELF" and ident[4] == 2  # ELF64
    assert ident[7] == ELFOSABI_AMDGPU_HSA
    assert e_machine == EM_AMDGPU == 224
    assert e_type == 3  # ET_DYN: what hipModuleLoadData loads
    code = read_code_object(image)
    assert code.flags & 0xFF == MACH[arch]
    assert code.target == f"amdgcn-amd-amdhsa--{arch}"
    assert code.code_object_version == code_object_version


def test_one_kernel_descriptor_per_kernel(compiled):
    _, _, image = compiled
    code = read_code_object(image)
    assert sorted(k.name for k in code.kernels) == ["scale", "vector_add"]
    descriptors = sorted(s.name for s in code.kernel_descriptors())
    assert descriptors == ["scale.kd", "vector_add.kd"]
    assert all(s.size == 64 for s in code.kernel_descriptors())
    assert {k.symbol for k in code.kernels} == set(descriptors)


def test_metadata_gives_the_argument_layout(compiled):
    arch, _, image = compiled
    code = read_code_object(image)
    vadd = code.kernel("vector_add")
    assert [(a.name, a.offset, a.size, a.value_kind) for a in vadd.explicit_args] == [
        ("x", 0, 8, "global_buffer"), ("y", 8, 8, "global_buffer"), ("out", 16, 8, "global_buffer"),
        ("n", 24, 4, "by_value"),
        ("num_programs_x", 28, 4, "by_value"), ("num_programs_y", 32, 4, "by_value"),
        ("num_programs_z", 36, 4, "by_value")]
    assert vadd.explicit_args[0].address_space == "global"
    scale = code.kernel("scale")
    assert [(a.name, a.offset, a.size) for a in scale.explicit_args[:2]] == [("x", 0, 8), ("alpha", 8, 8)]
    assert vadd.wavefront_size == WAVEFRONT[arch]
    assert vadd.max_flat_workgroup_size == 256
    assert vadd.kernarg_segment_size >= 40


def test_no_scratch_and_no_spills(compiled):
    _, _, image = compiled
    for kernel in read_code_object(image).kernels:
        assert kernel.private_segment_fixed_size == 0
        assert not kernel.uses_dynamic_stack
        assert kernel.sgpr_spill_count == kernel.vgpr_spill_count == 0
        assert 0 < kernel.vgpr_count <= 16
        assert kernel.group_segment_fixed_size == 0


def test_relocatable_object_carries_the_same_metadata(compiled):
    _, code, image = compiled
    before, after = read_code_object(code.object), read_code_object(image)
    assert before.kernels == after.kernels


def test_isa_text_is_for_the_arch(compiled):
    arch, code, _ = compiled
    assert f'.amdgcn_target "amdgcn-amd-amdhsa--{arch}' in code.assembly
    assert re.search(r"global_load_(dword|b32)", code.assembly)
    assert "s_endpgm" in code.assembly


@pytest.mark.parametrize("arch", TESTED_ARCHS)
def test_fenced_barrier_waits_for_lds_stores(arch, linker, code_object_version):
    def instructions_before_barrier(asm: str) -> list[str]:
        lines = [s.strip() for s in asm.splitlines()]
        lines = [s for s in lines if s and not s.startswith((".", ";")) and not s.endswith(":")]
        at = next(i for i, s in enumerate(lines) if s.startswith("s_barrier"))
        return lines[at - 2:at]

    fenced = build(arch, code_object_version, rocm_ir.reverse_through_lds)
    assert instructions_before_barrier(fenced.assembly)[-1] == "s_waitcnt lgkmcnt(0)"
    kernel = read_code_object(toolchain.link(fenced.object, linker)).kernel("reverse")
    assert kernel.group_segment_fixed_size == 256 * 4
    # Why the fences are required: the bare barrier does not wait for the LDS store.
    bare = build(arch, code_object_version,
                 lambda t: rocm_ir.reverse_through_lds(t).replace(LDS_BARRIER[0], "")
                 .replace(LDS_BARRIER[2], ""))
    assert instructions_before_barrier(bare.assembly)[-1].startswith("ds_")


def test_code_object_version_is_the_newest_the_linker_links(linker, code_object_version):
    assert code_object_version in toolchain.CODE_OBJECT_VERSIONS
    code = build("gfx942", code_object_version, rocm_ir.vector_add)
    assert read_code_object(toolchain.link(code.object, linker)).code_object_version == code_object_version
    if code_object_version < max(toolchain.CODE_OBJECT_VERSIONS):
        newer = build("gfx942", code_object_version + 1, rocm_ir.vector_add)
        with pytest.raises(toolchain.ToolchainError, match="failed to link"):
            toolchain.link(newer.object, linker)


def test_debian_lld_14_gets_code_object_v4(linker, code_object_version):
    import subprocess
    banner = subprocess.run([linker, "--version"], capture_output=True, text=True).stdout
    if not re.search(r"LLD 1[0-4]\.", banner):
        pytest.skip(f"the linker is not LLD 14 or older: {banner.strip()}")
    assert code_object_version == 4


def test_invalid_ir_is_rejected_before_code_generation():
    bad = 'target triple = "amdgcn-amd-amdhsa"\ndefine amdgpu_kernel void @k() {\n  ret i32 0\n}\n'
    with pytest.raises(RuntimeError):
        toolchain.optimize(bad, "gfx942")


def test_missing_linker_is_explained(monkeypatch):
    monkeypatch.setattr(toolchain, "find_linker", lambda: None)
    with pytest.raises(toolchain.ToolchainError, match="no ld.lld found"):
        toolchain.link(b"")


def test_rocm_linker_is_preferred_over_path(tmp_path, monkeypatch):
    rocm_linker = tmp_path / "llvm" / "bin" / "ld.lld"
    rocm_linker.parent.mkdir(parents=True)
    rocm_linker.write_text("#!/bin/sh\n")
    rocm_linker.chmod(0o755)
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))
    assert toolchain.find_linker() == str(rocm_linker)


def test_llvmlite_knows_the_amdgpu_target():
    llvm.initialize_all_targets()
    assert llvm.Target.from_triple(toolchain.TRIPLE).name == "amdgcn"
