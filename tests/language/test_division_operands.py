"""``tl.fdiv`` and ``tl.math.div_rn`` take the operands Triton takes (checked against Triton 3.9's
interpreter): ``fdiv`` floating operands after promotion (integers refused, a float and an int
promote; ``approx=True`` float32 only; not with ``ieee_rounding``), ``div_rn`` float32 tiles only;
``libdevice.div_rn`` float32 and float64.  Before, integer and 16/64-bit operands were divided."""

from __future__ import annotations

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.core.errors import CompilationError
from tiles.language.extra import libdevice


@tiles.jit
def divide(x_ptr, y_ptr, out_ptr, n, HOW: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    ok = offs < n
    x = tl.load(x_ptr + offs, mask=ok, other=1)
    y = tl.load(y_ptr + offs, mask=ok, other=1)
    if HOW == "fdiv":
        q = tl.fdiv(x, y)
    elif HOW == "fdiv_ieee":
        q = tl.fdiv(x, y, ieee_rounding=True)
    elif HOW == "fdiv_approx":
        q = tl.fdiv(x, y, approx=True)
    elif HOW == "fdiv_both":
        q = tl.fdiv(x, y, approx=True, ieee_rounding=True)
    elif HOW == "fdiv_by_int":
        q = tl.fdiv(x, 3)
    elif HOW == "div_rn":
        q = tl.math.div_rn(x, y)
    elif HOW == "div_rn_by_int":
        q = tl.math.div_rn(x, 3)
    else:
        q = libdevice.div_rn(x, y)
    tl.store(out_ptr + offs, q, mask=ok)


def _operands(rng, dtype, n=45):
    x = (rng.standard_normal(n) * 50).astype(dtype)
    y = (rng.standard_normal(n) * 5).astype(dtype)
    y[y == 0] = 3
    x[:4], y[:4] = np.array([7, -9, 0, 5]).astype(dtype), np.array([2, 4, -3, -7]).astype(dtype)
    return x, y


ACCEPTED = [("fdiv", np.float16), ("fdiv", np.float32), ("fdiv", np.float64), ("fdiv_ieee", np.float16),
            ("fdiv_ieee", np.float32), ("fdiv_ieee", np.float64), ("fdiv_approx", np.float16),
            ("fdiv_approx", np.float32), ("fdiv_by_int", np.float16), ("fdiv_by_int", np.float64),
            ("div_rn", np.float32), ("div_rn_by_int", np.float32), ("libdevice", np.float32),
            ("libdevice", np.float64)]


@pytest.mark.parametrize("how, dtype", ACCEPTED)
def test_floating_operands_divide(rng, how, dtype):
    x, y = _operands(rng, dtype)
    out = np.full(x.size, 7, dtype)
    divide[(1,)](x, y, out, x.size, HOW=how, BLOCK=64)
    want = x / (dtype(3) if how.endswith("by_int") else y)
    if how in ("fdiv", "fdiv_approx") and dtype == np.float32:  # within /'s declared 2 ulp
        np.testing.assert_allclose(out, want, rtol=2.5e-7)
    else:
        np.testing.assert_array_equal(out, want)


REFUSED = [("fdiv", np.int32, "floating-point operands"), ("fdiv_ieee", np.int64, "floating-point operands"),
           ("fdiv_by_int", np.int32, "floating-point operands"), ("fdiv_approx", np.float64, "float32"),
           ("fdiv_both", np.float32, "cannot both be True"), ("div_rn", np.float16, "float32 tiles"),
           ("div_rn", np.float64, "float32 tiles"), ("div_rn", np.int32, "float32 tiles"),
           ("div_rn_by_int", np.float64, "float32 tiles"), ("libdevice", np.int32, "float32 or float64")]


@pytest.mark.parametrize("how, dtype, message", REFUSED)
def test_operands_triton_refuses_are_refused(rng, how, dtype, message):
    x, y = _operands(rng, dtype)
    out = np.zeros(x.size, np.float64)
    with pytest.raises(CompilationError, match=message) as info:
        divide[(1,)](x, y, out, x.size, HOW=how, BLOCK=64)
    assert "test_division_operands.py" in str(info.value)
