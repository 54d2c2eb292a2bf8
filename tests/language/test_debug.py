"""static_assert, device_assert, device_print."""

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def static_assert_kernel(out_ptr, N: tl.constexpr):
    tl.static_assert(N % 2 == 0, "N must be even")
    tl.store(out_ptr + tl.arange(0, N), tl.zeros([N], tl.int32))


def test_static_assert():
    out = np.ones(8, np.int32)
    static_assert_kernel[(1,)](out, N=8)
    np.testing.assert_array_equal(out, 0)
    with pytest.raises(tiles.CompilationError, match="N must be even") as info:
        static_assert_kernel[(1,)](out, N=1)
    assert "test_debug.py:" in str(info.value)


@tiles.jit(debug=True)
def device_assert_kernel(x_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK))
    tl.device_assert(x >= 0, "negative input")


def test_device_assert_raises_in_the_interpreter():
    x = np.arange(32, dtype=np.int32)
    device_assert_kernel[(4,)](x, BLOCK=8)
    x[27] = -1
    with pytest.raises(tiles.KernelRuntimeError, match="negative input") as info:
        device_assert_kernel[(4,)](x, BLOCK=8)
    assert "test_debug.py:" in str(info.value)


@tiles.jit
def print_kernel(x_ptr):
    tl.device_print("value", tl.load(x_ptr + tl.program_id(0)))


def test_device_print_writes_each_program(capfd):
    print_kernel[(2,)](np.array([41, 42], np.int32))
    text = capfd.readouterr().out
    assert "value" in text and "41" in text and "42" in text
