"""A module global a kernel baked in, rebound after the first launch, is refused as Triton does.

Triton 3.9 (``runtime/jit.py``, ``JITFunction.run``) records the values of the globals a kernel
and its ``@jit`` helpers read when it is first compiled and, on every later launch, raises
``RuntimeError("Global variable K has changed since we compiled this kernel, from constexpr[2.0]
to constexpr[5.0]")`` when one differs (compared with ``!=``: an equal value is fine).  Triton's
CPU interpreter re-reads the global instead; we follow the compiler.  Rebinding is done here as a
user does it, by assigning the module global, and undone in ``finally``.
"""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.runtime import cache

K = tl.constexpr(2.0)
BIAS = tl.constexpr(-0.5)
ACC_DTYPE = tl.float32


@tiles.jit
def scale_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * K, mask=mask)


@tiles.jit
def _shift(x):
    return (x + BIAS).to(ACC_DTYPE)


@tiles.jit
def shift_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, _shift(tl.load(x_ptr + offsets, mask=mask)), mask=mask)


@tiles.jit
def no_globals_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + 1.0, mask=mask)


def _launch(kernel, x, out):
    kernel[(tiles.cdiv(x.size, 16),)](x, out, x.size, BLOCK_SIZE=16)


def test_rebinding_a_global_constexpr_raises_on_the_next_launch(rng):
    global K
    x = rng.standard_normal(37).astype(np.float32)
    out = np.zeros_like(x)
    _launch(scale_kernel, x, out)
    np.testing.assert_array_equal(out, x * np.float32(2.0))
    try:
        K = tl.constexpr(5.0)
        out[:] = 0
        with pytest.raises(RuntimeError, match=r"Global variable K has changed since we compiled this kernel, "
                                               r"from constexpr\[2\.0\] to constexpr\[5\.0\]") as info:
            _launch(scale_kernel, x, out)
        assert "test_global_constexpr_changes.py:" in str(info.value) and "scale_kernel" in str(info.value)
        assert isinstance(info.value, tiles.LaunchError)
        np.testing.assert_array_equal(out, 0)  # the stale code did not run
        with pytest.raises(RuntimeError, match="Global variable K has changed"):  # every launch, not once
            _launch(scale_kernel, x[:5], out[:5])
        with pytest.raises(RuntimeError, match="Global variable K has changed"):
            scale_kernel.warmup(x, out, x.size, BLOCK_SIZE=32)
        K = tl.constexpr(2.0)  # an equal value (another object) is the same kernel
        _launch(scale_kernel, x, out)
        np.testing.assert_array_equal(out, x * np.float32(2.0))
    finally:
        K = tl.constexpr(2.0)


def test_a_global_read_by_a_helper_is_guarded_too(rng):
    global BIAS, ACC_DTYPE
    x = rng.standard_normal(21).astype(np.float32)
    out = np.zeros_like(x)
    _launch(shift_kernel, x, out)
    np.testing.assert_array_equal(out, x - np.float32(0.5))
    try:
        BIAS = tl.constexpr(0.25)
        with pytest.raises(RuntimeError, match=r"Global variable BIAS has changed .* to constexpr\[0\.25\]"):
            _launch(shift_kernel, x, out)
        BIAS = tl.constexpr(-0.5)
        ACC_DTYPE = tl.float16
        changed = "Global variable ACC_DTYPE has changed .* from (tiles.language.)?float32 to (tiles.language.)?float16"
        with pytest.raises(RuntimeError, match=changed):
            _launch(shift_kernel, x, out)
        ACC_DTYPE = tl.float32
        _launch(shift_kernel, x, out)
        np.testing.assert_array_equal(out, x - np.float32(0.5))
    finally:
        BIAS, ACC_DTYPE = tl.constexpr(-0.5), tl.float32


def test_a_kernel_without_data_globals_has_nothing_to_check(rng):
    x = rng.standard_normal(9).astype(np.float32)
    out = np.zeros_like(x)
    _launch(no_globals_kernel, x, out)
    np.testing.assert_array_equal(out, x + np.float32(1.0))
    assert no_globals_kernel._guards == []  # its launches run no check (and keep CUDA's hot launch)
    _launch(scale_kernel, x, out)
    assert [g.name for g in scale_kernel._guards] == ["K"]


def test_the_disk_cache_key_follows_the_global_value(backend):
    if backend != "interpreter":
        pytest.skip("host-side key: one backend suffices")
    global K
    before = cache.source_fingerprint(scale_kernel)
    try:
        K = tl.constexpr(5.0)
        assert cache.source_fingerprint(scale_kernel) != before
        K = tl.constexpr(2.0)
        assert cache.source_fingerprint(scale_kernel) == before
    finally:
        K = tl.constexpr(2.0)
