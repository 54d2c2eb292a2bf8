"""Pointers made from integers: host addresses loaded from an address table (grouped GEMM style)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.core.errors import KernelRuntimeError


@pytest.fixture(autouse=True)
def _interpreter():
    tiles.set_backend("interpreter")
    yield
    tiles.set_backend(None)


@tiles.jit
def gather_rows(table_ptr, lens_ptr, out_ptr, BLOCK: tl.constexpr):
    """out[g, :len_g] = 2 * (the float32 array whose address is table[g])[:len_g]."""
    g = tl.program_id(0)
    src = tl.load(table_ptr + g).to(tl.pointer_type(tl.float32))
    n = tl.load(lens_ptr + g)
    offs = tl.arange(0, BLOCK)
    x = tl.load(src + offs, mask=offs < n, other=-1.0)
    tl.store(out_ptr + g * BLOCK + offs, x * 2)


@tiles.jit
def scatter_rows(table_ptr, lens_ptr, val_ptr, BLOCK: tl.constexpr):
    """(the float32 array whose address is table[g])[:len_g] = val[g, :len_g]."""
    g = tl.program_id(0)
    dst = tl.load(table_ptr + g).to(tl.pointer_type(tl.float32))
    n = tl.load(lens_ptr + g)
    offs = tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(val_ptr + g * BLOCK + offs), mask=offs < n)


BLOCK = 32


def _run_gather(sources, extra=()):
    """Gathers every source through the address table; returns what the kernel wrote."""
    table = np.array([s.ctypes.data for s in sources], np.int64)
    lens = np.array([s.size for s in sources], np.int32)
    out = np.full((len(sources), BLOCK), 7.0, np.float32)
    if extra:
        gather_with_extra[(len(sources),)](table, lens, out, *extra, BLOCK=BLOCK)
    else:
        gather_rows[(len(sources),)](table, lens, out, BLOCK=BLOCK)
    return out


@tiles.jit
def gather_with_extra(table_ptr, lens_ptr, out_ptr, keep_a, keep_b, BLOCK: tl.constexpr):
    g = tl.program_id(0)
    src = tl.load(table_ptr + g).to(tl.pointer_type(tl.float32))
    n = tl.load(lens_ptr + g)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + g * BLOCK + offs, tl.load(src + offs, mask=offs < n, other=-1.0) * 2)


def _expected(sources):
    want = np.full((len(sources), BLOCK), -2.0, np.float32)
    for g, s in enumerate(sources):
        want[g, :s.size] = 2 * s
    return want


def test_addresses_into_argument_arrays_and_views():
    rng = np.random.default_rng(11)
    a = rng.standard_normal(19).astype(np.float32)
    b = rng.standard_normal(40).astype(np.float32)
    sources = [a, b[5:25], b[30:33], a[7:8]]  # odd sizes, views into the middle of b and a
    out = _run_gather(sources, extra=(a, b))
    np.testing.assert_array_equal(out, _expected(sources))


def test_addresses_into_live_arrays_not_passed():
    rng = np.random.default_rng(12)
    held = [rng.standard_normal(n).astype(np.float32) for n in (3, 32, 17)]
    out = _run_gather(held)  # the arrays are alive (this frame holds them) but not arguments
    np.testing.assert_array_equal(out, _expected(held))
    again = _run_gather(held[::-1])  # remembered from the first launch
    np.testing.assert_array_equal(again, _expected(held[::-1]))


def test_stores_through_addresses_land_in_the_arrays():
    rng = np.random.default_rng(13)
    big = np.full(50, 3.5, np.float32)
    dests = [big[2:9], big[20:45]]
    vals = rng.standard_normal((2, BLOCK)).astype(np.float32)
    table = np.array([d.ctypes.data for d in dests], np.int64)
    lens = np.array([d.size for d in dests], np.int32)
    scatter_rows[(2,)](table, lens, vals, BLOCK=BLOCK)
    want = np.full(50, 3.5, np.float32)
    want[2:9], want[20:45] = vals[0, :7], vals[1, :25]
    np.testing.assert_array_equal(big, want)


def test_access_past_the_array_an_address_points_into_is_caught():
    a = np.arange(10, dtype=np.float32)
    table = np.array([a.ctypes.data], np.int64)
    lens = np.array([12], np.int32)  # two lanes past the end of a
    out = np.zeros((1, BLOCK), np.float32)
    with pytest.raises(KernelRuntimeError, match="out of bounds"):
        gather_with_extra[(1,)](table, lens, out, a, a, BLOCK=BLOCK)


def test_address_of_nothing_names_both_lines_and_the_fix():
    lines = gather_rows.fn.__code__.co_firstlineno
    table = np.array([0x1000], np.int64)  # no live array holds this address
    lens = np.array([4], np.int32)
    out = np.zeros((1, BLOCK), np.float32)
    with pytest.raises(KernelRuntimeError) as info:
        gather_rows[(1,)](table, lens, out, BLOCK=BLOCK)
    text = str(info.value)
    assert "0x1000 is in no array" in text
    assert f"test_interp_int_to_ptr.py:{lines + 4}" in text   # the .to(tl.pointer_type(...)) line
    assert f"test_interp_int_to_ptr.py:{lines + 7}" in text   # the load through it
    assert "pass the array it points into as an extra argument" in text


def test_null_and_masked_off_addresses_touch_nothing():
    a = np.arange(5, dtype=np.float32)
    table = np.array([0, a.ctypes.data], np.int64)
    lens = np.array([0, 5], np.int32)  # group 0: a null address, every lane masked off
    out = np.full((2, BLOCK), 7.0, np.float32)
    gather_rows[(2,)](table, lens, out, BLOCK=BLOCK)
    np.testing.assert_array_equal(out, _expected([a[:0], a]))


def test_pointer_round_trip_through_an_integer_keeps_its_buffer():
    @tiles.jit
    def round_trip(x_ptr, out_ptr, N: tl.constexpr):
        offs = tl.arange(0, N)
        p = (x_ptr.to(tl.int64) + 4 * 3).to(tl.pointer_type(tl.float32))
        tl.store(out_ptr + offs, tl.load(p + offs, mask=offs < N - 3, other=0.0))

    x = np.random.default_rng(14).standard_normal(16).astype(np.float32)
    out = np.full(16, 5.0, np.float32)
    round_trip[(1,)](x, out, N=16)
    np.testing.assert_array_equal(out, np.concatenate([x[3:], np.zeros(3, np.float32)]))


def test_torch_tensors_by_data_ptr():
    """Grouped-GEMM style host code: torch tensors kept in a list, their data_ptr() in a table."""
    torch = pytest.importorskip("torch")
    gen = torch.Generator().manual_seed(15)
    held = [torch.randn(40, generator=gen)[3:19], torch.randn(5, generator=gen),
            torch.randn(32, generator=gen).to(torch.float32)]
    table = torch.tensor([t.data_ptr() for t in held], dtype=torch.int64)
    lens = torch.tensor([t.numel() for t in held], dtype=torch.int32)
    out = torch.full((3, BLOCK), 7.0)
    gather_rows[(3,)](table, lens, out, BLOCK=BLOCK)
    np.testing.assert_array_equal(out.numpy(), _expected([t.numpy() for t in held]))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


class _WarnsWhenAskedItsClass:
    """Like torch's deprecated module-level names: reading ``__class__`` warns."""

    @property
    def __class__(self):  # type: ignore[override]
        import warnings
        warnings.warn("deprecated name touched", FutureWarning, stacklevel=2)
        return _WarnsWhenAskedItsClass


def test_finding_the_address_never_touches_other_objects(rng):
    """The heap scan that resolves a loaded address reads no attribute of unrelated objects, so
    user code sees no warnings from it (Triton's grouped-GEMM tutorial printed torch's)."""
    noisy = _WarnsWhenAskedItsClass()
    source = rng.standard_normal(20).astype(np.float32)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = _run_gather([source])
    np.testing.assert_array_equal(out[0, :20], source * 2)
    assert noisy is not None
