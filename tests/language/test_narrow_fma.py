"""``tl.fma`` on float16 and bfloat16 rounds once, as compiled Triton's ``fma.rn.f16/bf16`` and the
interpreter do: operands whose exact product lies on a rounding midpoint of the narrow type, plus a
tiny addend that decides the direction.  A float fma then a narrowing rounds twice (the midpoint
survives the first rounding and ties to even): OpenCL gave bfloat16 -53 for 8.8125 * -6 + 2^-126,
not -52.75 (found by the conformance suite, seed 12112); the LLVM backends computed it the same way."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.core import dtypes as D
from tiles.core import floats


@tiles.jit
def fma_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.fma(tl.load(x_ptr + offs, mask=m), tl.load(y_ptr + offs, mask=m),
                                    tl.load(z_ptr + offs, mask=m)), mask=m)


def midpoint_operands(rng, np_dtype, n=61):
    """x, y, z with x * y exactly halfway between two neighbours of ``np_dtype`` and z a tiny value
    of either sign (and a few plain addends): rounding once goes z's way, rounding twice ties to even."""
    fi = np.finfo(np_dtype)
    xs, ys = [], []
    while len(xs) < n:
        x = rng.uniform(1, 2, 4096).astype(np_dtype)
        y = (rng.uniform(1, 2, 4096) * rng.choice([-4.0, 3.0, 2.0, -2.0], 4096)).astype(np_dtype)
        p = x.astype(np.float64) * y.astype(np.float64)
        down = p.astype(np_dtype).astype(np.float64)
        up = np.nextafter(p.astype(np_dtype), np.where(p > down, np.inf, -np.inf).astype(np_dtype)).astype(np.float64)
        tie = (p != down) & (p - down == (up - down) / 2)
        xs.extend(x[tie][: n - len(xs)])
        ys.extend(y[tie][: n - len(ys)])
    # below half a float ulp of |x * y| >= 2, so that a float sum keeps the midpoint
    z = (rng.choice([-1.0, 1.0], n) * float(fi.smallest_subnormal) * rng.integers(1, 3, n)).astype(np_dtype)
    z[:5] = np.array([0.0, -0.0, fi.tiny, -fi.tiny, 1.0]).astype(np_dtype)
    return np.array(xs, np_dtype), np.array(ys, np_dtype), z


@pytest.mark.parametrize("dtype", [D.float16, D.bfloat16])
def test_fma_of_narrow_floats_rounds_once(rng, dtype):
    np_dtype = np.dtype(ml_dtypes.bfloat16) if dtype == D.bfloat16 else np.dtype(np.float16)
    x, y, z = midpoint_operands(rng, np_dtype)
    out = np.zeros(x.size, np_dtype)
    fma_kernel[(1,)](x, y, z, out, x.size, BLOCK=64)
    want = floats.fma(x, y, z, dtype)
    twice = (x.astype(np.float32) * y.astype(np.float32) + z.astype(np.float32)).astype(np_dtype)
    assert (twice != want).sum() > 10  # the operands do separate one rounding from two
    np.testing.assert_array_equal(out.view(np.uint16), np.asarray(want, np_dtype).view(np.uint16))
