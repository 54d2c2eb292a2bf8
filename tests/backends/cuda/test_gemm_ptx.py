"""What the tutorial-form GEMM's sm_90a PTX must keep: each check pins one difference from
Triton's code for the same kernel and configuration that cost measurable speed on the H200
(``benchmarks/realworld_gemm.py``).  The PTX comes from llvmlite; register and spill counts need
``ptxas``."""

import re

import pytest
from test_tutorial_forms import tutorial_matmul

from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel
from tiles.backends.cuda.ptx_loops import loop_events, mma_loop, summarize

needs_ptxas = pytest.mark.skipif(toolchain.ptxas_path() is None, reason="ptxas is not on PATH")


def tutorial_ptx(bm, bn, bk, warps, stages, wrap=True, kmask=True, dtype="fp16", trans_b=False, size=4096):
    """PTX of the tutorial matmul as the benchmark launches it on ``size``-cubed operands: run-time
    sizes and leading strides divisible by 16, unit strides specialized to 1."""
    unit = {"stride_ak", "stride_cn", "stride_bk" if trans_b else "stride_bn"}
    sig = {"a_ptr": f"*{dtype}:16", "b_ptr": f"*{dtype}:16", "c_ptr": "*fp16:16"}
    consts = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, WRAP=wrap, KMASK=kmask)
    for name in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn"):
        if name in unit:
            consts[name] = 1
        else:
            sig[name] = "i32:16"
    ir = tutorial_matmul.compile(sig, consts, backend="cuda", num_warps=warps, num_stages=stages).ir
    return toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(warps, stages)), "sm_90a")


def main_loop(ptx: str) -> str:
    loop = mma_loop(ptx)
    assert loop, "no single-block loop issues wgmma"
    return loop


def test_each_warpgroup_spans_the_whole_n():
    """128x256 on two warpgroups: one m64n256k16 per warpgroup and k16 step (A read once per 256
    columns), not pairs of m64n128k16 that read A twice (96 KB of operand reads per BLOCK_K=64
    step against 80 KB; with cp.async's writes that exceeded the SM's local-memory bandwidth)."""
    loop = main_loop(tutorial_ptx(128, 256, 64, 8, 4))
    shapes = re.findall(r"wgmma\.mma_async\.sync\.aligned\.(m\d+n\d+k\d+)", loop)
    assert shapes == ["m64n256k16"] * 4


@pytest.mark.parametrize("bm,bn,stages", [(128, 256, 3), (128, 128, 3), (128, 256, 4), (128, 128, 2)])
def test_copies_run_stages_minus_one_ahead_with_a_group_in_flight(bm, bn, stages):
    """Triton's schedule: the copies go after this iteration's MMAs and the wait that completes
    the previous group, behind a second barrier, into the stage that group read.  So num_stages=S
    keeps S-1 stages of copies in flight (wait_group S-2) and one MMA group; with the copies
    first, the same S gave one stage less (128x128 s3: one stage ahead, against Triton's two).
    A ``fence.proxy.async`` between the wait and the MMAs: cp.async writes the stage through the
    generic proxy and wgmma reads it through the async proxy (PTX's memory model asks for the
    fence; Triton 3.9 emits it, 3.6 did not)."""
    loop = main_loop(tutorial_ptx(bm, bn, 64, 8, stages))
    assert loop_events(loop) == [
        f"cp.async.wait_group {stages - 2}", "fence.proxy.async", "bar.sync", "wgmma.mma_async",
        "wgmma.commit_group", "wgmma.wait_group.sync.aligned 1", "bar.sync", "cp.async", "cp.async.commit_group"]


@pytest.mark.parametrize("dtype", ["fp8e4nv", "fp8e5"])
def test_eight_bit_operands_copy_16_bytes_per_cp_async(dtype):
    """fp8 (B transposed in memory, as wgmma reads 8-bit B K-major): each thread copies 16-byte
    chunks with cp.async.cg, as Triton does, not twice as many 8-byte cp.async.ca."""
    loop = main_loop(tutorial_ptx(128, 128, 64, 8, 3, wrap=False, kmask=False, dtype=dtype, trans_b=True))
    copies = re.findall(r"cp\.async\.(\w+)\.shared\.global \[[^]]+\], \[[^]]+\], (\d+)", loop)
    assert copies == [("cg", "16")] * 4  # (128 + 128) rows x 64 bytes / 16 bytes / 256 threads


