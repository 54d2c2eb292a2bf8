"""Binary arithmetic: Triton's promotion table, C integer semantics, wraparound, constexpr folding."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lang_backends import examples_on
from lang_reference import (
    FLOATS,
    INTS,
    NUMPY,
    c_div,
    c_mod,
    int_elementwise,
    literal_dtype,
    literal_fits,
    promote,
    random_values,
    wrap_int,
)

import tiles
import tiles.language as tl
from tiles.core.ops import Op

BLOCK = 64


@tiles.jit
def apply(OP: tl.constexpr, x, y):
    if OP == "add":
        z = x + y
    elif OP == "sub":
        z = x - y
    elif OP == "mul":
        z = x * y
    elif OP == "truediv":
        z = x / y
    elif OP == "floordiv":
        z = x // y
    elif OP == "mod":
        z = x % y
    elif OP == "and":
        z = x & y
    elif OP == "or":
        z = x | y
    else:
        tl.static_assert(OP == "xor", "unknown op")
        z = x ^ y
    return z


@tiles.jit
def tile_tile_kernel(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, EXPECTED: tl.constexpr,
                     BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.load(y_ptr + offs, mask=offs < n)
    z = apply(OP, x, y)
    tl.static_assert(z.dtype == EXPECTED, "result dtype differs from Triton's promotion table")
    tl.store(out_ptr + offs, z, mask=offs < n)


@tiles.jit
def tile_literal_kernel(x_ptr, out_ptr, n, LIT: tl.constexpr, LIT_LEFT: tl.constexpr, OP: tl.constexpr,
                        EXPECTED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    z = apply(OP, LIT, x) if LIT_LEFT else apply(OP, x, LIT)
    tl.static_assert(z.dtype == EXPECTED, "result dtype differs from Triton's promotion table")
    tl.store(out_ptr + offs, z, mask=offs < n)


INT_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "floordiv": c_div, "mod": c_mod, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
           "xor": lambda a, b: a ^ b}
FLOAT_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.divide,
             "mod": np.fmod}


def expected_values(op, x, y, ctype):
    """x op y computed in ``ctype`` the way Triton does (ints: C semantics; ``/`` on ints: fp32)."""
    if ctype in FLOATS or op == "truediv":
        out_type = tl.float32 if ctype not in FLOATS else ctype
        with np.errstate(all="ignore"):
            xa = x.astype(NUMPY[ctype]).astype(NUMPY[out_type])
            ya = y.astype(NUMPY[ctype]).astype(NUMPY[out_type])
            return FLOAT_OPS[op](xa, ya).astype(NUMPY[out_type])
    xa = [wrap_int(int(v), ctype) for v in x]
    ya = [wrap_int(int(v), ctype) for v in y]
    return int_elementwise(INT_OPS[op], np.array(xa, dtype=object), np.array(ya, dtype=object), ctype)


def safe_divisors(op, x, y, ctype):
    """Integer division by zero is undefined and INT_MIN / -1 overflows: steer clear of both."""
    if op in ("floordiv", "mod") and ctype not in FLOATS:
        y = y.copy()
        y[y == 0] = 1
        if ctype in (tl.int8, tl.int16, tl.int32, tl.int64):
            lo = np.iinfo(NUMPY[ctype]).min
            bad = (x.astype(NUMPY[ctype]) == lo) & (y.astype(NUMPY[ctype]) == -1)
            y[bad] = 3
    return y


def assert_same(got, want):
    """Bit-for-bit equal values of one dtype (NaNs equal to NaNs; bfloat16 compared as float64)."""
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "fV":
        got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(got, want)


def assert_result(op, got, want):
    """``assert_same``, except a float32 quotient on a backend that declares ``/`` approximate
    (``Target.approximate``, e.g. cuda's div.full.f32 as Triton's) keeps that bound instead."""
    bound = next(((r, a) for o, r, a in tiles.backends.registry.default().target().approximate
                  if o is Op.DIV), None)
    if op != "truediv" or got.dtype != np.float32 or bound is None:
        return assert_same(got, want)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=bound[0], atol=bound[1],
                               equal_nan=True)


DTYPES = INTS + FLOATS


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or", "xor"])
def test_tile_op_tile(op, backend):
    # Each example compiles a kernel: compiled backends try fewer (still from the derandomized profile).
    @settings(max_examples=examples_on(backend))
    @given(a=st.sampled_from(DTYPES), b=st.sampled_from(DTYPES), n=st.integers(1, BLOCK),
           seed=st.integers(0, 2**32 - 1))
    def check(a, b, n, seed):
        tile_op_tile(a, b, op, n, seed)

    check()


def tile_op_tile(a, b, op, n, seed):
    div_or_mod = op in ("truediv", "floordiv", "mod")
    ctype = promote(a, False, b, False, div_or_mod)
    rng = np.random.default_rng(seed)
    x, y = random_values(rng, a, n), random_values(rng, b, n)
    out_type = tl.float32 if op == "truediv" and ctype is not None and ctype not in FLOATS else ctype
    if ctype is None or (ctype in FLOATS and op in ("floordiv", "and", "or", "xor")):
        with pytest.raises(tiles.CompilationError):
            tile_tile_kernel[(1,)](x, y, np.empty(n, np.float32), n, OP=op, EXPECTED=ctype, BLOCK=BLOCK)
        return
    y = safe_divisors(op, x, y, ctype)
    out = np.empty(n, dtype=NUMPY[out_type])
    tile_tile_kernel[(1,)](x, y, out, n, OP=op, EXPECTED=out_type, BLOCK=BLOCK)
    assert_result(op, out, expected_values(op, x, y, ctype))


LITERALS = [0, 1, -1, 7, -128, 255, 300, 2**31 - 1, -(2**31), 2**31 + 5, 0.5, -2.25, 3.0, 1e10]


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "floordiv", "mod", "xor"])
def test_tile_op_literal(op, backend):
    @settings(max_examples=examples_on(backend))
    @given(a=st.sampled_from(DTYPES), lit=st.sampled_from(LITERALS), left=st.booleans(),
           seed=st.integers(0, 2**32 - 1))
    def check(a, lit, left, seed):
        tile_op_literal(a, lit, left, op, seed)

    check()


def tile_op_literal(a, lit, left, op, seed):
    div_or_mod = op in ("truediv", "floordiv", "mod")
    lit_type = literal_dtype(lit)
    if left:
        ctype = promote(lit_type, True, a, False, div_or_mod)
    else:
        ctype = promote(a, False, lit_type, True, div_or_mod)
    n = 37
    x = random_values(np.random.default_rng(seed), a, n)
    bad_int_op = ctype in FLOATS and op in ("floordiv", "xor")
    out_of_range = ctype is not None and ctype not in FLOATS and not literal_fits(lit, ctype)
    if ctype is None or bad_int_op or out_of_range:
        with pytest.raises(tiles.CompilationError):
            tile_literal_kernel[(1,)](x, np.empty(n, np.float64), n, LIT=lit, LIT_LEFT=left, OP=op,
                                      EXPECTED=ctype, BLOCK=BLOCK)
        return
    if div_or_mod and ctype not in FLOATS:
        lit_c = wrap_int(int(lit), ctype)
        if not left and (lit_c == 0 or lit_c == -1):
            return  # undefined (x / 0) or overflowing (INT_MIN / -1) for some x
        x = safe_divisors(op, np.full(n, lit_c), x, ctype) if left else x
    lit_array = np.full(n, lit if ctype in FLOATS else wrap_int(int(lit), ctype), dtype=object)
    if ctype in FLOATS:
        lit_array = np.full(n, lit, dtype=np.float64)
    xs, ys = (lit_array, x) if left else (x, lit_array)
    want = expected_values(op, xs, ys, ctype)
    out_type = tl.float32 if op == "truediv" and ctype not in FLOATS else ctype
    out = np.empty(n, dtype=NUMPY[out_type])
    tile_literal_kernel[(1,)](x, out, n, LIT=lit, LIT_LEFT=left, OP=op, EXPECTED=out_type, BLOCK=BLOCK)
    assert_result(op, out, want)


@pytest.mark.parametrize("a,b,expected", [
    (tl.float16, tl.bfloat16, tl.float16), (tl.bfloat16, tl.float16, tl.float16),
    (tl.bfloat16, tl.float32, tl.float32), (tl.bfloat16, tl.bfloat16, tl.bfloat16),
    (tl.int8, tl.uint8, tl.uint8), (tl.int32, tl.uint16, tl.int32), (tl.uint32, tl.int32, tl.uint32),
    (tl.int64, tl.uint32, tl.int64), (tl.uint64, tl.int8, tl.uint64), (tl.int16, tl.float16, tl.float16),
    (tl.int64, tl.bfloat16, tl.float32),
])
def test_promotion_table_entries(rng, a, b, expected):
    assert promote(a, False, b, False) == expected  # the reference itself agrees with Triton's table
    x, y = random_values(rng, a, 16), random_values(rng, b, 16)
    out = np.empty(16, dtype=NUMPY[expected])
    tile_tile_kernel[(1,)](x, y, out, 16, OP="add", EXPECTED=expected, BLOCK=16)
    assert_same(out, expected_values("add", x, y, expected))


@pytest.mark.parametrize("dtype,lit,expected", [
    (tl.uint8, 1, tl.uint8), (tl.int8, 1, tl.int8), (tl.uint8, 255, tl.uint8), (tl.int16, -(2**15), tl.int16),
    (tl.float16, 1.5, tl.float16), (tl.bfloat16, 2.0, tl.bfloat16), (tl.int32, 0.5, tl.float32),
    (tl.uint8, 1.0, tl.float32),
])
def test_literal_does_not_promote(rng, dtype, lit, expected):
    x = random_values(rng, dtype, 16)
    out = np.empty(16, dtype=NUMPY[expected])
    tile_literal_kernel[(1,)](x, out, 16, LIT=lit, LIT_LEFT=False, OP="add", EXPECTED=expected, BLOCK=16)
    lit_array = np.full(16, lit if expected in FLOATS else wrap_int(lit, expected), dtype=object)
    assert_same(out, expected_values("add", x, lit_array.astype(np.float64) if expected in FLOATS
                                     else lit_array, expected))


@pytest.mark.parametrize("dtype,lit", [(tl.uint8, -1), (tl.uint32, -1), (tl.int16, 2**31 + 5), (tl.int8, 300),
                                       (tl.int32, 0xFFFFFFFF), (tl.uint8, 256)])
def test_literal_out_of_the_tile_type_is_an_error(rng, dtype, lit):
    """A Python int that is not a value of the tile's type is an error, not a wrap: checked with
    Triton 3.9's front end (the same kernels raise 'Cannot perform a binary operation between an
    unsigned tensor and a negative scalar' / 'Scalar N is out of range for type T')."""
    x = random_values(rng, dtype, 16)
    with pytest.raises(tiles.CompilationError, match="negative number|out of range") as info:
        tile_literal_kernel[(1,)](x, np.empty(16, NUMPY[dtype]), 16, LIT=lit, LIT_LEFT=False, OP="add",
                                  EXPECTED=dtype, BLOCK=16)
    assert "test_arithmetic.py" in str(info.value)  # names the kernel's line


