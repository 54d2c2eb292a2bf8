"""What the tutorial-form attention's sm_90a code must keep (``benchmarks/realworld_attention.py``'s
kernel as the benchmark launches it; ``benchmarks/attention_sass.py`` compares it with Triton's):
each check pins one difference from Triton's loop that ``attention_sass.py`` found, and the
simulator runs the loop long enough for each change to matter."""

import re

import numpy as np
import pytest
from test_tensorcore import _rel
from test_tutorial_forms import _attention_case, _attention_module

from tiles.backends.base import CodegenChoices, Options
from tiles.backends.cuda import CUDABackend, nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_chosen
from tiles.backends.cuda.ptx_loops import loop_events, mma_loop

needs_ptxas = pytest.mark.skipif(toolchain.ptxas_path() is None, reason="ptxas is not on PATH")
Z, H, N_CTX = 4, 32, 4096


def attention_ptx(d, bm, bn, warps, stages, causal=False, tma=False):
    """PTX of the attention kernel on contiguous Z x H x N_CTX x d fp16 operands: strides divisible
    by 16, unit strides specialized to 1, fp fusion as a launch compiles it.  Without TMA unless
    asked: the cp.async loop is what a launch TMA cannot serve runs, and what Triton runs."""
    mod = _attention_module()
    sig = {"Q": "*fp16:16", "K": "*fp16:16", "V": "*fp16:16", "sm_scale": "fp32", "M": "*fp32:16",
           "Out": "*fp16:16"}
    consts = dict(HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, STAGE=3 if causal else 1)
    for t, inner, rows in (("q", "k", "m"), ("k", "k", "n"), ("v", "n", "k"), ("o", "n", "m")):
        sig.update({f"stride_{t}z": "i32:16", f"stride_{t}h": "i32:16", f"stride_{t}{rows}": "i32:16"})
        consts[f"stride_{t}{inner}"] = 1
    sig.update(Z="i32", H="i32:16", N_CTX="i32:16")
    ir = mod.attn_fwd.compile(sig, consts, backend="cuda", num_warps=warps, num_stages=stages).ir
    options = Options(warps, stages, fp_fusion=CUDABackend.fp_fusion_default, codegen=CodegenChoices.from_env())
    options = options if tma else options.without("tma")
    return toolchain.to_ptx(lower_chosen(ir, nvptx_target("sm_90a"), options).code, "sm_90a")


@pytest.mark.parametrize("d,bn,stages", [(64, 64, 3), (128, 128, 2)])
def test_block_pointer_addresses_advance_by_one_product_per_step(d, bn, stages):
    """K and V come through block pointers advanced in the loop.  Their element offsets are
    ``arange * stride + offset * stride`` in int64 (as Triton computes them, in int64): the tile
    term is loop-invariant, so a step costs one 64-bit product per block pointer.  Spelled
    ``int64(arange + offset) * stride`` it cost one per copied chunk (16 at 128x128, d=128:
    590 SASS per step against Triton's 509)."""
    loop = mma_loop(attention_ptx(d, 128, bn, 8, stages))
    assert loop
    products = re.findall(r"\bmul\.(?:lo\.[su]64|wide\.[su]32)\b", loop)
    assert len(products) <= 2, f"{len(products)} 64-bit products per step"


@pytest.mark.parametrize("tma", [False, True])
def test_d64_fits_two_programs_per_sm(tma):
    """d=64, 128x64 on 8 warps (the best configuration of both compilers): two programs per SM need
    128 registers or fewer (122 with ptxas 12.8 and 13.0; Triton's 123)."""
    ptx = attention_ptx(64, 128, 64, 8, 3, tma=tma)
    assert ("cp.async.bulk.tensor" in ptx) == tma
    info = toolchain.ptxas_info(ptx, "sm_90a")
    assert info["registers"] <= 128 and info.get("spill_stores", 0) == 0


