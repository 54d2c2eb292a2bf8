"""kernel.compile / warmup from a signature, and the jit options debug and do_not_specialize."""

from __future__ import annotations

import numpy as np
import pytest
import rt_kernels as kernels

import tiles
from tiles.core.ops import Op


def ops_of(compiled):
    return {instr.op for instr in compiled.ir.walk()}


def test_compile_from_signature_without_arrays():
    compiled = kernels.add_kernel.compile(
        signature={"x_ptr": "*fp32:16", "y_ptr": "*fp16", "out_ptr": "*fp32", "n": "i64"},
        constexprs={"BLOCK": 128}, backend="interpreter")
    ir = compiled.asm["ir"]
    assert "x_ptr: ptr<float32> (div 16)" in ir
    assert "y_ptr: ptr<float16>," in ir
    assert "n: int64" in ir
    assert "<128x" in ir
    assert compiled.options.num_warps == 4


def test_compile_by_position_and_warmup_with_signature():
    by_position = kernels.add_kernel.compile({0: "*fp32", 1: "*fp32", 2: "*fp32", 3: "i32"}, {4: 32},
                                             backend="interpreter")
    assert "<32x" in by_position.asm["ir"]
    warm = kernels.add_kernel.warmup(signature={"x_ptr": "*i8", "y_ptr": "*i8", "out_ptr": "*i8",
                                                "n": "i32"}, BLOCK=16, backend="interpreter")
    assert "ptr<int8>" in warm.asm["ir"]


@pytest.mark.parametrize("signature, constexprs, message", [
    ({"x_ptr": "*fp33", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {"BLOCK": 8}, "cannot read type"),
    ({"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32"}, {"BLOCK": 8}, "give a type for 'n'"),
    ({"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, {}, "'BLOCK' in constexprs"),
    ({"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "m": "i32"}, {"BLOCK": 8},
     "no parameter m"),
])
def test_signature_mistakes_are_explained(signature, constexprs, message):
    with pytest.raises(tiles.LaunchError, match=message):
        kernels.add_kernel.compile(signature, constexprs, backend="interpreter")


def test_compiled_kernel_from_signature_is_reused_by_a_matching_launch():
    kernel = tiles.jit(kernels.add_kernel.fn)  # fresh in-memory caches
    compiled = kernel.compile({"x_ptr": "*fp32:16", "y_ptr": "*fp32:16",
                                           "out_ptr": "*fp32:16", "n": "i32"}, {"BLOCK": 64},
                                          backend="interpreter")
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    launched = kernel[(2,)](x, x, out, 100, BLOCK=64, backend="interpreter")
    assert launched is compiled
    np.testing.assert_array_equal(out, 3 * x)


def test_device_assert_is_dropped_without_debug():
    x = np.array([1.0, -1.0], dtype=np.float32)
    compiled = kernels.positive_kernel[(1,)](x, 2, BLOCK=2)
    assert Op.DEVICE_ASSERT not in ops_of(compiled)
    assert compiled.options.debug is False


def test_debug_keeps_device_assert_and_it_fires():
    x = np.array([1.0, -1.0], dtype=np.float32)
    compiled = kernels.positive_kernel_debug.warmup(x, 2, BLOCK=2)
    assert Op.DEVICE_ASSERT in ops_of(compiled) and compiled.options.debug
    with pytest.raises(tiles.KernelRuntimeError, match="x must be positive"):
        kernels.positive_kernel_debug[(1,)](x, 2, BLOCK=2)
    kernels.positive_kernel_debug[(1,)](np.abs(x), 2, BLOCK=2)


def test_tiles_debug_environment_turns_debug_on(monkeypatch):
    monkeypatch.setenv("TILES_DEBUG", "1")
    compiled = kernels.positive_kernel.warmup(np.ones(2, np.float32), 2, BLOCK=2)
    assert Op.DEVICE_ASSERT in ops_of(compiled)


def test_do_not_specialize_keeps_one_and_multiples_of_16_generic():
    x = np.zeros(32, np.float32)
    out = np.zeros_like(x)
    specialized = {n: kernels.copy_specialized.warmup(x, out, n, BLOCK=32).asm["ir"] for n in (1, 16)}
    generic = {n: kernels.copy_unspecialized.warmup(x, out, n, BLOCK=32).asm["ir"] for n in (1, 16)}
    assert "n: int32" not in specialized[1]          # n == 1 became a constant
    assert "n: int32 (div 16)" in specialized[16]
    assert "n: int32" in generic[1] and "(div 16)" not in generic[16].split("n: int32")[1][:10]
    assert len(kernels.copy_unspecialized.cache) == 1  # one compilation serves every n
    kernels.copy_unspecialized[(1,)](np.arange(32, dtype=np.float32), out, 1, BLOCK=32)
    assert out[0] == 0 and out[1] == 0
    kernels.copy_unspecialized[(1,)](np.arange(32, dtype=np.float32), out, 5, BLOCK=32)
    np.testing.assert_array_equal(out[:6], [0, 1, 2, 3, 4, 0])


def test_interpreter_traces_once_for_launches_that_differ_only_in_divisibility(monkeypatch):
    """The interpreter reads no divisibility fact: n = 16, 32 and 17 and an unaligned array share
    one trace, yet each launch key keeps its own compiled kernel whose IR states its own facts."""
    monkeypatch.setenv("TILES_ALWAYS_COMPILE", "1")
    kernel = tiles.jit(kernels.copy_specialized.fn)  # fresh in-memory caches
    traced = []
    trace = kernel.trace
    monkeypatch.setattr(kernel, "trace", lambda specs: traced.append(specs) or trace(specs))
    x = np.arange(40, dtype=np.float32)
    compiled = {}
    for name, src, n in [("n16", x, 16), ("n17", x, 17), ("n32", x, 32), ("odd", x[1:], 16)]:
        out = np.zeros(32, np.float32)
        compiled[name] = kernel[(1,)](src, out, n, BLOCK=32, backend="interpreter")
        np.testing.assert_array_equal(out[:n], src[:n])
        assert not out[n:].any()
    assert len(traced) == 1 and all(s.divisibility == 1 for s in traced[0])
    assert len(kernel.cache) == 3  # n16 and n32 have one key
    assert compiled["n16"] is compiled["n32"]
    ir16 = compiled["n16"].asm["ir"]
    assert "x_ptr: ptr<float32> (div 16), " in ir16 and "n: int32 (div 16)" in ir16
    assert "n: int32)" in compiled["n17"].asm["ir"] and "ptr<float32>, %out_ptr" in compiled["odd"].asm["ir"]
    assert compiled["n17"].ir.body is compiled["n16"].ir.body  # one trace, one plan
    assert kernel.cache.shared  # the trace without facts (no launch had that key)
    kernel.cache.clear()
    assert not kernel.cache.shared


def test_setting_debug_after_launches_takes_effect():
    """Launch plans do not key on ``kernel.debug``: setting it drops them, so the next launch
    compiles with device asserts (the steady-state launch function must not serve the old plan)."""
    kernel = tiles.jit(kernels.positive_kernel.fn)
    x = np.array([1.0, -1.0], dtype=np.float32)
    for _ in range(3):  # the later launches take the steady-state path
        kernel[(1,)](x, 2, BLOCK=2, backend="interpreter")
    kernel.debug = True
    with pytest.raises(tiles.KernelRuntimeError, match="x must be positive"):
        kernel[(1,)](x, 2, BLOCK=2, backend="interpreter")
    kernel.debug = False
    kernel[(1,)](x, 2, BLOCK=2, backend="interpreter")