@tiles.jit
def div_mod_kernel(x_ptr, y_ptr, q_ptr, r_ptr, fq_ptr, fr_ptr, A: tl.constexpr, B: tl.constexpr):
    offs = tl.arange(0, 8)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    tl.store(q_ptr + offs, x // y)
    tl.store(r_ptr + offs, x % y)
    # constexpr-only arithmetic is Python's: floor division, remainder with the divisor's sign
    tl.store(fq_ptr + offs, tl.full([8], A // B, tl.int32))
    tl.store(fr_ptr + offs, tl.full([8], A % B, tl.int32))


def test_division_truncates_at_run_time_but_not_for_constexprs():
    x = np.array([7, -7, 7, -7, 0, 1, -1, 2**31 - 1], dtype=np.int32)
    y = np.array([2, 2, -2, -2, 5, -3, 3, -7], dtype=np.int32)
    q, r, fq, fr = (np.empty(8, np.int32) for _ in range(4))
    div_mod_kernel[(1,)](x, y, q, r, fq, fr, A=-7, B=2)
    np.testing.assert_array_equal(q, [c_div(int(a), int(b)) for a, b in zip(x, y)])
    np.testing.assert_array_equal(r, [c_mod(int(a), int(b)) for a, b in zip(x, y)])
    np.testing.assert_array_equal(fq, -4)
    np.testing.assert_array_equal(fr, 1)


@tiles.jit
def overflow_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, x + 1)
    tl.store(out_ptr + BLOCK + offs, x * 3)
    tl.store(out_ptr + 2 * BLOCK + offs, -x)
    tl.store(out_ptr + 3 * BLOCK + offs, x - 2)


@pytest.mark.parametrize("dtype", [tl.int8, tl.uint8, tl.int32, tl.uint32, tl.int64])
def test_integer_overflow_wraps(dtype):
    info = np.iinfo(NUMPY[dtype])
    x = np.array([info.max, info.min, info.max - 1, 0, 1, info.min + 1, 5, info.max // 3 + 1],
                 dtype=NUMPY[dtype])
    out = np.empty(32, dtype=NUMPY[dtype])
    overflow_kernel[(1,)](x, out, BLOCK=8)
    for i, fn in enumerate((lambda v: v + 1, lambda v: v * 3, lambda v: -v, lambda v: v - 2)):
        np.testing.assert_array_equal(out[8 * i:8 * i + 8], [wrap_int(fn(int(v)), dtype) for v in x])


@tiles.jit
def shift_kernel(x_ptr, s_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    s = tl.load(s_ptr + offs)
    tl.store(out_ptr + offs, x << s)
    tl.store(out_ptr + BLOCK + offs, x >> s)


@pytest.mark.parametrize("dtype", [tl.int8, tl.uint8, tl.int32, tl.uint32, tl.int64, tl.uint64])
def test_shifts_arithmetic_for_signed_logical_for_unsigned(rng, dtype):
    bits = np.dtype(NUMPY[dtype]).itemsize * 8
    x = random_values(rng, dtype, 32)
    s = rng.integers(0, bits, 32).astype(NUMPY[dtype])
    out = np.empty(64, dtype=NUMPY[dtype])
    shift_kernel[(1,)](x, s, out, BLOCK=32)
    np.testing.assert_array_equal(out[:32], [wrap_int(int(a) << int(b), dtype) for a, b in zip(x, s)])
    np.testing.assert_array_equal(out[32:], [int(a) >> int(b) for a, b in zip(x, s)])


@tiles.jit
def unary_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, -x)
    tl.store(out_ptr + BLOCK + offs, ~x)
    tl.store(out_ptr + 2 * BLOCK + offs, tl.abs(x))


@pytest.mark.parametrize("dtype", [tl.int8, tl.int32, tl.uint16, tl.int64])
def test_neg_invert_abs_on_ints(rng, dtype):
    x = random_values(rng, dtype, 16)
    out = np.empty(48, dtype=NUMPY[dtype])
    unary_kernel[(1,)](x, out, BLOCK=16)
    np.testing.assert_array_equal(out[:16], [wrap_int(-int(v), dtype) for v in x])
    np.testing.assert_array_equal(out[16:32], [wrap_int(~int(v), dtype) for v in x])
    np.testing.assert_array_equal(out[32:], [wrap_int(abs(int(v)), dtype) for v in x])


def test_mixed_signedness_division_is_rejected():
    x = np.ones(16, np.int32)
    y = np.ones(16, np.uint32)
    with pytest.raises(tiles.CompilationError, match="signedness"):
        tile_tile_kernel[(1,)](x, y, np.empty(16, np.int32), 16, OP="floordiv", EXPECTED=tl.int32, BLOCK=16)
