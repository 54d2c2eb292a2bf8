"""tl.device_print on OpenCL: every value comes out once, from the thread that owns it."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")


@tiles.jit
def print_tile(x_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.device_print("x=", tl.load(x_ptr + offs))


@tiles.jit
def print_scalar_and_text(x_ptr):
    tl.device_print("scalar", tl.load(x_ptr + tl.program_id(0)))
    tl.device_print("text only")


def printed(text: str, prefix: str) -> dict[int, list[str]]:
    """program id -> every value printed after ``prefix`` on that program's lines."""
    found: dict[int, list[str]] = {}
    for m in re.finditer(rf"^pid \((\d+), 0, 0\) {re.escape(prefix)} ?(.*)$", text, re.MULTILINE):
        found.setdefault(int(m.group(1)), []).extend(m.group(2).split())
    return found


# 8 elements in 128 threads: one partial round (idle threads hold copies); 512: full rounds
@pytest.mark.parametrize("block", [8, 512])
def test_each_element_is_printed_once_per_program(capfd, rng, block):
    programs = 3
    x = rng.integers(-10**6, 10**6, size=programs * block, dtype=np.int32)
    print_tile[(programs,)](x, BLOCK=block, backend="opencl")
    lines = printed(capfd.readouterr().out, "x=")
    assert sorted(lines) == list(range(programs))
    for pid in range(programs):
        expected = Counter(str(v) for v in x[pid * block:(pid + 1) * block])
        assert Counter(lines[pid]) == expected


def test_floats_are_printed_with_their_values(capfd, rng):
    x = rng.standard_normal(16).astype(np.float32)
    print_tile[(1,)](x, BLOCK=16, backend="opencl")
    values = sorted(float(v) for v in printed(capfd.readouterr().out, "x=")[0])
    np.testing.assert_allclose(values, np.sort(x), atol=1e-6)


def test_scalars_and_bare_text_print_once_per_program_without_a_store(capfd, rng):
    # no argument is written: the launch must still wait, or the lines never come out
    x = rng.integers(0, 1000, size=4, dtype=np.int32)
    print_scalar_and_text[(4,)](x, backend="opencl")
    out = capfd.readouterr().out
    assert printed(out, "scalar") == {pid: [str(x[pid])] for pid in range(4)}
    assert sorted(printed(out, "text only")) == [0, 1, 2, 3]
    assert out.count("text only") == 4
