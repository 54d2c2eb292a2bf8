"""``reinterpret`` of torch tensors as uint16/32/64, Triton's helpers' form (``to_triton``: signed
data reinterpreted as unsigned, host arithmetic on ``unwrap_tensor(x)``, i.e. ``x.base``).  torch
has these dtypes but no arithmetic on them, so tiles wraps the tensor as Triton does."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import tiles
import tiles.language as tl

pytestmark = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")


@tiles.jit
def _add(x, y, out, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    m = i < n
    tl.store(out + i, tl.load(x + i, mask=m) + tl.load(y + i, mask=m), mask=m)


@pytest.mark.parametrize("unsigned,signed", [("uint16", "int16"), ("uint32", "int32"), ("uint64", "int64")])
def test_unsigned_views_are_wrapped(unsigned, signed):
    import torch
    rng = np.random.default_rng(7)
    info = np.iinfo(signed)
    a, b = (rng.integers(info.min, info.max, 37, dtype=signed, endpoint=True) for _ in range(2))
    a[:2], b[:2] = info.max, [info.min, -1]  # wrap-around sums
    x = tiles.reinterpret(torch.tensor(a), getattr(tl, unsigned))
    y = tiles.reinterpret(torch.tensor(b), getattr(tl, unsigned))
    assert type(x).__name__ == "TensorWrapper" and x.dtype == getattr(tl, unsigned)
    out = x.new_empty((37,))
    _add[(1,)](x, y, out, 37, BLOCK=64)
    want = (a.view(unsigned) + b.view(unsigned)).view(signed)
    np.testing.assert_array_equal(out.base.numpy(), want)
    assert (out.base + x.base).dtype == getattr(torch, signed)  # host arithmetic on .base works
    assert tiles.reinterpret(x, getattr(tl, signed)).dtype == getattr(torch, signed)


@tiles.jit
def _copy_strided(x, out, stride0, stride1, COLS: tl.constexpr):
    i = tl.arange(0, 4)[:, None]
    j = tl.arange(0, 4)[None, :]
    m = j < COLS
    tl.store(out + i * COLS + j, tl.load(x + i * stride0 + j * stride1, mask=m), mask=m)


@tiles.jit
def _add_scalars(x, y, out):
    tl.store(out, tl.load(x) + tl.load(y))


def test_wrapped_scalars_and_strided_views():
    """0-d tensors (Triton's tests pass scalars so) and a view whose last axis is strided."""
    import torch
    x = tiles.reinterpret(torch.tensor(-3, dtype=torch.int16), tl.uint16)
    y = tiles.reinterpret(torch.tensor(5, dtype=torch.int16), tl.uint16)
    out = x.new_empty(())
    _add_scalars[(1,)](x, y, out)
    assert out.base.item() == 2  # 65533 + 5 wraps to 2
    base = torch.arange(-10, 10, dtype=torch.int32).reshape(4, 5)[:, ::2]
    view = tiles.reinterpret(base, tl.uint32)
    got = torch.empty((4, 3), dtype=torch.int32)
    _copy_strided[(1,)](view, got, *view.stride(), COLS=3)
    assert torch.equal(got, base)
