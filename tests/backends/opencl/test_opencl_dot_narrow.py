"""``tl.dot`` with a float16 result on OpenCL: the sum is carried in float32 and rounded
once, as the interpreter's is, not rounded after every product."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")


@tiles.jit
def narrow_dot(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, OUT: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    acc = tl.load(c_ptr + rm[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b, acc, out_dtype=OUT))


def test_float16_result_is_rounded_once(rng):
    m, n, k = 16, 16, 128
    a = (rng.standard_normal((m, k)) * 2).astype(np.float16)
    b = (rng.standard_normal((k, n)) * 2).astype(np.float16)
    c0 = (rng.standard_normal((m, n)) * 50).astype(np.float16)
    exact = a.astype(np.float64) @ b.astype(np.float64) + c0.astype(np.float64)
    results = {}
    for backend in ("interpreter", "opencl"):
        c = c0.copy()
        narrow_dot[(1,)](a, b, c, M=m, N=n, K=k, OUT=tl.float16, backend=backend)
        results[backend] = c
    # the interpreter sums in float64 and rounds once: exactly the float64 sum rounded to float16
    np.testing.assert_array_equal(results["interpreter"], exact.astype(np.float16))
    # a float32 sum rounded once: float32's own error (which cancellation can make larger than a
    # float16 ulp of a small result) plus one float16 rounding; rounding to float16 after each
    # product would be off by many float16 ulps of the partial sums (~50).  The ulp is the upper
    # binade's (numpy's spacing of a negative power of two is the lower one's).
    ulp = np.spacing(np.abs(exact).astype(np.float16)).astype(np.float64)
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)) + np.abs(c0.astype(np.float64))
    float32_error = (k + 1) * np.finfo(np.float32).eps * magnitude
    err = np.abs(results["opencl"].astype(np.float64) - exact)
    worst = (err - float32_error) / ulp
    assert worst.max() <= 1.0, f"{worst.max():.2f} float16 ulp beyond float32's own error"
