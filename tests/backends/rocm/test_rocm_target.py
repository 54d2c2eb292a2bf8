"""The AMDGPU facts handed to the shared LLVM emitter."""

from __future__ import annotations

import llvmlite.binding as llvm
import pytest

from tiles.backends.rocm import target, toolchain

LLVM_22_DATA_LAYOUT = (
    "e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32"
    "-p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256"
    "-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9")


@pytest.mark.parametrize("arch, wave", [("gfx90a", 64), ("gfx942", 64), ("gfx1100", 32)])
def test_llvm_target_fields(arch, wave):
    t = target.llvm_target(arch, 5, max_workgroup_size=512)
    assert (t.triple, t.arch, t.warp_size) == ("amdgcn-amd-amdhsa", arch, wave)
    assert (t.global_addrspace, t.shared_addrspace) == (1, 3)
    assert t.kernel_calling_conv == "amdgpu_kernel"
    assert t.thread_id == "llvm.amdgcn.workitem.id.x"
    assert t.block_id == tuple(f"llvm.amdgcn.workgroup.id.{d}" for d in "xyz")
    assert t.num_blocks == ("", "", "")  # grid sizes are trailing kernel arguments
    assert t.barrier == "llvm.amdgcn.s.barrier"
    assert t.kernel_attributes == {"amdgpu-flat-work-group-size": "1,512"}
    assert t.module_flags == ('!{i32 1, !"amdhsa_code_object_version", i32 500}',)


def test_data_layout_is_the_one_llvm_uses():
    layout = target.data_layout("gfx942")
    assert layout == str(toolchain.target_machine("gfx942").target_data)
    if llvm.llvm_version_info[0] == 22:
        assert layout == LLVM_22_DATA_LAYOUT
    assert layout.startswith("e-m:e-p:64:64-p1:64:64")


@pytest.mark.parametrize("arch, wave, lds", [
    ("gfx908", 64, 65536), ("gfx950", 64, 160 * 1024), ("gfx1030", 32, 65536), ("gfx1201", 32, 65536)])
def test_other_architectures_follow_their_generation(arch, wave, lds):
    info = target.arch_info(arch)
    assert (info.wavefront_size, info.lds_bytes) == (wave, lds)


@pytest.mark.parametrize("name", ["sm_90", "gfx", "942", "gfx9x2"])
def test_bad_architecture_names(name):
    with pytest.raises(ValueError, match="not an AMDGPU architecture"):
        target.arch_info(name)


@pytest.mark.parametrize("size", [0, 2048])
def test_workgroup_size_bounds(size):
    with pytest.raises(ValueError, match="1..1024"):
        target.llvm_target("gfx942", 4, size)


def test_backend_target():
    t = target.backend_target("gfx1100")
    assert (t.backend, t.arch, t.warp_size, t.max_threads_per_block, t.shared_memory) == (
        "rocm", "gfx1100", 32, 1024, 65536)
