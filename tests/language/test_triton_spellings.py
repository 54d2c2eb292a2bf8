"""Spellings Triton's own code and tests use that tiles must take as Triton does (issue 32, item 4).

Each was checked against Triton 3.9's CPU interpreter (``TRITON_INTERPRET=1``, /work/tvenv):
``x.shape == [N, M]`` and ``desc.block_shape == [N, M]`` are True there (its shapes are
``tl.tuple``\\ s, equal to a list of the same sizes) and ``x.shape == [M, N]`` is False; a
``torch.Size`` given for a ``tl.constexpr`` parameter is indexed like a tuple;
``tl.core.CONSTEXPR_0`` is ``constexpr(0)``, used as a parameter default by LightLLM; type
strings take Triton's spellings (``"*float8_e5m2"``, ``"*half"``: its ``type_canonicalisation_dict``).
Triton 3.9 has no ``tl.float8_e5m2`` attribute, so neither does this test ask for one.
"""

import numpy as np
import pytest

import tiles
import tiles.language as tl


@tiles.jit
def shape_compare_kernel(X, out, N: tl.constexpr, M: tl.constexpr):
    x = tl.load(X + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :])
    desc = tl.make_tensor_descriptor(X, shape=[N, M], strides=[M, 1], block_shape=[N, M])
    tl.static_assert(x.shape == [N, M])
    tl.static_assert(desc.block_shape == [N, M])
    row = tl.sum(x, axis=1)
    tl.static_assert(row.shape == [N])
    flags = (x.shape == [N, M]) + 2 * (desc.block_shape == [N, M]) + 4 * (x.shape == [M, N]) \
        + 8 * (x.shape != [N, M]) + 16 * (row.shape == (N,))
    tl.store(out, flags)
    if x.shape == [N, M]:  # the form Triton's tests use to pick a branch
        tl.store(out + 1, tl.sum(row, axis=0))


@pytest.mark.parametrize("n, m", [(4, 8), (8, 8), (2, 16)])
def test_shapes_equal_lists(n, m):
    x = np.random.default_rng(n * m).uniform(-3, 3, (n, m)).astype(np.float32)
    out = np.zeros(2, np.float32)
    shape_compare_kernel[(1,)](x, out, n, m)
    # True, True, then x.shape == [M, N] holds only for a square tile, != is False, tuple form True
    assert out[0] == 1 + 2 + (4 if n == m else 0) + 16
    assert out[1] == pytest.approx(x.sum(), rel=1e-5)


@tiles.jit
def sized_kernel(out, SHAPE: tl.constexpr, BIAS=tl.core.CONSTEXPR_0):
    offs = tl.arange(0, SHAPE[0] * SHAPE[1])
    tl.store(out + offs, offs // SHAPE[1] * 100 + offs % SHAPE[1] + BIAS)


def test_torch_size_as_constexpr():
    torch = pytest.importorskip("torch")
    out = np.full((4, 8), -1, np.int32)  # a NumPy output: every backend takes it (a CPU tensor is refused on GPUs)
    sized_kernel[(1,)](out, torch.Size([4, 8]))
    expected = np.add.outer(np.arange(4) * 100, np.arange(8))
    np.testing.assert_array_equal(out, expected)


def test_constexpr_0_default():
    assert isinstance(tl.core.CONSTEXPR_0, tl.constexpr) and tl.core.CONSTEXPR_0 == 0
    out = np.full(8, -1, np.int32)
    sized_kernel[(1,)](out, (2, 4))
    np.testing.assert_array_equal(out, [0, 1, 2, 3, 100, 101, 102, 103])
    sized_kernel[(1,)](out, (4, 2), BIAS=-7)
    np.testing.assert_array_equal(out, [-7, -6, 93, 94, 193, 194, 293, 294])


@tiles.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)


@pytest.mark.parametrize("spelling, same_as", [("*float8_e5m2", "*fp8e5"), ("*float8_e4m3fn", "*fp8e4nv"),
                                               ("*half", "*fp16"), ("*float", "*fp32"), ("*double", "*fp64")])
def test_triton_type_strings(spelling, same_as):
    sig = {"src": spelling, "dst": spelling, "n": "i32"}
    ours = copy_kernel.compile(signature=sig, constexprs={"BLOCK": 16})
    ref = copy_kernel.compile(signature={**sig, "src": same_as, "dst": same_as}, constexprs={"BLOCK": 16})
    assert ours.asm["ir"] == ref.asm["ir"]
    with pytest.raises(tiles.LaunchError, match="cannot read type"):
        copy_kernel.compile(signature={**sig, "src": "*float8_e9m9"}, constexprs={"BLOCK": 16})