def test_loop_summary_reads_both_spellings():
    """``ptx_loops`` (also used by benchmarks/gemm_codegen.py) reads llvmlite's operands and the
    spaced, hex-sized ones other compilers print, and skips loops without wgmma."""
    ptx = "\n".join([
        "$L__BB0_1:", "\tadd.s32 %r1, %r1, 1;", "\t@%p1 bra \t$L__BB0_1;",
        "$L__BB0_2:                // loop header", "\tcp.async.wait_group \t2;", "\tbar.sync \t0;",
        "\twgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%r1}, %rd1, %rd2, %p1, 1, 1, 0, 1;",
        "\twgmma.commit_group.sync.aligned;", "\twgmma.wait_group.sync.aligned 1;",
        "\tcp.async.cg.shared.global [ %r2 + 0 ], [ %rd3 + 0 ], 0x10, %r3;",
        "\tcp.async.ca.shared.global [%r4], [%rd4], 8, %r5;", "\tcp.async.commit_group;",
        "\t@%p2 bra \t$L__BB0_2;"])
    summary = summarize(ptx)
    assert summary is not None
    assert summary.events == ["cp.async.wait_group 2", "bar.sync", "wgmma.mma_async", "wgmma.commit_group",
                              "wgmma.wait_group.sync.aligned 1", "cp.async", "cp.async.commit_group"]
    assert summary.wgmma == {"m64n128k16.f32.bf16": 1}
    assert summary.copies == {"cg 16": 1, "ca 8": 1}
    assert summarize(ptx.replace("wgmma.mma_async", "mma.sync")) is None


def copy_address_roots(loop: str) -> set[str]:
    """The registers the loop's cp.async destinations are computed from: a destination defined as
    ``add.s32 %d, %base, <constant>`` counts as its base."""
    defs = dict(re.findall(r"add\.s32\s+(%r\d+), (%r\d+), -?\d+;", loop))
    dests = re.findall(r"cp\.async\.\w+\.shared\.global \[(%r\d+)\]", loop)
    return {defs.get(d, d) for d in dests}


@pytest.mark.parametrize("bm,bn,wrap", [(128, 256, True), (128, 128, False)])
def test_copies_address_each_operand_from_one_register(bm, bn, wrap):
    """A thread's later chunks lie whole swizzle atoms below its first: their destinations are
    the first one's plus a constant (one register per operand, as Triton's), not one register per
    chunk (12 of them at 128x256)."""
    loop = main_loop(tutorial_ptx(bm, bn, 64, 8, 3, wrap=wrap, kmask=wrap))
    assert len(copy_address_roots(loop)) == 2


@needs_ptxas
@pytest.mark.parametrize("trans_b", [False, True])
def test_128x128_on_8_warps_leaves_room_for_two_programs_per_sm(trans_b):
    """Triton's best configuration for B transposed and fp8, 128x128x64 on 8 warps with 3 stages
    (96 KB of stages): two programs fit on an SM only at 128 registers or fewer (118-122 with this
    ptxas; 128 before the copies shared their address registers)."""
    ptx = tutorial_ptx(128, 128, 64, 8, 3, wrap=False, kmask=False, trans_b=trans_b)
    info = toolchain.ptxas_info(ptx, "sm_90a")
    assert info["registers"] <= 128 and info.get("spill_stores", 0) == 0


@pytest.mark.parametrize("bm,bn,stages", [(128, 256, 3), (128, 128, 4)])
def test_k_masks_are_the_copies_own_predicates(bm, bn, stages):
    """A K-masked chunk is copied with the mask as cp.async's ignore-src predicate: one compare per
    chunk in the loop, nothing selected.  As a src-size of 16 or 0 (Triton's spelling) every
    masked chunk took a compare, two selects and a test of the selected size again in SASS (132
    instructions per 128x256 step against 96 without masks)."""
    loop = main_loop(tutorial_ptx(bm, bn, 64, 8, stages))
    copies = re.findall(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16(, %p\d+)?;", loop)
    assert copies and all(copies), "every copy in the loop should carry its mask as a predicate"
    sizes = re.compile(r"selp\.b32\s+%r\d+, 16, 0")
    assert not sizes.search(loop), "a mask selected a copy size"
    unmasked = main_loop(tutorial_ptx(bm, bn, 64, 8, stages, wrap=False, kmask=False))
    setp = len(re.findall(r"\bsetp\.", loop)) - len(re.findall(r"\bsetp\.", unmasked))
    assert setp <= len(copies), "at most one compare per masked chunk"


def test_wgmma_descriptors_come_from_a_warp_uniform_index():
    """Each warpgroup's descriptors are built from lane 0's warp index (``shfl.sync.idx``, once at
    the kernel's entry), which ptxas knows is the same on every lane: the descriptors stay in
    uniform registers instead of being moved there (R2UR) before every wgmma, as Triton's."""
    ptx = tutorial_ptx(128, 256, 64, 8, 3)
    shuffles = [m.start() for m in re.finditer(r"shfl\.sync\.idx\.b32", ptx)]
    assert len(shuffles) == 1
    first_label = re.search(r"^\$L__BB\d+_\d+:", ptx, re.M)
    assert first_label is None or shuffles[0] < first_label.start(), "the shuffle should run once, before any loop"
    assert "%tid" not in main_loop(ptx)
