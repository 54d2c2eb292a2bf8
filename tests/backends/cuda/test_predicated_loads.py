"""Which masked global accesses become predicated PTX instructions (``cuda/predicated_ops.py``): by
default the loads outside the kernel's loops; loads inside a loop and every store keep a branch
around a plain access.  Compile-only (llvmlite's NVPTX backend), no GPU."""

import re

import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.base import CodegenChoices, Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_chosen

PREDICATED_LOAD = re.compile(r"@%p\d+ ld\.global")
PREDICATED_STORE = re.compile(r"@%p\d+ st\.global")


@tiles.jit
def straight_line(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    y = tl.load(y_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, tl.exp(x) * y, mask=offs < n)


@tiles.jit
def row_loop(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + tl.arange(0, BLOCK), acc, mask=tl.arange(0, BLOCK) < n)


def _ptx(kernel, sig, consts, predicated=None):
    ir = kernel.compile(sig, consts, backend="cuda", num_warps=4).ir
    codegen = CodegenChoices() if predicated is None else CodegenChoices(predicated=predicated)
    lowered = lower_chosen(ir, nvptx_target("sm_90a"), Options(4, 3, codegen=codegen), registry.get("cuda").target())
    return toolchain.to_ptx(lowered.code, "sm_90a")


STRAIGHT = (straight_line, {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32"},
            {"BLOCK": 1024})
LOOP = (row_loop, {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "n": "i32"}, {"BLOCK": 512})


def test_default_predicates_loads_outside_loops_only():
    assert CodegenChoices().predicated == "outside_loops"
    ptx = _ptx(*STRAIGHT)
    assert PREDICATED_LOAD.search(ptx) and not PREDICATED_STORE.search(ptx)
    ptx = _ptx(*LOOP)
    assert not PREDICATED_LOAD.search(ptx) and not PREDICATED_STORE.search(ptx)


@pytest.mark.parametrize("mode, straight_loads, loop_loads, stores", [
    ("all", True, True, True), ("loads", True, True, False), ("outside_loops", True, False, False),
    ("", False, False, False)])
def test_each_mode(mode, straight_loads, loop_loads, stores):
    straight, loop = _ptx(*STRAIGHT, predicated=mode), _ptx(*LOOP, predicated=mode)
    assert bool(PREDICATED_LOAD.search(straight)) == straight_loads
    assert bool(PREDICATED_LOAD.search(loop)) == loop_loads
    assert bool(PREDICATED_STORE.search(straight)) == stores
    assert bool(PREDICATED_STORE.search(loop)) == stores


@pytest.mark.parametrize("value, mode", [("", "outside_loops"), ("1", "all"), ("loads", "loads"),
                                         ("outside_loops", "outside_loops"), ("0", "")])
def test_environment_setting(monkeypatch, value, mode):
    from tiles import config
    monkeypatch.setenv("TILES_PREDICATED", value)
    assert config.predicated_access() == mode


@tiles.jit
def masked_dot(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :], mask=r[:, None] < n, other=0.0)
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :], mask=r[None, :] < n, other=0.0)
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b), mask=r[:, None] < n)


def test_tensor_core_kernels_keep_their_branches_by_default():
    # the default was measured on memory-bound kernels only (benchmarks/RESULTS.md)
    spec = (masked_dot, {"a_ptr": "*fp16:16", "b_ptr": "*fp16:16", "c_ptr": "*fp32:16", "n": "i32"}, {"BLOCK": 64})
    assert PREDICATED_LOAD.search(_ptx(*spec, predicated="loads"))
    assert not PREDICATED_LOAD.search(_ptx(*spec))