@pytest.mark.parametrize("causal,bm,bn,stages", [
    (True, 64, 32, 2),
    pytest.param(False, 64, 32, 2, marks=pytest.mark.slow),
    pytest.param(True, 64, 64, 3, marks=pytest.mark.slow),
    pytest.param(False, 64, 64, 3, marks=pytest.mark.slow),
])
def test_attention_simulated_over_many_steps(causal, bm, bn, stages):
    """Eight steps and more per program (two stages: every refill overwrites the stage the in-flight
    P@V of the step before reads), against NumPy; the simulator refuses a read of wgmma results
    before their wait and computes a product from its operands when the group completes."""
    from tiles.backends.cuda.simulator.simt import run
    mod = _attention_module()
    n, d, warps = 256, 64, 4
    args, o, want = _attention_case(n, d, causal)
    meta = dict(HEAD_DIM=d, BLOCK_M=bm, BLOCK_N=bn, STAGE=3 if causal else 1)
    ir = mod.attn_fwd.warmup(*args, backend="cuda", **meta, num_warps=warps, num_stages=stages).ir
    by_name = dict(zip(mod.attn_fwd.arg_names, args))
    values = [by_name[p.name] for p in ir.params]
    run(ir, [x if isinstance(x, np.ndarray) else (np.float32(x) if isinstance(x, float) else np.int32(x))
             for x in values], (n // bm, 2), warps * 32, num_stages=stages)
    assert not np.isnan(o).any()
    assert _rel(o, want) < 2e-3


@needs_ptxas
@pytest.mark.parametrize("causal", [False, True])
def test_pv_product_stays_in_flight_at_d128_on_8_warps(causal):
    """d=128, 128x64 on 8 warps (Triton's configuration there): the P@V group is not waited for in
    its own step; the next step's QK^T wait (wait_group 0) completes it, as in Triton's loop, and
    the next stage's copies go out while it runs (cuda/choices.py keeps this shape: ptxas gives it
    as many programs per SM as the plain one)."""
    parts = re.split(r"(?=^\$L__BB0_\d+:)", attention_ptx(128, 128, 64, 8, 3, causal), flags=re.M)
    loops = [loop for loop in map(mma_loop, parts) if loop]
    assert len(loops) == (2 if causal else 1)
    for loop in loops:
        events = loop_events(loop)
        waits = [e for e in events if e.startswith("wgmma.wait_group")]
        assert waits == ["wgmma.wait_group.sync.aligned 0", "wgmma.wait_group.sync.aligned 1"], events
        after_pv = events[events.index("wgmma.wait_group.sync.aligned 1"):]
        assert "cp.async" in after_pv and "bar.sync" in after_pv, events


@needs_ptxas
@pytest.mark.parametrize("causal", [False, True])
def test_pv_product_is_waited_for_where_it_would_cost_a_program_per_sm(causal, monkeypatch):
    """d=64, 128x64 on 8 warps: left in flight, ptxas gives the kernel 139 registers (198 causal),
    one program per SM instead of two, so the plain lowering is kept; the 2-stage 128x128 kernel
    never leaves it in flight (its copies would have under one iteration to land); nor does any
    kernel with TILES_INFLIGHT=0."""
    for ptx in (attention_ptx(64, 128, 64, 8, 3, causal), attention_ptx(128, 128, 128, 8, 2, causal)):
        assert "wgmma.wait_group.sync.aligned 1" not in ptx
    monkeypatch.setenv("TILES_INFLIGHT", "0")
    assert "wgmma.wait_group.sync.aligned 1" not in attention_ptx(128, 128, 64, 8, 3, causal)


def test_without_ptxas_the_plain_lowering_is_kept(monkeypatch):
    monkeypatch.setattr(toolchain, "ptxas_path", lambda: None)
    assert "wgmma.wait_group.sync.aligned 1" not in attention_ptx(128, 128, 64, 8, 3)
