"""tiles.reinterpret (Triton's ``triton.reinterpret``): a byte buffer read by a kernel as fp8."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry


@tiles.jit
def widen(out_ptr, in_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(in_ptr + offs, mask=offs < n).to(tl.float32), mask=offs < n)


def fp8_bytes(rng, n, dtype):
    """Random finite values and edge values (signed zeros, the largest, NaN, +-inf where it has them)
    of ``dtype``, as their bytes."""
    values = rng.standard_normal(n).astype(dtype)
    edges = [0.0, -0.0, float(ml_dtypes.finfo(dtype).max), -float(ml_dtypes.finfo(dtype).max), float("nan")]
    if dtype == ml_dtypes.float8_e5m2:
        edges += [float("inf"), float("-inf")]
    values[:len(edges)] = np.array(edges, np.float32).astype(dtype)
    return values.view(np.uint8)


@pytest.mark.parametrize("backend", ["interpreter", pytest.param("opencl", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name, dtype", [("float8e5", ml_dtypes.float8_e5m2), ("float8e4nv", ml_dtypes.float8_e4m3fn)])
def test_a_byte_buffer_read_as_fp8(rng, backend, name, dtype):
    if not registry.status(backend)[0]:
        pytest.skip(f"{backend}: {registry.status(backend)[1]}")
    raw = fp8_bytes(rng, 203, dtype)
    out = np.full(raw.size, np.nan, np.float32)
    widen[(tiles.cdiv(raw.size, 64),)](out, tiles.reinterpret(raw, getattr(tl, name)), raw.size, BLOCK=64,
                                       backend=backend)
    np.testing.assert_array_equal(out, raw.view(dtype).astype(np.float32))


def test_views_and_refusals(rng):
    raw = rng.integers(0, 256, 16, dtype=np.uint8)
    view = tiles.reinterpret(raw, tl.float8e5)
    assert view.dtype == ml_dtypes.float8_e5m2 and np.shares_memory(view, raw)
    assert tiles.reinterpret(raw, "int8").dtype == np.int8
    assert tiles.reinterpret(raw, tl.float16).shape == (8,)  # NumPy's rule: the last axis rescales
    e4b15 = tiles.reinterpret(raw, tl.float8e4b15)  # no NumPy type: the bytes as 1-byte void
    assert e4b15.dtype == tl.float8e4b15.np and np.shares_memory(e4b15, raw)
    assert tiles.reinterpret(raw, "float8e4b15").dtype == e4b15.dtype
    with pytest.raises(TypeError, match="expected a NumPy array or a torch tensor, got list"):
        tiles.reinterpret([1, 2], tl.uint8)


def test_torch_tensors_view_in_torchs_dtype():
    torch = pytest.importorskip("torch")
    raw = torch.arange(8, dtype=torch.uint8)
    assert tiles.reinterpret(raw, tl.float8e4nv).dtype == torch.float8_e4m3fn
    assert tiles.reinterpret(raw, tl.int1).dtype == torch.bool


def test_numpy_dtypes_name_the_element_type(rng):
    raw = rng.integers(0, 256, 16, dtype=np.uint8)
    assert tiles.reinterpret(raw, np.int8).dtype == np.int8
    assert tiles.reinterpret(raw, np.dtype(ml_dtypes.float8_e4m3fnuz)).dtype == ml_dtypes.float8_e4m3fnuz
    with pytest.raises(TypeError, match="not an element dtype"):
        tiles.reinterpret(raw, np.complex64)


def test_torch_dtypes_name_the_element_type(rng):
    """``triton.reinterpret(x, torch.float16)``, as Triton's conversion tests write it."""
    torch = pytest.importorskip("torch")
    x = torch.tensor(rng.standard_normal(37).astype(np.float32))
    bits = tiles.reinterpret(x, torch.int32)
    assert bits.dtype == torch.int32 and bits.data_ptr() == x.data_ptr()
    raw = torch.tensor(fp8_bytes(rng, 64, ml_dtypes.float8_e4m3fnuz))
    out = np.full(64, np.nan, np.float32)
    widen[(1,)](out, tiles.reinterpret(raw, torch.float8_e4m3fnuz), 64, BLOCK=64)
    np.testing.assert_array_equal(out, raw.numpy().view(ml_dtypes.float8_e4m3fnuz).astype(np.float32))
    with pytest.raises(TypeError, match="not an element dtype"):
        tiles.reinterpret(x, torch.complex64)
