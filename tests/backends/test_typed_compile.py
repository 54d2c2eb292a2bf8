"""The typed hand-offs of a compile: ``Options`` in, ``Lowered`` out of the lowering, typed fields on
``CompiledKernel`` (with a read-only ``metadata`` view), and options the code does not follow
recorded in ``not_applied`` instead of dropped.  Compile-only (PTX for sm_90 and OpenCL C): no GPU."""

import json

import pytest

import tiles
import tiles.language as tl
from tiles.backends.base import CompiledKernel, Options, Target
from tiles.backends.cuda import CUDABackend, nvptx_target
from tiles.backends.llvm.emit import lower_module
from tiles.backends.lowering import lower
from tiles.backends.opencl.emit_c import OpenCLEmitter
from tiles.backends.rocm.target import backend_target


class CompileOnlyCUDA(CUDABackend):
    name = "cuda-typed-compile-test"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def arch(self) -> str:
        return "sm_90"

    def current_device(self) -> int:
        return 0


@tiles.jit
def row_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


@tiles.jit
def staged_sum(x_ptr, out_ptr, n, STAGES: tl.constexpr, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in tl.range(0, n, BLOCK, num_stages=STAGES):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + tl.program_id(0), tl.sum(acc, axis=0))


SIGNATURE = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32"}


@pytest.mark.parametrize("num_warps", [1, 4, 8])
def test_compiled_kernel_has_typed_launch_facts(num_warps):
    compiled = row_sum.compile(SIGNATURE, {"BLOCK": 1024}, backend=CompileOnlyCUDA(), num_warps=num_warps)
    assert compiled.threads == num_warps * 32
    assert compiled.entry == "row_sum" and compiled.arch == "sm_90"
    assert f".maxntid {num_warps * 32}" in compiled.asm["ptx"]
    # a cross-warp reduction stages one float32 partial sum per warp in shared memory (16-byte
    # granules); within one warp, shuffles need none
    assert compiled.shared == (0 if num_warps == 1 else max(16, 4 * num_warps))
    assert "tiles.local_bytes" not in compiled.asm["llir"]  # no metadata written into the code


def test_metadata_is_a_read_only_json_view_of_the_typed_fields():
    compiled = row_sum.compile(SIGNATURE, {"BLOCK": 256}, backend=CompileOnlyCUDA(), num_warps=4)
    meta = compiled.metadata
    assert (meta["threads"], meta["shared"], meta["entry"], meta["arch"]) == (
        compiled.threads, compiled.shared, compiled.entry, compiled.arch)
    assert json.loads(json.dumps(meta)) == meta
    with pytest.raises(TypeError, match="read-only"):
        meta["threads"] = 1
    with pytest.raises(TypeError, match="read-only"):
        meta.update(shared=0)
    saved = json.loads(json.dumps(meta))
    restored = CompiledKernel.restore(compiled.ir, compiled.options, compiled.asm, saved)
    assert restored.metadata == meta and restored.threads == compiled.threads
    # positionally, as backends' load_cached build it: the saved dict's launch facts fill the fields
    positional = CompiledKernel(compiled.name, compiled.ir, compiled.options, dict(compiled.asm), dict(saved))
    assert (positional.threads, positional.shared, positional.extra) == (compiled.threads, compiled.shared, {})


def test_threads_come_from_options_and_the_target_width():
    assert Options(num_warps=4).threads(Target("cuda", warp_size=32)) == 128
    assert Options(num_warps=4).threads(backend_target("gfx942")) == 256  # 64-wide wavefronts
    ir = row_sum.compile(SIGNATURE, {"BLOCK": 512}, backend=CompileOnlyCUDA(), num_warps=2).ir
    lowered = lower_module(ir, nvptx_target("sm_90"), Options(num_warps=2))
    assert (lowered.threads, lowered.entry) == (64, "row_sum")
    assert lowered.code.startswith("target triple")


def test_opencl_lowering_reports_its_entry_and_local_memory():
    ir = row_sum.compile(SIGNATURE, {"BLOCK": 512}, backend=CompileOnlyCUDA(), num_warps=4).ir
    lowered = lower(ir, OpenCLEmitter(Target("opencl", warp_size=32), fp64=False), Options(num_warps=4))
    assert lowered.entry == "tiles_row_sum" and f"void {lowered.entry}(" in lowered.code
    assert lowered.threads == 128
    assert lowered.shared_bytes > 0 and f"tiles_local[{lowered.shared_bytes}]" in lowered.code


def test_loop_num_stages_that_cannot_be_honoured_is_reported():
    compiled = staged_sum.compile(SIGNATURE, {"STAGES": 3, "BLOCK": 128}, backend=CompileOnlyCUDA())
    (note,) = compiled.not_applied
    assert "num_stages=3" in note and "test_typed_compile.py:" in note
    assert compiled.metadata["not_applied"] == [note]
    plain = staged_sum.compile(SIGNATURE, {"STAGES": 1, "BLOCK": 128}, backend=CompileOnlyCUDA())
    assert plain.not_applied == ()
