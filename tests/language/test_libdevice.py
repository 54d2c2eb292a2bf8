"""libdevice / tl.math functions on the interpreter, against NumPy computed independently.

The interpreter computes each function with its table reference in float64 and rounds once;
here float32 results are compared with NumPy's own float32 functions (a different code path),
exact functions bit for bit, special functions against known answers from mpmath.
"""

import math

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.conformance.corpus.libdevice import groups, inputs, libdevice_map
from tiles.core import dtypes as D
from tiles.core import mathfns
from tiles.core.errors import CompilationError
from tiles.language.extra import libdevice

# The interpreter's math tables against NumPy; other backends' libdevice is checked by conformance.
pytestmark = pytest.mark.backends("interpreter")

F32, F64 = np.float32, np.float64


def _round_half_away(x):
    return np.where(np.abs(x - np.trunc(x)) == 0.5, x + np.copysign(0.5, x), np.rint(x))


# NumPy in the operand's own dtype (float32 stays float32), independent of the table.
NATIVE = {
    "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh,
    "atanh": np.arctanh, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
    "atan2": np.arctan2, "expm1": np.expm1, "log10": np.log10, "log1p": np.log1p, "cbrt": np.cbrt,
    "pow": np.power, "hypot": np.hypot, "trunc": np.trunc, "rint": np.rint, "nearbyint": np.rint,
    "round": _round_half_away, "copysign": np.copysign, "nextafter": np.nextafter,
    "ldexp": np.ldexp, "scalbn": np.ldexp, "isinf": np.isinf, "isfinited": np.isfinite,
    "finitef": np.isfinite, "signbit": np.signbit,
    "fast_expf": np.exp, "fast_logf": np.log, "fast_log2f": np.log2, "fast_log10f": np.log10,
    "fast_sinf": np.sin, "fast_cosf": np.cos, "fast_tanf": np.tan, "fast_powf": np.power,
    "fast_dividef": np.divide,
    "fdim": lambda x, y: np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(x > y, x - y, 0)).astype(x.dtype),
    "popc": lambda x: np.bitwise_count(x), "saturatef": lambda x: np.clip(np.nan_to_num(x, nan=0.0), 0, 1),
    "exp10": lambda x: np.power(np.asarray(10, x.dtype), x),
    "rcbrt": lambda x: 1 / np.cbrt(x),
}

# Known answers: mpmath at 40 digits on these (exactly representable) inputs.
KNOWN = {
    "erfinv": [(0.5, 0.4769362762044699), (-0.875, -1.0847870400692832), (0.9990234375, 2.331467773621948)],
    "lgamma": [(0.5, 0.5723649429247001), (-2.5, -0.056243716497674054), (30.0, 71.25703896716801)],
    "tgamma": [(0.5, 1.772453850905516), (-2.5, -0.9453087204829419), (7.25, 1155.3810139199898)],
    "erfc": [(0.5, 0.4795001221869535), (-1.5, 1.9661051464753108), (8.0, 1.1224297172982926e-29)],
    "erfcx": [(0.5, 0.6156903441929259), (-1.5, 18.653886256262734), (10.0, 0.05614099274382259)],
    "j0": [(2.5, -0.048383776468198)], "j1": [(2.5, 0.49709410246427405)],
    "y0": [(2.5, 0.4980703596152319)], "y1": [(2.5, 0.1459181379667858)],
}


def _run(names, d, n, seed):
    fns = [mathfns.FUNCTIONS[name] for name in names]
    rng = np.random.default_rng(seed)
    x, y = inputs(rng, fns, d, n)
    block = tiles.next_power_of_2(n)
    sentinel = 12345 if d.is_int else 0.25
    size = len(fns) * n
    out = np.full(size + block, sentinel, np.int64 if d.is_int else d.np)
    libdevice_map[(1,)](x, y, out, n, NAMES=tuple(names), BINARY=len(fns[0].operands) == 2,
                        BLOCK=block, backend="interpreter")
    assert (out[size:] == sentinel).all(), "the kernel wrote past n (mask)"
    return x, y, out[:size].reshape(len(fns), n)


