"""ROCmBackend: registry, availability, arch selection, stages, disk cache, launch plumbing."""

from __future__ import annotations

import contextlib
import importlib.util
import sys

import numpy as np
import pytest
import rocm_ir

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.base import LaunchArg
from tiles.backends.lowering import Lowered
from tiles.backends.rocm import ROCmBackend, runtime
from tiles.backends.rocm.codeobject import read_code_object
from tiles.backends.rocm.target import arch_info, llvm_target

SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}


@tiles.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@pytest.fixture(autouse=True)
def fresh_compiles():
    """The jit's in-memory cache is keyed by backend name, not by arch: start each test empty."""
    add_kernel.cache.clear()


@pytest.fixture
def no_device(monkeypatch):
    """Behave as on a machine without ROCm, even where there is one."""
    monkeypatch.setattr(runtime, "available", lambda: (False, "no ROCm device (test)"))


@pytest.fixture
def hand_written_emitter(monkeypatch, code_object_version):
    """Stand in for the shared LLVM emitter with a hand-written vector add of the same signature."""
    def lower(kernel, arch, options):
        threads = options.num_warps * arch_info(arch).wavefront_size
        target = llvm_target(arch, code_object_version, threads)
        return Lowered(rocm_ir.module(target, rocm_ir.vector_add(target, kernel.name)), kernel.name, threads, 0)
    monkeypatch.setattr(sys.modules["tiles.backends.rocm"], "lower_to_llvm_ir", lower)


def test_registry_finds_the_backend():
    assert isinstance(registry.get("rocm"), ROCmBackend)


def test_unavailable_without_hip_python(monkeypatch):
    runtime.load_hip.cache_clear()
    monkeypatch.setitem(sys.modules, "hip", None)
    try:
        ok, why = runtime.available()
    finally:
        runtime.load_hip.cache_clear()
    assert not ok and "hip-python is not installed" in why


def test_unavailable_without_rocm_says_why():
    if importlib.util.find_spec("hip") is None:
        pytest.skip("hip-python is not installed")
    ok, why = ROCmBackend().available()
    if ok:
        pytest.skip("a ROCm device is present")
    assert "libamdhip64" in why or "no ROCm device" in why


def test_arch_comes_from_the_environment_without_a_device(no_device, monkeypatch):
    monkeypatch.setenv("TILES_ROCM_ARCH", "gfx1100")
    backend = ROCmBackend()
    assert backend.arch() == "gfx1100"
    assert backend.target().warp_size == 32
    monkeypatch.delenv("TILES_ROCM_ARCH")
    assert backend.arch() == "gfx942"


def test_stage_names():
    assert list(ROCmBackend().stages(tiles.backends.base.Options())) == ["ir", "llir", "amdgcn", "hsaco"]


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942", "gfx1100"])
def test_traced_kernel_compiles_to_a_code_object(no_device, monkeypatch, linker, arch):
    monkeypatch.setenv("TILES_ROCM_ARCH", arch)
    compiled = add_kernel.compile(SIGNATURE, {"BLOCK": 256}, backend=ROCmBackend())
    kernel = read_code_object(compiled.asm["hsaco"]).kernel(compiled.metadata["kernel_name"])
    assert [a.value_kind for a in kernel.explicit_args][:3] == ["global_buffer"] * 3
    assert kernel.private_segment_fixed_size == 0


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942", "gfx1100"])
def test_stages_chain_to_a_code_object(no_device, hand_written_emitter, monkeypatch, arch):
    monkeypatch.setenv("TILES_ROCM_ARCH", arch)
    compiled = add_kernel.compile(SIGNATURE, {"BLOCK": 256}, backend=ROCmBackend(), num_warps=2)
    assert "add_kernel" in compiled.asm["ir"]
    assert "amdgpu_kernel" in compiled.asm["llir"]
    assert f"amdgcn-amd-amdhsa--{arch}" in compiled.asm["amdgcn"]
    assert compiled.handle == compiled.asm["hsaco"]
    meta = compiled.metadata
    assert meta["arch"] == arch and meta["kernel_name"] == "add_kernel"
    assert meta["scratch_bytes"] == 0 and meta["vgprs"] > 0
    assert meta["warp_size"] == arch_info(arch).wavefront_size
    assert "amdgpu_object" not in meta
    info = read_code_object(compiled.asm["hsaco"]).kernel("add_kernel")
    assert info.max_flat_workgroup_size == 2 * meta["warp_size"]


def test_disk_cache_round_trip(no_device, hand_written_emitter, monkeypatch):
    monkeypatch.delenv("TILES_ALWAYS_COMPILE", raising=False)
    backend = ROCmBackend()
    first = add_kernel.compile(SIGNATURE, {"BLOCK": 128}, backend=backend)
    add_kernel.cache.clear()
    monkeypatch.setattr(sys.modules["tiles.backends.rocm"], "lower_to_llvm_ir",
                        lambda *a: pytest.fail("compiled again instead of loading from disk"))
    second = add_kernel.compile(SIGNATURE, {"BLOCK": 128}, backend=backend)
    assert second is not first
    assert second.asm["hsaco"] == first.asm["hsaco"] and second.metadata == first.metadata


class RecordingKernel:
    launches: list = []

    def __init__(self, image, name):
        self.name = name

    def launch(self, grid, block, kernargs, shared_bytes=0, stream=0, device=None):
        self.launches.append((self.name, grid, block, kernargs))
        self.shared = shared_bytes


class FakeStaging:
    finished = 0

    def __init__(self, stream=0):
        self.stream = stream

    def device_address(self, arg):
        return 0x1000 * (1 + ["x_ptr", "y_ptr", "out_ptr"].index(arg.name))

    def finish(self):
        FakeStaging.finished += 1


def test_launch_packs_arguments_for_hip(no_device, hand_written_emitter, monkeypatch):
    monkeypatch.setattr(runtime, "LoadedKernel", RecordingKernel)
    monkeypatch.setattr(runtime, "ArgumentStaging", FakeStaging)
    monkeypatch.setattr(runtime, "launch_device", lambda args: 0)
    monkeypatch.setattr(runtime, "OnDevice", lambda device: contextlib.nullcontext())
    monkeypatch.setenv("TILES_ROCM_ARCH", "gfx1100")
    backend = ROCmBackend()
    compiled = add_kernel.compile(SIGNATURE, {"BLOCK": 256}, backend=backend, num_warps=8)
    x = np.zeros(3, np.float32)
    args = [LaunchArg("x_ptr", x, True, False), LaunchArg("y_ptr", x, True, False),
            LaunchArg("out_ptr", x, True, True), LaunchArg("n", 3, False)]
    RecordingKernel.launches.clear()
    backend.launch(compiled, (5, 1, 1), args)
    (name, grid, block, kernargs), = RecordingKernel.launches
    assert (name, grid, block) == ("add_kernel", (5, 1, 1), 8 * 32)
    assert np.frombuffer(kernargs[:24], np.uint64).tolist() == [0x1000, 0x2000, 0x3000]
    assert np.frombuffer(kernargs[24:40], np.int32).tolist() == [3, 5, 1, 1]
    assert FakeStaging.finished == 1
