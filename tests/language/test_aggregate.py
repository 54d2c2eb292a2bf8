"""``@tiles.aggregate`` (``@triton.aggregate``): a class of tiles and compile-time values that a
kernel builds, passes to ``@jit`` functions, carries through loops and merges in ``if``s, with
``@jit`` methods; ``tl.aggregate_replace`` copies one with fields changed.  Kernels compare with
NumPy on random inputs of odd sizes; the host-side rules (fields, defaults, inheritance,
immutability) are checked directly."""

from typing import NamedTuple

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.aggregate
class Strip:
    """A window of a 1-D array: base pointer, valid length, block size."""
    base: tl.tensor
    n: tl.tensor
    BLOCK: tl.constexpr = 64

    @tiles.jit
    def load(self, start):
        offs = start + tl.arange(0, self.BLOCK)
        return tl.load(self.base + offs, mask=offs < self.n, other=0.0)

    @tiles.jit
    def __getitem__(self, start):
        return self.load(start)

    @tiles.jit
    def shifted(self, by):
        return tl.aggregate_replace(self, base=self.base + by, n=self.n - by)


@tiles.jit
def block_sum(strip, start):
    return tl.sum(strip.load(start), axis=0)


@tiles.jit
def sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    s = Strip(x_ptr, n, BLOCK)
    acc = 0.0
    while s.n > 0:  # a loop carrying the aggregate itself: its tiles change, BLOCK stays
        acc += block_sum(s, 0)
        s = s.shifted(BLOCK)
    tl.store(out_ptr, acc)


@pytest.mark.parametrize("n", [1, 37, 64, 200, 1000])
def test_an_aggregate_carried_through_a_loop(rng, n):
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(1, np.float32)
    sum_kernel[(1,)](x, out, n, BLOCK=64)
    np.testing.assert_allclose(out[0], x.sum(dtype=np.float64), rtol=1e-5, atol=1e-5)


@tiles.jit
def branch_kernel(x_ptr, out_ptr, n, skip, BLOCK: tl.constexpr):
    s = Strip(x_ptr, n, BLOCK)
    if skip > 0:  # a run-time branch merging two aggregates of the same fields
        s = tl.aggregate_replace(s, base=s.base + skip, n=s.n - skip)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, s[0], mask=offs < BLOCK)


@pytest.mark.parametrize("skip", [0, 1, 5])
def test_an_aggregate_merged_by_a_run_time_if(rng, skip):
    n = 29
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(32, np.nan, np.float32)
    branch_kernel[(1,)](x, out, n, skip, BLOCK=32)
    want = np.zeros(32, np.float32)
    want[:n - skip] = x[skip:]
    np.testing.assert_array_equal(out, want)


@tiles.aggregate
class Affine:
    scale: tl.tensor
    shift: tl.tensor
    OUT: tl.constexpr

    @tiles.jit
    def apply(self, v):
        return (v * self.scale + self.shift).to(self.OUT)


