"""device_assert, device_print, barrier and launch edge cases."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from irb import KB

from tiles.core import attrs as at
from tiles.core import dtypes as dt
from tiles.core.errors import KernelRuntimeError, LaunchError
from tiles.core.ops import Op
from tiles.interp import interpret


def test_device_assert_names_line_and_first_failing_program():
    k = KB("checked", sys._getframe().f_code)
    x = k.ptr("x", dt.int32)
    lin = k.bin(Op.ADD, k.pid(0), k.bin(Op.MUL, k.pid(1), k.nprog(0)))
    v = k.load(k.addptr(x, lin))
    line = sys._getframe().f_lineno + 1
    k.op(Op.DEVICE_ASSERT, k.bin(Op.GE, v, k.const(0, dt.int32)), attrs=at.Message("x must be >= 0"))
    k.op(Op.BARRIER)
    interpret(k.kernel(), (4,), [np.arange(4, dtype=np.int32)])
    with pytest.raises(KernelRuntimeError) as e:
        interpret(k.kernel(), (3, 2), [np.array([0, 1, 2, 3, -1, -2], np.int32)])
    text = str(e.value)
    assert "program (1, 1, 0)" in text and "x must be >= 0" in text and "checked" in text
    assert f"test_interp_debug.py:{line}" in text


def test_device_print_per_program(capsys):
    k = KB("printer")
    k.op(Op.DEVICE_PRINT, k.pid(), k.arange(3), attrs=at.Message("pid and lanes: "))
    k.op(Op.DEVICE_PRINT, k.const(255, dt.int32), attrs=at.Message("hex ", hex=True))
    interpret(k.kernel(), (2,), [])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["pid (0, 0, 0) pid and lanes: 0 [0 1 2]", "pid (1, 0, 0) pid and lanes: 1 [0 1 2]"]
    assert lines[2] == "pid (0, 0, 0) hex 0xff"


def test_empty_grid_and_empty_arrays():
    k = KB("nothing")
    x = k.ptr("x", dt.float32)
    n = k.scalar("n", dt.int32)
    offs = k.arange(4)
    m = k.bin(Op.LT, offs, n)
    k.store(k.addptr(x, offs), k.const(1.0, dt.float32, (4,)), m)
    interpret(k.kernel(), (0,), [np.zeros(0, np.float32), 0])
    interpret(k.kernel(), (5,), [np.zeros(0, np.float32), 0])  # all lanes masked off
    with pytest.raises(KernelRuntimeError, match="out of bounds"):
        interpret(k.kernel(), (1,), [np.zeros(0, np.float32), 1])


def test_launch_errors():
    k = KB("args")
    k.ptr("x", dt.float32)
    with pytest.raises(LaunchError):
        interpret(k.kernel(), (1,), [])
    with pytest.raises(LaunchError, match="NumPy array"):
        interpret(k.kernel(), (1,), [[1.0, 2.0]])


def test_hint_and_constants():
    k = KB("consts")
    out = k.ptr("out", dt.bfloat16)
    offs = k.op(Op.HINT, k.arange(4), attrs=at.Hint("max_contiguous", (4,)))
    c = k.const(1 + 2**-8 + 2**-30, dt.bfloat16, (4,))  # a constant rounds once, like a cast
    k.store(k.addptr(out, offs), c)
    o = np.zeros(4, dt.bfloat16.np)
    interpret(k.kernel(), (1,), [o])
    assert o.astype(np.float64).tolist() == [1 + 2**-7] * 4
