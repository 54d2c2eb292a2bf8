"""Triton 3.x's module layout and names: tl.core, tl.standard, tl.random, unsupported names."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
import tiles.language.core as core
from tiles.core.errors import CompilationError
from tiles.language.standard import _log2, sum, zeros_like  # noqa: A004  (as kernels import them)

# `triton.language.__all__` of Triton 3.9.0 (printed by its venv); "extra" is the math work's.
TRITON_39_ALL = [
    'PropagateNan', 'TRITON_MAX_TENSOR_NUMEL', 'abs', 'add', 'arange', 'argmax', 'argmin',
    'associative_scan', 'assume', 'atomic_add', 'atomic_and', 'atomic_cas', 'atomic_load',
    'atomic_max', 'atomic_min', 'atomic_or', 'atomic_poll', 'atomic_store', 'atomic_xchg',
    'atomic_xor', 'bfloat16', 'bitonic_merge', 'block_type', 'broadcast', 'broadcast_to', 'cast',
    'cat', 'cdiv', 'ceil', 'clamp', 'condition', 'const', 'constexpr', 'constexpr_type', 'cos',
    'cumprod', 'cumsum', 'debug_barrier', 'device_assert', 'device_print', 'div_rn', 'dot',
    'dot_scaled', 'dtype', 'erf', 'exp', 'exp2', 'expand_dims', 'expect_zero', 'fdiv', 'flip',
    'float16', 'float32', 'float64', 'float8e4b15', 'float8e4b8', 'float8e4nv', 'float8e5',
    'float8e5b16', 'floor', 'fma', 'full', 'gather', 'histogram', 'inline_asm_elementwise', 'int1',
    'int16', 'int32', 'int64', 'int8', 'interleave', 'join', 'load', 'load_tensor_descriptor', 'log',
    'log2', 'make_block_ptr', 'make_tensor_descriptor', 'map_elementwise', 'math', 'max',
    'max_constancy', 'max_contiguous', 'maximum', 'min', 'minimum', 'mul', 'multiple_of',
    'num_programs', 'pair_uniform_to_normal', 'permute', 'philox', 'philox_impl', 'pi32_t',
    'pointer_type', 'program_id', 'rand', 'rand4x', 'randint', 'randint4x', 'randn', 'randn4x',
    'range', 'ravel', 'reduce', 'reduce_or', 'reshape', 'rsqrt', 'sigmoid', 'sin', 'slice',
    'softmax', 'sort', 'split', 'sqrt', 'sqrt_rn', 'squeeze', 'static_assert', 'static_print',
    'static_range', 'store', 'store_tensor_descriptor', 'sub', 'sum', 'swizzle2d', 'target_info',
    'tensor', 'tensor_descriptor', 'to_tensor', 'topk', 'trans', 'tuple', 'uint16', 'uint32',
    'uint64', 'uint8', 'uint_to_uniform_float', 'umulhi', 'unsqueeze', 'view', 'void', 'where',
    'xor_sum', 'zeros', 'zeros_like',
]
UNSUPPORTED = ["inline_asm_elementwise", "void", "slice", "target_info"]


def test_every_triton_name_exists():
    missing = [n for n in TRITON_39_ALL if not hasattr(tl, n)]
    assert missing in ([], ["extra"]), missing


def test_core_and_standard_modules_answer_triton_names():
    assert core.constexpr is tl.constexpr and core.tensor is tl.tensor
    assert core.int16 is tl.int16 and core.static_range is tl.static_range
    assert core.get_int_dtype(32, True) is tl.int32 and core.get_int_dtype(8, False) is tl.uint8
    assert tl.standard._log2(1024) == 10 and isinstance(tl.standard._log2(8), tl.constexpr)
    assert tl.random.philox is tl.philox and tl.pi32_t == tl.pointer_type(tl.int32)
    assert tl.TRITON_MAX_TENSOR_NUMEL == 2**20
    with pytest.raises(AttributeError):
        core.no_such_name  # noqa: B018


@tiles.jit
def uses_unsupported(x_ptr, WHICH: tl.constexpr):
    v = tl.load(x_ptr)
    if WHICH == "target_info":
        v = v + tl.target_info.is_cuda()
    tl.store(x_ptr, v)


@pytest.mark.parametrize("which", ["target_info"])
def test_unsupported_names_raise_a_compilation_error_at_the_line(which):
    with pytest.raises(CompilationError) as info:
        uses_unsupported[(1,)](np.ones(1, np.float32), WHICH=which)
    text = str(info.value)
    assert "not supported by tiles" in text and f"tl.{which}" in text
    assert info.value.loc.line > 0 and which in info.value.loc.source


# -- standard library -----------------------------------------------------------------


@tiles.jit
def argsort_style(x_ptr, o_ptr, s_ptr, N: tl.constexpr):
    # the idioms of public bitonic argsort kernels
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    n_dims: core.constexpr = _log2(x.shape[0])
    if core.constexpr(x.dtype.primitive_bitwidth) == 32:
        int_type = core.get_int_dtype(32, True)
    else:
        int_type = core.int16
    acc = zeros_like(x.to(int_type, bitcast=True))
    for i in core.static_range(n_dims):
        acc += i
    tl.store(o_ptr + offs, acc)
    tl.store(s_ptr, sum(x, 0))


def test_argsort_style_helpers(rng):
    x = rng.standard_normal(16).astype(np.float32)
    o, s = np.zeros(16, np.int32), np.zeros(1, np.float32)
    argsort_style[(1,)](x, o, s, N=16)
    np.testing.assert_array_equal(o, np.full(16, 0 + 1 + 2 + 3))
    np.testing.assert_allclose(s[0], x.sum(), rtol=1e-5)


@tiles.jit
def swizzle_kernel(out, SI: tl.constexpr, SJ: tl.constexpr, SG: tl.constexpr, BI: tl.constexpr,
                   BJ: tl.constexpr):
    i = tl.arange(0, BI)[:, None]
    j = tl.arange(0, BJ)[None, :]
    a, b = tl.swizzle2d(i, j, SI, SJ, SG)
    tl.store(out + i * BJ + j, a * 100 + b, mask=(i < SI) & (j < SJ))


def test_swizzle2d_matches_triton():
    # Triton 3.9 interpreter, same kernel, swizzle2d(i, j, 5, 7, 3): new_i * 100 + new_j
    want = [[0, 100, 200, 1, 101, 201, 2], [102, 202, 3, 103, 203, 4, 104],
            [204, 5, 105, 205, 6, 106, 206], [300, 400, 301, 401, 302, 402, 303],
            [403, 304, 404, 305, 405, 306, 406]]
    out = np.zeros(64, np.int32)
    swizzle_kernel[(1,)](out, SI=5, SJ=7, SG=3, BI=8, BJ=8)
    np.testing.assert_array_equal(out.reshape(8, 8)[:5, :7], want)


def test_swizzle2d_scalars_stay_python():
    assert tl.swizzle2d(3, 2, 5, 7, 3) == (3, 1)  # row 3, column 2 of the table above


@tiles.jit
def flip_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    tl.store(o_ptr + offs, tl.flip(tl.load(x_ptr + offs), DIM))


@pytest.mark.parametrize("dim", [0, 1, -1, None])
@pytest.mark.parametrize("dtype", [np.float32, np.int16])
def test_flip(rng, dim, dtype):
    x = (rng.standard_normal((4, 16)) * 100).astype(dtype)
    if dtype == np.float32:
        x[0, :3] = [np.nan, -0.0, np.inf]
    o = np.zeros_like(x)
    flip_kernel[(1,)](x, o, M=4, N=16, DIM=dim)
    want = np.flip(x, 1 if dim is None else dim)
    np.testing.assert_array_equal(o.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


@tiles.jit
def interleave_kernel(a_ptr, b_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    c = tl.interleave(tl.load(a_ptr + offs), tl.load(b_ptr + offs))
    out = tl.arange(0, M)[:, None] * (2 * N) + tl.arange(0, 2 * N)[None, :]
    tl.store(o_ptr + out, c)


def test_interleave(rng):
    a, b = rng.integers(-99, 99, (2, 8)).astype(np.int32), rng.integers(-99, 99, (2, 8)).astype(np.int32)
    o = np.zeros((2, 16), np.int32)
    interleave_kernel[(1,)](a, b, o, M=2, N=8)
    np.testing.assert_array_equal(o, np.stack([a, b], -1).reshape(2, 16))


@tiles.jit
def topk_kernel(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr, DESC: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(o_ptr + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :], tl.topk(x, K, descending=DESC))


@pytest.mark.parametrize("desc", [True, False])
def test_topk(rng, desc):
    x = rng.standard_normal((4, 32)).astype(np.float32)
    o = np.zeros((4, 4), np.float32)
    topk_kernel[(1,)](x, o, M=4, N=32, K=4, DESC=desc)
    s = np.sort(x, 1)
    np.testing.assert_array_equal(o, s[:, ::-1][:, :4] if desc else s[:, :4])


@tiles.jit
def misc_kernel(x_ptr, o_ptr, r_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    y = tl.squeeze(tl.unsqueeze(x, 0), 0)
    y = tl.map_elementwise(lambda a, b: a * 2 + b, y, 1)
    y = tl.add(y, tl.mul(x, 3, sanitize_overflow=False))
    y = tl.sub(y, 1)
    tl.assume(N > 0)
    tl.assume(x >= -(2**30))
    tl.store(o_ptr + offs, tl.expect_zero(y, x == 0))
    tl.store(r_ptr, tl.reduce_or(x, 0))


def test_misc_standard_functions(rng):
    x = rng.integers(-1000, 1000, 32).astype(np.int32)
    o, r = np.zeros(32, np.int32), np.zeros(1, np.int32)
    misc_kernel[(1,)](x, o, r, N=32)
    np.testing.assert_array_equal(o, x * 2 + 1 + 3 * x - 1)
    assert r[0] == np.bitwise_or.reduce(x)


@tiles.jit
def atomic_load_store_kernel(f_ptr, i_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(o_ptr + offs, tl.atomic_load(f_ptr + offs) + tl.atomic_load(i_ptr + offs).to(tl.float32))
    tl.atomic_store(f_ptr + offs, 2.5)


def test_atomic_load_and_store(rng):
    f = rng.standard_normal(8).astype(np.float32)
    i = rng.integers(-50, 50, 8).astype(np.int32)
    o = np.zeros(8, np.float32)
    want = f + i.astype(np.float32)
    atomic_load_store_kernel[(1,)](f, i, o, N=8)
    np.testing.assert_array_equal(o, want)
    np.testing.assert_array_equal(f, np.full(8, 2.5, np.float32))


@tiles.jit
def descriptor_functions_kernel(x_ptr, o_ptr, M, N, B: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, [M, N], [N, 1], [B, B])
    dst = tl.make_tensor_descriptor(o_ptr, [M, N], [N, 1], [B, B])
    tl.store_tensor_descriptor(dst, [0, B], tl.load_tensor_descriptor(src, [0, 0]) + 1)


def test_tensor_descriptor_functions(rng):
    x = rng.standard_normal((8, 16)).astype(np.float32)
    o = np.zeros_like(x)
    descriptor_functions_kernel[(1,)](x, o, 8, 16, B=8)
    np.testing.assert_array_equal(o[:, 8:], x[:, :8] + 1)
    np.testing.assert_array_equal(o[:, :8], 0)


def test_assume_false_at_compile_time_is_an_error():
    @tiles.jit
    def k(x_ptr, N: tl.constexpr):
        tl.assume(N > 4)
        tl.store(x_ptr, 1)
    with pytest.raises(CompilationError, match="tl.assume"):
        k[(1,)](np.zeros(1, np.int32), N=2)


@tiles.jit
def member_functions_kernel(x_ptr, o_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    v = tl.load(x_ptr + offs)
    total = tl.reshape(v.sum(0), [1]).item()
    tl.store(o_ptr + offs, v.flip() + total + v.cdiv(2) + v.reduce_or(0))


def test_tensor_member_functions(rng):
    x = rng.integers(0, 100, 8).astype(np.int32)
    o = np.zeros(8, np.int32)
    member_functions_kernel[(1,)](x, o, N=8)
    np.testing.assert_array_equal(o, x[::-1] + x.sum() + (x + 1) // 2 + np.bitwise_or.reduce(x))


def _opencl_or_skip():
    import importlib.util
    if importlib.util.find_spec("pyopencl") is None:
        pytest.skip("pyopencl is not installed")
    try:
        tiles.set_backend("opencl")
    except Exception as e:  # no OpenCL platform
        pytest.skip(f"OpenCL backend unavailable: {e}")


@pytest.mark.backends("opencl")
def test_standard_functions_on_opencl(rng):
    """The new standard functions lower through ordinary ops: OpenCL gives the interpreter's bits."""
    x = (rng.standard_normal((4, 16)) * 100).astype(np.float32)
    x[0, :3] = [np.nan, -0.0, np.inf]
    ints = rng.integers(-1000, 1000, 32).astype(np.int32)
    topk_in = rng.standard_normal((4, 32)).astype(np.float32)

    def run_all():
        flipped, swz = np.zeros_like(x), np.zeros(64, np.int32)
        top, misc, r = np.zeros((4, 4), np.float32), np.zeros(32, np.int32), np.zeros(1, np.int32)
        inter = np.zeros((2, 16), np.int32)
        flip_kernel[(1,)](x, flipped, M=4, N=16, DIM=1)
        swizzle_kernel[(1,)](swz, SI=5, SJ=7, SG=3, BI=8, BJ=8)
        topk_kernel[(1,)](topk_in, top, M=4, N=32, K=4, DESC=True)
        misc_kernel[(1,)](ints, misc, r, N=32)
        interleave_kernel[(1,)](ints[:16].reshape(2, 8), ints[16:].reshape(2, 8), inter, M=2, N=8)
        return [flipped, swz, top, misc, r, inter]

    tiles.set_backend("interpreter")
    want = run_all()
    _opencl_or_skip()
    for got, ref in zip(run_all(), want):
        np.testing.assert_array_equal(got.view(np.uint8), ref.view(np.uint8))
