"""Rules Triton enforces and tiles relaxes: in the Triton compatibility mode a program gets Triton's
refusal (16-bit integer atomics, half-precision atomics other than add, descriptor blocks whose
last dimension holds under 16 bytes); outside it tiles runs them, with correct results."""

from __future__ import annotations

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def _atomic_rows(out_ptr, val_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    v = tl.load(val_ptr + i, mask=m)
    if OP == "add":
        tl.atomic_add(out_ptr + i % 3, v, mask=m)
    else:
        tl.atomic_max(out_ptr + i % 3, v, mask=m)


@tiles.jit
def _descriptor_copy(src, dst, BLOCK_N: tl.constexpr):
    desc = tl.make_tensor_descriptor(src, [16, 16], [16, 1], [1, BLOCK_N])
    out = tl.make_tensor_descriptor(dst, [16, 16], [16, 1], [1, BLOCK_N])
    out.store([3, 5], desc.load([3, 5]))


def _atomic_case(dtype: str, op: str):
    rng = np.random.default_rng(11)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        vals = rng.integers(info.min // 64, info.max // 64, 29).astype(dtype)
    else:
        vals = rng.standard_normal(29).astype(dtype)
    out = rng.integers(-5, 5, 3).astype(dtype)
    return vals, out


def _atomic_expected(vals, out, op):
    want = out.copy()
    for j, v in enumerate(vals):
        want[j % 3] = want[j % 3] + v if op == "add" else max(want[j % 3], v)
    return want


@pytest.mark.parametrize("dtype,op", [("int16", "add"), ("uint16", "max"), ("float16", "max")])
def test_compat_mode_refuses_as_triton(alias, dtype, op):
    vals, out = _atomic_case(dtype, op)
    with pytest.raises(alias.TritonError) as info:
        _atomic_rows[(1,)](out, vals, 29, OP=op, BLOCK=32)
    assert f"atomic_{op} does not support" in str(info.value.__cause__)
    assert "test_triton_rules.py:" in str(info.value)


@pytest.mark.parametrize("dtype,op", [("int16", "add"), ("uint16", "max"), ("float16", "max"), ("float16", "add")])
def test_tiles_runs_them(dtype, op):
    vals, out = _atomic_case(dtype, op)
    want = _atomic_expected(vals, out, op)
    _atomic_rows[(1,)](out, vals, 29, OP=op, BLOCK=32)
    if dtype == "float16" and op == "add":
        np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)
    else:
        np.testing.assert_array_equal(out, want)


def test_compat_mode_still_runs_half_add(alias):
    vals, out = _atomic_case("float16", "add")
    want = _atomic_expected(vals, out, "add")
    _atomic_rows[(1,)](out, vals, 29, OP="add", BLOCK=32)
    np.testing.assert_allclose(out.astype(np.float32), want.astype(np.float32), rtol=2e-2, atol=2e-2)


def test_small_descriptor_block_refused_in_compat_mode(alias):
    from triton.runtime.errors import InterpreterError
    src = np.arange(256, dtype=np.int32).reshape(16, 16)
    dst = np.zeros_like(src)
    for kind in (InterpreterError, alias.CompilationError):  # interpreted and compiled Triton's kinds
        with pytest.raises(kind) as info:
            _descriptor_copy[(1,)](src, dst, BLOCK_N=2)
        assert "Descriptor block shape must have at least 16 bytes" in str(info.value.__cause__)
    _descriptor_copy[(1,)](src, dst, BLOCK_N=4)  # 16 bytes: accepted
    assert (dst[3, 5:9] == src[3, 5:9]).all() and dst.sum() == src[3, 5:9].sum()


def test_small_descriptor_block_runs_in_tiles():
    src = np.arange(256, dtype=np.int32).reshape(16, 16) - 100
    dst = np.full_like(src, 7)
    _descriptor_copy[(1,)](src, dst, BLOCK_N=2)
    want = np.full_like(src, 7)
    want[3, 5:7] = src[3, 5:7]
    np.testing.assert_array_equal(dst, want)


def test_rules_follow_the_mode_for_kernels_launched_before():
    """A kernel launched under tiles' rules is traced again when the mode comes, and after it goes."""
    from tiles.as_triton import install_as_triton, uninstall_as_triton
    vals, out = _atomic_case("int16", "add")
    want = _atomic_expected(vals, out, "add")
    _atomic_rows[(1,)](out, vals, 29, OP="add", BLOCK=32)
    np.testing.assert_array_equal(out, want)
    install_as_triton()
    try:
        import triton
        with pytest.raises(triton.TritonError, match="atomic_add does not support"):
            _atomic_rows[(1,)](out, vals, 29, OP="add", BLOCK=32)
    finally:
        uninstall_as_triton()
    _atomic_rows[(1,)](out, vals, 29, OP="add", BLOCK=32)
    np.testing.assert_array_equal(out, _atomic_expected(vals, want, "add"))
