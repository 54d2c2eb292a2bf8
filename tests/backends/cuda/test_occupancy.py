"""One more program per SM where registers alone keep it out (``backends/cuda/occupancy.py``): the
arithmetic, the PTX directive, the load-twice decision over a stand-in driver, and, with ptxas,
the tutorial's causal attention at d=64 (198 registers, one program per SM, although its 64 KB of
shared memory would let three share an SM) brought to two programs with its spills outside loops."""


import importlib.util
import sys
from pathlib import Path

import pytest
from test_attention_codegen import attention_ptx, needs_ptxas
from test_cuda import needs_gpu

from tiles.backends.base import Options
from tiles.backends.cuda import CUDABackend, nvptx_target, occupancy, toolchain
from tiles.backends.cuda import driver as cu
from tiles.backends.cuda.choices import lower_chosen

CORPUS = Path(__file__).resolve().parents[2] / "compat" / "kernels"

H200 = occupancy.SMLimits()


@pytest.mark.parametrize("registers,threads,shared,expected", [
    (198, 256, 64 * 1024, (1, 3)),     # causal attention d=64, 128x64 on 8 warps
    (128, 256, 64 * 1024, (2, 3)),
    (255, 128, 128 * 1024, (2, 1)),    # a 128x128 matmul on 4 warps: shared memory limits it
    (32, 1024, 0, (2, 2)),
    (40, 128, 0, (12, 16)),
])
def test_programs_per_sm(registers, threads, shared, expected):
    assert occupancy.programs_per_sm(registers, threads, shared, H200) == expected


@pytest.mark.parametrize("registers,threads,shared,wanted", [
    (198, 256, 64 * 1024, 2),
    (128, 256, 64 * 1024, None),       # two programs of 8 warps: enough warps
    (255, 128, 64 * 1024, 3),          # two programs of 4 warps, shared memory would allow three
    (255, 128, 128 * 1024, None),      # shared memory is the limit
    (40, 128, 0, None),                # 12 programs of 4 warps: plenty of warps already
    (168, 256, 100 * 1024, 2),         # 100 KB + 1 KB reserved, twice, fits in 228 KB
    (168, 256, 120 * 1024, None),      # once only
])
def test_wanted_programs(registers, threads, shared, wanted):
    assert occupancy.wanted_programs(registers, threads, shared, H200) == wanted


def test_directive_follows_the_thread_count():
    ptx = ".visible .entry k(\n.param .u64 k_0\n)\n.maxntid 256, 1, 1\n{\nret;\n}\n"
    out = occupancy.with_min_programs(ptx, 2)
    assert out is not None and ".maxntid 256, 1, 1\n.minnctapersm 2\n{" in out
    assert occupancy.with_min_programs(ptx.replace(".maxntid 256, 1, 1\n", ""), 2) is None


def test_room_and_accumulators():
    assert occupancy.room_for(256, 2, H200) == 128 and occupancy.room_for(128, 3, H200) == 168
    assert occupancy.largest_accumulator(attention_ptx(64, 128, 64, 8, 3, causal=True)) == 32
    assert occupancy.largest_accumulator(WIDE_TILE.decode()) == 128 and occupancy.largest_accumulator("ret;") == 0


class StandInDriver:
    """Loads report the registers and local bytes scripted per image (the first load, then the second)."""

    def __init__(self, reports, device_fails=False):
        self.reports, self.images, self.unloaded, self.device_fails = list(reports), [], [], device_fails

    def load_module(self, image):
        self.images.append(image)
        if len(self.images) > len(self.reports):  # ptxas refuses the capped kernel
            raise cu.CUDAError("cuModuleLoadData failed: CUDA error 218 (CUDA_ERROR_INVALID_PTX)")
        return len(self.images)

    def get_function(self, module, name):
        return 100 + module

    def function_attribute(self, function, attribute):
        registers, local = self.reports[function - 101]
        return {cu.CU_FUNC_ATTRIBUTE_NUM_REGS: registers, cu.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: local,
                cu.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: 0}[attribute]

    def context_device(self):
        return 0

    def device_attribute(self, attribute, device):
        if self.device_fails:
            raise cu.CUDAError("no such attribute")
        return {82: 65536, 39: 2048, 106: 32, 81: 228 * 1024, 111: 1024}[attribute]

    def unload_module(self, module):
        self.unloaded.append(module)


