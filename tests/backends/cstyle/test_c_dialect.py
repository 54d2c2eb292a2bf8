"""The plain-C one-thread dialect (c_dialect.py) runs kernels like the interpreter: proof
that a second C-style dialect is a table plus a prelude."""

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import tiles
import tiles.language as tl

sys.path.insert(0, str(Path(__file__).parent))
from c_dialect import CBackend  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) on PATH")


@pytest.fixture(scope="module")
def backend():
    return CBackend()


@tiles.jit
def int_ops(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    tl.store(out_ptr + offs, a // b, mask=m)
    tl.store(out_ptr + n + offs, a % b, mask=m)
    tl.store(out_ptr + 2 * n + offs, a << b, mask=m)
    tl.store(out_ptr + 3 * n + offs, a >> b, mask=m)
    tl.store(out_ptr + 4 * n + offs, tl.maximum(a, b) - tl.abs(b), mask=m)


@tiles.jit
def float_ops(x_ptr, y_ptr, out_ptr, iout_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=1.0)
    tl.store(out_ptr + offs, tl.maximum(x, y) * tl.sqrt(tl.abs(x)) + tl.exp(y * 0.01), mask=m)
    tl.store(iout_ptr + offs, x.to(tl.int32), mask=m)
    total = tl.sum(tl.where(m, x * y, 0.0), axis=0)
    tl.atomic_add(out_ptr + n, total)


def _both(kernel, backend, grid, arrays, *scalars, **constants):
    want = [a.copy() for a in arrays]
    got = [a.copy() for a in arrays]
    kernel[grid](*want, *scalars, backend="interpreter", **constants)
    kernel[grid](*got, *scalars, backend=backend, **constants)
    return want, got


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.int8])
def test_integer_edges_match_the_interpreter(backend, dtype, rng):
    info = np.iinfo(dtype)
    n = 45  # a partial last block
    a = rng.integers(info.min, info.max, n, endpoint=True, dtype=dtype)
    b = rng.integers(-3 if info.min else 0, info.bits + 3, n, dtype=dtype)
    a[:6] = [info.min, info.min, info.max, 7, 0, 5]
    b[:6] = [dtype(-1) if info.min else 1, 0, 0, dtype(-1) if info.min else 3, 0, info.bits]
    want, got = _both(int_ops, backend, (3,), [a, b, np.zeros(5 * n, dtype)], n, BLOCK=16)
    np.testing.assert_array_equal(got[2], want[2])


def test_floats_casts_reductions_and_atomics_match_the_interpreter(backend, rng):
    n = 50
    x = (rng.standard_normal(n) * 1e3).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    x[:5] = [np.nan, np.inf, -np.inf, 3e9, -0.0]
    y[1] = np.nan
    out = np.zeros(n + 1, np.float32)
    want, got = _both(float_ops, backend, (4,), [x, y, out, np.zeros(n, np.int32)], n, BLOCK=16)
    np.testing.assert_array_equal(got[3], want[3])
    np.testing.assert_allclose(got[2][:n], want[2][:n], rtol=1e-6)
    assert np.isnan(got[2][n]) == np.isnan(want[2][n])