@tl.core.builtin
def pick(values, i, _semantic=None):
    """A builtin as Triton's tests write one (test_frontend's ``make_list``): plain Python that a
    kernel calls; Triton passes ``_semantic``, tiles ``None``."""
    return values[i]


@tl.core.builtin
def scaled(x, k, _semantic=None):
    return x * k


@tiles.jit
def builtin_kernel(X, Y, n, K: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    w: tl.constexpr = pick([3, 5, 7], K)
    tl.store(Y + offs, scaled(tl.load(X + offs, mask=offs < n), w), mask=offs < n)


@pytest.mark.parametrize("k", [0, 2])
def test_core_builtin_functions_run_in_kernels_and_refuse_on_the_host(rng, k):
    n = 77
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    x[:2] = [np.iinfo(np.int32).max // 7, np.iinfo(np.int32).min // 7]
    y = np.zeros(n, np.int32)
    builtin_kernel[(tiles.cdiv(n, 32),)](x, y, n, K=k, BLOCK=32)
    np.testing.assert_array_equal(y, x * [3, 5, 7][k])
    assert tl.core.is_builtin(scaled) and not tl.core.is_builtin(builtin_kernel)
    with pytest.raises(ValueError, match="Did you forget to add @triton.jit"):
        scaled(2, 3)


def test_exponent_bias_of_every_float_type():
    """Triton 3.9's ``dtype.exponent_bias`` (its fp8 tests decode bits with it), and none for ints."""
    want = {tl.float8e4nv: 7, tl.float8e5: 15, tl.float8e4b8: 8, tl.float8e5b16: 16, tl.float16: 15,
            tl.bfloat16: 127, tl.float32: 127, tl.float64: 1023}
    for dtype, bias in want.items():
        assert dtype.exponent_bias == bias, dtype
        # the bias places 1.0: its exponent field is the bias (checked on the NumPy/ml_dtypes type)
        one = np.ones(1, dtype.np).view(f"u{dtype.itemsize}")[0]
        assert int(one) >> dtype.fp_mantissa_width == bias, dtype
    for dtype in (tl.int8, tl.uint32, tl.int1):
        assert not hasattr(dtype, "exponent_bias")


@tiles.jit
def one_element_if_kernel(x_ptr, out_ptr, LIMIT: tl.constexpr, EXPLICIT: tl.constexpr):
    cond = tl.load(x_ptr + tl.arange(0, 1)) > LIMIT  # a tile of one element
    if EXPLICIT:
        cond = cond.item()
    if cond:
        tl.store(out_ptr, tl.load(x_ptr) * 2)
    else:
        tl.store(out_ptr, -1)


@pytest.mark.parametrize("explicit", [False, True])
def test_a_one_element_tile_as_an_if_condition(rng, explicit, tmp_path, monkeypatch):
    """Triton's ``test_unsplat``: ``if t:`` on a one-element tile works (with a warning, as Triton
    warns) and so does ``if t.item():``; a longer tile is still refused."""
    monkeypatch.setenv("TILES_CACHE_DIR", str(tmp_path))  # traced, not read from an earlier run's cache
    kernel = tiles.jit(one_element_if_kernel.fn)  # compiled afresh: the warning comes with the compile
    for i, value in enumerate((int(rng.integers(43, 1000)), 42, int(rng.integers(-1000, 42)), 2**30 - 1)):
        x = np.array([value], np.int32)
        out = np.zeros(1, np.int32)
        if i == 0 and not explicit:
            with pytest.warns(UserWarning, match="If conditional called with multidimensional Tensor"):
                kernel[(1,)](x, out, LIMIT=42, EXPLICIT=False)
        else:
            kernel[(1,)](x, out, LIMIT=42, EXPLICIT=explicit)
        assert out[0] == (2 * value if value > 42 else -1)
    with pytest.raises(tiles.CompilationError, match="an if condition must be a scalar, got a tile of shape"):
        two_element_if_kernel[(1,)](np.zeros(2, np.int32))


@tiles.jit
def two_element_if_kernel(x_ptr):
    if tl.load(x_ptr + tl.arange(0, 2)) > 0:
        tl.store(x_ptr, 1)


def test_dtype_repr_is_the_expression_that_names_it():
    """Triton's ``repr(tl.int8) == 'triton.language.int8'`` (its test_dtype_codegen evaluates it);
    outside the compatibility mode the expression names tiles' module.  ``str`` stays the name."""
    for dtype in (tl.int8, tl.uint64, tl.float16, tl.bfloat16, tl.float8e5, tl.int1):
        assert repr(dtype) == f"tiles.language.{dtype.name}" and str(dtype) == dtype.name
        assert eval(repr(dtype), {"tiles": tiles}) is dtype