PTX = b".visible .entry k()\n.maxntid 256, 1, 1\n{\nret;\n}\n"
WIDE_TILE = PTX.replace(b"ret;", ("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 {"
                                  + ", ".join(f"%r{i}" for i in range(128)) + "}, %rd1, %rd2, p, 1, 1;\nret;").encode())


@pytest.mark.parametrize("device_fails", [False, True])
def test_load_keeps_the_capped_kernel_when_it_spills_little(device_fails):
    drv = StandInDriver([(198, 0), (128, 72)], device_fails)
    loaded = occupancy.load(drv, PTX, "k", 256, 64 * 1024)
    assert (loaded.function, loaded.asked) == (102, 2) and drv.unloaded == [1]
    assert b".minnctapersm 2" in drv.images[1] and b".minnctapersm" not in drv.images[0]


@pytest.mark.parametrize("second", [(128, 72 + occupancy.SPILL_ALLOWANCE + 8), (136, 0)])
def test_load_keeps_the_first_kernel_when_capping_fails(second):
    drv = StandInDriver([(198, 0), second])
    loaded = occupancy.load(drv, PTX, "k", 256, 64 * 1024)
    assert (loaded.function, loaded.asked) == (101, 0) and drv.unloaded == [2]


def test_load_keeps_the_first_kernel_when_the_capped_one_does_not_compile():
    drv = StandInDriver([(198, 0)])
    loaded = occupancy.load(drv, PTX, "k", 256, 64 * 1024)
    assert (loaded.function, loaded.asked) == (101, 0) and len(drv.images) == 2 and drv.unloaded == []


def test_load_once_when_registers_are_not_the_limit(monkeypatch):
    drv = StandInDriver([(198, 0)])
    assert occupancy.load(drv, PTX, "k", 256, 120 * 1024).function == 101 and len(drv.images) == 1
    drv = StandInDriver([(198, 0)])  # 128 accumulator registers: a cap of 128 would spill in the loop
    assert occupancy.load(drv, WIDE_TILE, "k", 256, 96 * 1024).function == 101 and len(drv.images) == 1
    drv = StandInDriver([(198, 0)])  # Options.codegen.occupancy off (TILES_OCCUPANCY=0)
    assert occupancy.load(drv, PTX, "k", 256, 64 * 1024, again=False).function == 101 and len(drv.images) == 1


def test_load_asks_for_one_program_per_sm_where_ptxas_spilled_for_occupancy():
    drv = StandInDriver([(32, 2232), (255, 96)])
    loaded = occupancy.load(drv, PTX, "k", 128, 16)
    assert (loaded.function, loaded.asked) == (102, 1) and drv.unloaded == [1]
    assert b".minnctapersm 1" in drv.images[1]


@pytest.mark.parametrize("first,second", [
    ((32, 2232), (255, 600)),                    # still spills more than a quarter as much
    ((32, occupancy.HEAVY_SPILL - 8), None),     # spills too little to try
])
def test_load_keeps_a_spilling_kernel_unless_one_program_per_sm_removes_most(first, second):
    drv = StandInDriver([first] + ([second] if second else []))
    loaded = occupancy.load(drv, PTX, "k", 128, 16)
    assert (loaded.function, loaded.asked) == (101, 0)
    assert len(drv.images) == (2 if second else 1) and drv.unloaded == ([2] if second else [])


def test_no_second_compile_for_spills_with_every_register_taken():
    def refuse(ptx):
        raise AssertionError("compiled again")
    assert occupancy.fewer_spills(PTX.decode(), occupancy.MAX_REGISTERS, 2232, refuse) is None