def _all_groups(dtypes=(D.float32, D.float64, D.int32, D.int64)):
    return [(d, group, [f.name for f in fns]) for d in dtypes for group, fns in groups(d).items()]


@pytest.mark.parametrize("d,group,names", _all_groups(), ids=lambda v: str(v) if not isinstance(v, list) else "")
@pytest.mark.parametrize("n", [1, 37, 130])
def test_interpreter_against_native_numpy(d, group, names, n):
    x, y, got = _run(names, d, n, seed=n)
    checked = 0
    for i, name in enumerate(names):
        fn = mathfns.FUNCTIONS[name]
        native = NATIVE.get(name)
        if d.is_int:
            ref = {"popc": lambda v: np.bitwise_count(v.view(np.uint32 if d.bits == 32 else np.uint64)),
                   "clz": lambda v: np.array([d.bits - int(u).bit_length() for u in
                                              v.view(np.uint32 if d.bits == 32 else np.uint64)]),
                   "ffs": lambda v: np.array([(int(u) & -int(u)).bit_length() for u in
                                              v.view(np.uint32 if d.bits == 32 else np.uint64)]),
                   "brev": lambda v: np.array([int(format(int(u), f"0{d.bits}b")[::-1], 2) for u in
                                               v.view(np.uint32 if d.bits == 32 else np.uint64)],
                                              np.uint64).astype(v.dtype.str.replace("i", "u")).view(v.dtype)}[name]
            np.testing.assert_array_equal(got[i], ref(x[i]).astype(np.int64), err_msg=name)
            checked += 1
            continue
        if native is None:
            continue
        with np.errstate(all="ignore"):
            args = [x[i]] + ([y[i]] if len(fn.operands) == 2 else [])
            want = np.asarray(native(*args))
        got_i = got[i]
        if want.dtype == np.bool_ or fn.result in ("b", "i32", "i64"):
            np.testing.assert_array_equal(got_i, want.astype(got_i.dtype), err_msg=name)
        elif fn.exact:
            np.testing.assert_array_equal(got_i, want.astype(d.np), err_msg=name)
        else:
            # NumPy's own float32 code is a few ulp off at worst; the interpreter is within 1 of exact.
            ulps = max(fn.ulp, 4) + 2
            finite = np.isfinite(want)
            assert np.array_equal(np.isnan(got_i), np.isnan(want.astype(d.np))), name
            assert np.array_equal(got_i[~finite], want[~finite].astype(d.np), equal_nan=True), name
            gap = np.abs(got_i[finite].astype(F64) - want[finite].astype(F64))
            with np.errstate(over="ignore"):
                spacing = np.spacing(np.abs(want[finite]).astype(d.np)).astype(F64)
            bound = ulps * spacing + max(fn.atol, 2) * np.finfo(d.np).eps
            assert (gap <= bound).all(), (name, x[i][finite][gap > bound][:4], got_i[finite][gap > bound][:4])
        checked += 1
    assert checked or all(n in KNOWN or n in ("logb", "ilogb", "remainder", "llrint", "llround")
                          for n in names)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("name", sorted(KNOWN))
