"""torch CPU tensors of the float types NumPy lacks (bfloat16, the float8s) as interpreter
arguments: read and written bit for bit through ml_dtypes views (Triton's fp8 attention tutorial
passes float8_e5m2 tensors)."""

import numpy as np
import pytest

import tiles
import tiles.language as tl

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _interpreter():
    tiles.set_backend("interpreter")
    yield
    tiles.set_backend(None)


@tiles.jit
def widen_and_narrow(x_ptr, wide_ptr, narrow_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(wide_ptr + offs, x.to(tl.float32), mask=offs < n)
    tl.store(narrow_ptr + offs, (x.to(tl.float32) * 2).to(narrow_ptr.dtype.element_ty), mask=offs < n)


@pytest.mark.parametrize("name", ["bfloat16", "float8_e5m2", "float8_e4m3fn"])
def test_narrow_torch_floats_round_trip(name, rng):
    dtype = getattr(torch, name)
    n = 37
    values = torch.from_numpy(rng.standard_normal(n).astype(np.float32) * 3)
    values[:3] = torch.tensor([0.0, -0.0, 1.5])
    x = values.to(dtype)
    wide = torch.full((n,), float("nan"))
    narrow = torch.zeros(n, dtype=dtype)
    widen_and_narrow[(1,)](x, wide, narrow, n, BLOCK=64)
    assert torch.equal(wide, x.float())
    assert torch.equal(narrow.float(), (x.float() * 2).to(dtype).float())
    tiles.testing.assert_close(narrow, (x.float() * 2).to(dtype))