def group_norm_ptx(block):
    """PTX of the corpus' Liger-style group norm forward (one program of 4 warps per (batch, group)) with
    a ``block``-wide tile, as a launch on 16-byte aligned fp32 rows compiles it."""
    sys.path.insert(0, str(CORPUS.parent))  # the corpus modules import compat_harness
    spec = importlib.util.spec_from_file_location("corpus_group_norm", CORPUS / "liger/group_norm.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sig = {"Y_ptr": "*fp32:16", "Y_row_stride": "i32:16", "Y_col_stride": "i32:16", "X_ptr": "*fp32:16",
           "X_row_stride": "i32:16", "X_col_stride": "i32:16", "Mean_ptr": "*fp32:16", "Mean_row_stride": "i32",
           "Mean_col_stride": "i32", "RSTD_ptr": "*fp32:16", "RSTD_row_stride": "i32", "RSTD_col_stride": "i32",
           "W_ptr": "*fp32:16", "B_ptr": "*fp32:16", "hidden_size": "i32:16", "channels_per_group": "i32",
           "eps": "fp32"}
    ir = module._group_norm_forward.compile(sig, {"BLOCK_SIZE": block}, backend="cuda", num_warps=4).ir
    options = Options(4, 3, fp_fusion=CUDABackend.fp_fusion_default)
    return toolchain.to_ptx(lower_chosen(ir, nvptx_target("sm_90a"), options).code, "sm_90a")


@needs_ptxas
@pytest.mark.slow
def test_group_norm_32768_wide_keeps_its_values_in_registers():
    """ptxas sizes this kernel for 16 programs per SM (32 registers) and spills kilobytes a thread;
    asked for one program per SM it takes the registers and spills almost nothing (Triton's PTX of
    the same kernel: 255 registers, 216 bytes)."""
    ptx = group_norm_ptx(32768)
    before = toolchain.ptxas_info(ptx, "sm_90a")
    if before.get("stack_frame", 0) < 1024:
        pytest.skip(f"this ptxas gives the kernel {before['registers']} registers and spills little")
    programs, local = occupancy.settled(ptx, "sm_90a", 128, 16)
    assert programs == 1 and 4 * local <= before["stack_frame"], (before, programs, local)


@needs_ptxas
@pytest.mark.slow
def test_causal_attention_d64_gets_two_programs_per_sm_without_spilling_in_its_loops(tmp_path):
    ptx = attention_ptx(64, 128, 64, 8, 3, causal=True)
    before = toolchain.ptxas_info(ptx, "sm_90a")
    wanted = occupancy.wanted_programs(before["registers"], 256, 64 * 1024, H200)
    if wanted is None:
        pytest.skip(f"ptxas gives this kernel {before['registers']} registers: already two programs per SM")
    capped = occupancy.with_min_programs(ptx, wanted)
    assert capped is not None
    after = toolchain.ptxas_info(capped, "sm_90a")
    assert occupancy.programs_per_sm(after["registers"], 256, 64 * 1024, H200)[0] >= 2
    assert after.get("spill_stores", 0) - before.get("spill_stores", 0) <= occupancy.SPILL_ALLOWANCE


@needs_gpu
def test_the_driver_loads_causal_attention_d64_for_two_programs_per_sm():
    from tiles.backends.cuda import runtime
    runtime.make_current(runtime.primary_context(0))
    context = runtime.driver().current_context()
    loaded = runtime.LoadedKernel(attention_ptx(64, 128, 64, 8, 3, causal=True), "attn_fwd", [], 64 * 1024, 256)
    function = loaded.function(context)
    registers = runtime.driver().function_attribute(function, cu.CU_FUNC_ATTRIBUTE_NUM_REGS)
    if loaded.programs_asked[context] == 0:
        assert registers <= 128, f"{registers} registers and no second load"
    else:
        assert loaded.programs_asked[context] == 2 and registers <= 128