@tiles.jit
def affine_kernel(x_ptr, y_ptr, n, a, b, OUT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    f = Affine(a, b, OUT)  # numbers given to tl.tensor fields become scalar tiles
    tl.store(y_ptr + offs, f.apply(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


@pytest.mark.parametrize("out", [np.float32, np.float16])
def test_jit_methods_and_a_constexpr_dtype_field(rng, out):
    n = 301
    x = rng.standard_normal(n).astype(np.float32)
    x[:3] = [0.0, -0.0, np.float32(3.0e38)]
    y = np.zeros(n, out)
    affine_kernel[(tiles.cdiv(n, 128),)](x, y, n, 1.5, -2.0, OUT=tl.float16 if out is np.float16 else tl.float32,
                                         BLOCK=128)
    with np.errstate(over="ignore"):
        want = (x * np.float32(1.5) + np.float32(-2.0)).astype(out)
        # CUDA contracts a * b + c into one FMA as Triton does (enable_fp_fusion): one rounding
        fused = (x.astype(np.float64) * 1.5 - 2.0).astype(np.float32).astype(out)
    same = (y == want) | (y == fused) | (np.isnan(y) & np.isnan(want))
    assert same.all(), (np.flatnonzero(~same)[:5], y[~same][:5], want[~same][:5])


# ------------------------------------------------------------- the class, on the host

def test_fields_defaults_and_constexpr_wrapping():
    @tiles.aggregate
    class State:
        x: tl.constexpr
        y: tl.constexpr = 42

    s = State(3)
    assert isinstance(s.x, tl.constexpr) and s.x.value == 3
    assert isinstance(s.y, tl.constexpr) and s.y.value == 42
    assert State(3, y=7).y.value == 7
    with pytest.raises(TypeError, match="missing a value for field 'x'"):
        State()
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        State(1, z=2)


def test_tuples_keep_their_type_and_hold_constexprs():
    class Shape(NamedTuple):
        m: tl.constexpr
        n: tl.constexpr

    @tiles.aggregate
    class Layout:
        shape: tl.tuple
        strides: tl.tuple

    lay = Layout(Shape(3, tl.constexpr(7)), (7, 1))
    assert isinstance(lay.shape, Shape) and lay.shape.n.value == 7
    assert all(isinstance(v, tl.constexpr) for v in (*lay.shape, *lay.strides))


def test_immutable_after_construction_and_replace_copies():
    @tiles.aggregate
    class State:
        x: tl.constexpr
        y: tl.constexpr

    s = State(10, 20)
    with pytest.raises(AttributeError, match="cannot assign to field 'x' on immutable aggregate"):
        s.x = tl.constexpr(99)
    with pytest.raises(AttributeError, match="has no field 'z'"):
        s.z = 1
    t = tl.aggregate_replace(s, x=30)
    assert (t.x.value, t.y.value, s.x.value) == (30, 20, 10)
    with pytest.raises(TypeError, match="has no field 'z'"):
        tl.aggregate_replace(s, z=1)
    with pytest.raises(TypeError, match="expects an aggregate instance"):
        tl.aggregate_replace(42, x=1)


def test_inheritance_user_init_and_constexpr_function_methods():
    @tiles.aggregate
    class Base:
        a: tl.constexpr = tl.constexpr(100)

        @tiles.constexpr_function
        def doubled(self):
            return self.a * 2

    @tiles.aggregate
    class Child(Base):
        b: tl.constexpr

    c = Child(b=7)
    assert (c.a.value, c.b.value, c.doubled().value) == (100, 7, 200)
    assert Child(1, 2).doubled().value == 2

    @tiles.aggregate
    class Squared:
        v: tl.constexpr
        v2: tl.constexpr

        def __init__(self, v):
            self.v = tl.constexpr(v)
            self.v2 = tl.constexpr(v * v)

    assert Squared(4).v2.value == 16

    @tiles.aggregate
    class Forgetful:
        v: tl.constexpr

        def __init__(self):
            pass

    with pytest.raises(AttributeError, match="did not set field 'v'"):
        Forgetful()

    class Plain:
        pass

    with pytest.raises(TypeError, match="Aggregates can only inherit from other aggregates"):
        @tiles.aggregate
        class Bad(Plain):
            x: tl.constexpr


@tiles.jit
def assigning_kernel(x_ptr):
    s = Strip(x_ptr, 4, 64)
    s.n = 3


def test_assigning_a_field_in_a_kernel_is_a_compile_error():
    with pytest.raises(tiles.CompilationError, match="immutable aggregate Strip"):
        assigning_kernel[(1,)](np.zeros(4, np.float32))


@tiles.aggregate
class Config:
    BLOCK: tl.constexpr
    SCALE: tl.constexpr


@tiles.jit
def configured_kernel(x_ptr, y_ptr, n, C: tl.constexpr):
    offs = tl.program_id(0) * C.BLOCK + tl.arange(0, C.BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * C.SCALE, mask=offs < n)


def test_an_aggregate_of_constexprs_as_a_compile_time_argument(rng):
    n = 45
    x = rng.standard_normal(n).astype(np.float32)
    kernel = tiles.jit(configured_kernel.fn)  # its own cache, counted below
    for block, scale in ((16, 3), (16, 3), (32, -2), (16, 3)):
        y = np.zeros(n, np.float32)
        kernel[(tiles.cdiv(n, block),)](x, y, n, Config(block, scale))
        np.testing.assert_array_equal(y, x * np.float32(scale))
    assert Config(16, 3) == Config(16, 3) and Config(16, 3) != Config(16, 2)
    assert len(kernel.cache) == 2  # equal configurations are one compile-time value


def test_field_types_are_checked_and_dtypes_are_constexprs():
    @tiles.aggregate
    class Typed:
        dtype: tl.dtype
        t: tl.tensor

    with pytest.raises(TypeError, match="Typed.t is annotated tensor"):
        Typed(tl.float16, 3)  # on the host a number is no tile

    @tiles.aggregate
    class Kind:
        dtype: tl.dtype

    k = Kind(tl.bfloat16)
    assert isinstance(k.dtype, tl.constexpr) and k.dtype.value is tl.bfloat16