def test_special_functions_known_answers(name, dtype):
    xs = np.array([a for a, _ in KNOWN[name]], dtype)
    want = np.array([b for _, b in KNOWN[name]], F64)
    out = np.zeros(xs.size, dtype)

    @tiles.jit
    def kern(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
        o = tl.arange(0, BLOCK)
        m = o < n
        tl.store(out_ptr + o, getattr(libdevice, FN)(tl.load(x_ptr + o, mask=m)), mask=m)

    kern[(1,)](xs, out, xs.size, FN=name, BLOCK=4, backend="interpreter")
    fn = mathfns.FUNCTIONS[name]
    eps = np.finfo(dtype).eps
    bound = (2 + fn.ref_error64[0]) * np.spacing(np.abs(want.astype(dtype))) + (1 + fn.ref_error64[1]) * eps * 1e-3
    assert (np.abs(out.astype(F64) - want) <= bound).all(), (out, want)


# Special values, each from the C standard (Annex F) or CUDA's documented choices where C leaves
# them to the implementation (ilogb of 0 / NaN, float -> int64 saturation).
EDGES = [
    ("lgamma", -np.inf, np.inf), ("lgamma", 0.0, np.inf), ("tgamma", -0.0, -np.inf),
    ("tgamma", np.inf, np.inf), ("tanh", -np.inf, -1.0), ("erfc", np.inf, 0.0), ("erfc", -np.inf, 2.0),
    ("expm1", -np.inf, -1.0), ("log1p", -1.0, -np.inf), ("atanh", 1.0, np.inf), ("acosh", 0.5, np.nan),
    ("cbrt", -8.0, -2.0), ("round", 2.5, 3.0), ("round", -2.5, -3.0), ("rint", 2.5, 2.0),
    ("trunc", -2.7, -2.0), ("ilogb", 0.0, -(2**31)), ("ilogb", np.nan, -(2**31)),
    ("ilogb", np.inf, 2**31 - 1), ("ilogb", 1e-40, -133), ("logb", 0.0, -np.inf), ("logb", 1e-40, -133.0),
    ("llrint", np.nan, 0), ("llrint", 1e30, 2**63 - 1), ("llrint", -1e30, -(2**63)), ("llround", -0.5, -1),
    ("saturatef", np.nan, 0.0), ("saturatef", 7.0, 1.0), ("signbit", -0.0, 1), ("signbit", np.nan, 0),
    ("isinf", -np.inf, True), ("finitef", np.nan, False), ("isfinited", 1.0, True),
]


@pytest.mark.parametrize("name,x,want", EDGES)
def test_edge_values(name, x, want):
    fn = mathfns.FUNCTIONS[name]
    xs = np.array([x, x], F32)
    res_dtype = fn.result_dtype(D.float32).np
    out = np.zeros(2, res_dtype)

    @tiles.jit
    def kern(x_ptr, out_ptr, FN: tl.constexpr):
        o = tl.arange(0, 2)
        tl.store(out_ptr + o, getattr(libdevice, FN)(tl.load(x_ptr + o)))

    kern[(1,)](xs, out, FN=name, backend="interpreter")
    if isinstance(want, float) and math.isnan(want):
        assert np.isnan(out).all()
    else:
        assert (out == np.array(want).astype(res_dtype)).all(), (out, want)


def test_names_are_reachable_as_triton_spells_them():
    from tiles.language.extra.cuda.libdevice import tanh  # noqa: F401
    from tiles.language.extra.hip import libdevice as hip
    assert tl.extra.cuda.libdevice.tanh is libdevice.tanh is tl.math.tanh is hip.tanh
    used = {"pow", "rint", "lgamma", "erfinv", "finitef", "isfinited", "div_rn", "fmod", "ffs", "tanh"}
    assert used <= set(libdevice.__all__)
    assert tl.math.exp is tl.exp  # Triton's own tl.math names stay the core ones


def test_mixed_operands_promote_and_broadcast():
    x = np.linspace(0.5, 3.0, 8, dtype=F32)
    out = np.zeros((2, 8), F32)

    @tiles.jit
    def kern(x_ptr, out_ptr):
        o = tl.arange(0, 8)
        v = tl.load(x_ptr + o)
        tl.store(out_ptr + o, libdevice.pow(v, 2))             # int literal: float32 power
        tl.store(out_ptr + 8 + o, libdevice.ldexp(v, o - 3))    # int32 tile exponent

    kern[(1,)](x, out, backend="interpreter")
    np.testing.assert_array_equal(out[0], x * x)
    np.testing.assert_array_equal(out[1], np.ldexp(x, np.arange(8) - 3))


def test_float16_is_refused_as_triton_does_with_the_fix():
    @tiles.jit
    def kern(x_ptr):
        o = tl.arange(0, 4)
        tl.store(x_ptr + o, libdevice.tanh(tl.load(x_ptr + o)))

    with pytest.raises(CompilationError, match=r"test_libdevice.py:\d+.*float32 or float64.*float16.*to\(tl.float32\)"):
        kern[(1,)](np.zeros(4, np.float16), backend="interpreter")


def test_unsupported_name_says_where_and_why():
    @tiles.jit
    def kern(x_ptr):
        o = tl.arange(0, 4)
        tl.store(x_ptr + o, libdevice.byte_perm(tl.load(x_ptr + o), 1, 2))

    with pytest.raises(CompilationError, match=r"test_libdevice.py:\d+.*byte_perm is not supported.*shifts"):
        kern[(1,)](np.zeros(4, np.int32), backend="interpreter")


def test_constants_fold_through_math_functions():
    out = np.zeros(4, F32)

    @tiles.jit
    def kern(out_ptr):
        o = tl.arange(0, 4)
        tl.store(out_ptr + o, libdevice.tanh(tl.full((4,), 0.5, tl.float32)) + libdevice.cbrt(27.0))

    kern[(1,)](out, backend="interpreter")
    assert "math_fn" not in kern.ir(out)  # folded with the interpreter's own semantics
    np.testing.assert_array_equal(out, np.full(4, np.float32(np.tanh(0.5)) + np.float32(3.0), F32))


def test_div_rz_is_the_exact_quotient_truncated():
    """Against exact rational arithmetic (fractions), ties, overflow and subnormals included."""
    from fractions import Fraction
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300)).astype(F32)
    y = (rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300)).astype(F32)
    x[:6], y[:6] = [1, 3, 1e-45, 3e38, -7, 6], [3, 7, 3, 1e-10, 3, 3]
    out = np.zeros(300, F32)

    @tiles.jit
    def kern(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        o = tl.arange(0, BLOCK)
        m = o < n
        tl.store(out_ptr + o, libdevice.div_rz(tl.load(x_ptr + o, mask=m), tl.load(y_ptr + o, mask=m)), mask=m)

    kern[(1,)](x, y, out, 300, BLOCK=512, backend="interpreter")
    biggest = Fraction(float(np.finfo(F32).max))
    for a, b, got in zip(x, y, out):
        q = Fraction(float(a)) / Fraction(float(b))
        if abs(q) > biggest:
            want = np.copysign(np.finfo(F32).max, float(q))
        else:
            want = F32(float(q))
            if abs(Fraction(float(want))) > abs(q):
                want = np.nextafter(want, F32(0))
        assert got == want, (a, b, got, want)


def test_names_served_by_existing_ops():
    x = np.array([1.0, -2.0, 3.5, 7.0, -0.5, 9.0, 0.25, -3.0], F32)
    out = np.zeros(8, F32)

    @tiles.jit
    def kern(x_ptr, out_ptr):
        o = tl.arange(0, 8)
        v = tl.load(x_ptr + o)
        r = libdevice.fmod(v, 1.5) + libdevice.fmax(v, 0.0) + libdevice.add_rn(v, v) + libdevice.rcp_rn(v)
        r += libdevice.fma_rn(v, v, 1.0) + libdevice.mulhi(o, o).to(tl.float32) + libdevice.abs(v)
        tl.store(out_ptr + o, r)

    kern[(1,)](x, out, backend="interpreter")
    want = np.fmod(x, F32(1.5)) + np.fmax(x, F32(0)) + (x + x) + F32(1) / x
    want = want + ((x * x + F32(1)) + F32(0) + np.abs(x))  # same association; mulhi of small ints is 0
    np.testing.assert_array_equal(out, want)
