"""Integer semantics over every pair of integer types: Triton's rules, checked against NumPy/Python ints.

The rules below were verified against Triton 3.9 (its CPU interpreter, ``TRITON_INTERPRET=1``, over
every binary integer operator, every pair of integer types and tile/literal mixes; and its
compiled TTIR/LLVM IR from ``triton.compile`` for an sm_90 target), then written down here as
plain-Python references, because CI has no Triton:

* ``>>`` shifts arithmetically when the tile whose operator runs is signed (the left tile; for a
  number on the left, the right tile), logically otherwise, in the promoted type: ``int8 >> uint8``
  is an arithmetic shift of uint8 bits (-16 >> 2 gives 0xfc).  int1 counts as unsigned, so
  ``-5 >> bool_tile`` is a logical shift of int32 (compiled Triton's ``arith.shrui``; Triton's
  interpreter shifts arithmetically there, and we follow the compiled code).
* A shift amount outside [0, bits) is undefined in Triton (LLVM poison; PTX clamps it); tiles
  gives 0, or all ones for an arithmetic shift of a negative value (docs/language.md).
* ``tl.umulhi`` is unsigned on every type (``tt.mulhiui``): the high half of the product of the
  operands' bits; each tile operand must be int32, int64, uint32 or uint64.
* A Python int the promoted type cannot hold is refused (no silent wrap), and so is a negative one
  against an unsigned type.  ``//`` and ``%`` refuse operands of different signedness, int1
  counting as unsigned.  ``tl.cdiv(x, d)`` is ``(x + (d - 1)) // d``, grouped so.
"""

import numpy as np
import pytest
from lang_reference import INTS, NUMPY, c_div, literal_dtype, literal_fits, promote, random_values, wrap_int

import tiles
import tiles.language as tl

TYPES = INTS + [tl.int1]
PAIRS = [(a, b) for a in TYPES for b in TYPES]
N = 32


def _signed(d) -> bool:
    return d in (tl.int8, tl.int16, tl.int32, tl.int64)


def _bits(d) -> int:
    return 1 if d == tl.int1 else np.dtype(NUMPY[d]).itemsize * 8


def _in(value: int, ct) -> int:
    """A value converted to the computation type (ints wrap, bools are 0/1)."""
    return wrap_int(int(value), ct)


def shift_ref(op: str, x: int, y: int, ct, arithmetic: bool) -> int:
    """x op y in ``ct`` with Triton's choice of arithmetic/logical and tiles' rule out of range."""
    bits = _bits(ct)
    mask = (1 << bits) - 1
    bx, amount = _in(x, ct) & mask, _in(y, ct) & mask  # bit patterns; the amount read unsigned
    sx = bx - (1 << bits) if bx >> (bits - 1) and bits > 1 else bx
    if op == "shl":
        r = (bx << amount) & mask if amount < bits else 0
    elif arithmetic:
        r = sx >> amount if amount < bits else (-1 if sx < 0 else 0)
    else:
        r = bx >> amount if amount < bits else 0
    return _in(r, ct)


def _as_int64(values, ct) -> np.ndarray:
    """What ``r.to(tl.int64)`` stores for the ``ct`` values (Python ints)."""
    return np.array([wrap_int(v, tl.int64) for v in values], dtype=np.int64)


def _operands(rng, xt, yt, ct, shift: bool):
    x = random_values(rng, xt, N)
    y = random_values(rng, yt, N)
    if shift and yt != tl.int1:  # half the amounts in range, the rest anything the type holds
        hi = min(_bits(ct), int(np.iinfo(NUMPY[yt]).max) + 1)
        y[: N // 2] = rng.integers(0, hi, N // 2).astype(NUMPY[yt])
    return x, y


@tiles.jit
def pairs_kernel(x_ptr, y_ptr, out_ptr, OP: tl.constexpr, XT: tl.constexpr, YT: tl.constexpr,
                 CT: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    for i in tl.static_range(len(XT)):
        x = tl.load(x_ptr + i * N + offs).to(XT[i])
        y = tl.load(y_ptr + i * N + offs).to(YT[i])
        if OP == "shr":
            r = x >> y
        elif OP == "shl":
            r = x << y
        elif OP == "umulhi":
            r = tl.umulhi(x, y)
        else:
            tl.static_assert(OP == "cdiv", "unknown op")
            r = tl.cdiv(x, y)
        tl.static_assert(r.dtype == CT[i], "the result type differs from Triton's")
        tl.store(out_ptr + i * N + offs, r.to(tl.int64))


def _run_pairs(op, pairs, make, ref):
    xs, ys, want, cts = [], [], [], []
    for xt, yt in pairs:
        ct = promote(xt, False, yt, False)
        x, y = make(xt, yt, ct)
        xs.append(x.astype(np.int64))
        ys.append(y.astype(np.int64))
        want.append(_as_int64([ref(int(a), int(b), ct, xt, yt) for a, b in zip(x, y)], ct))
        cts.append(ct)
    out = np.zeros(len(pairs) * N, np.int64)
    pairs_kernel[(1,)](np.concatenate(xs), np.concatenate(ys), out, OP=op, XT=tuple(p[0] for p in pairs),
                       YT=tuple(p[1] for p in pairs), CT=tuple(cts), N=N)
    for k, (xt, yt) in enumerate(pairs):
        np.testing.assert_array_equal(out[k * N:(k + 1) * N], want[k], err_msg=f"{xt} {op} {yt}")


@pytest.mark.parametrize("op", ["shr", "shl"])
def test_shift_every_pair_of_integer_types(rng, op, backend):
    """Tile op tile for all 81 pairs: promoted type, arithmetic iff the left tile is signed."""
    _run_pairs(op, PAIRS, lambda xt, yt, ct: _operands(rng, xt, yt, ct, True),
               lambda a, b, ct, xt, yt: shift_ref(op, a, b, ct, _signed(xt)))


def test_shift_signed_by_unsigned_is_arithmetic(backend):
    """Triton's own test_shift_op case: int8 -16 >> uint8 2 is 0xfc (uint8), and so for 16/32/64 bits."""
    pairs = [(tl.int8, tl.uint8), (tl.int16, tl.uint16), (tl.int32, tl.uint32), (tl.int64, tl.uint64),
             (tl.int8, tl.uint64)]
    x = np.full(len(pairs) * N, -16, np.int64)
    y = np.tile(np.arange(N) % 4, len(pairs)).astype(np.int64)
    out = np.zeros_like(x)
    pairs_kernel[(1,)](x, y, out, OP="shr", XT=tuple(p[0] for p in pairs), YT=tuple(p[1] for p in pairs),
                       CT=tuple(p[1] for p in pairs), N=N)
    for k, (_, yt) in enumerate(pairs):
        bits = _bits(yt)
        want = [((-16 >> int(s)) & ((1 << bits) - 1)) for s in np.arange(N) % 4]  # 0xf0, 0xf8, 0xfc, 0xfe...
        np.testing.assert_array_equal(out[k * N:(k + 1) * N], _as_int64(want, yt), err_msg=str(yt))


@tiles.jit
def literal_shift_kernel(x_ptr, out_ptr, XT: tl.constexpr, LITS: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs).to(XT)
    for j in tl.static_range(len(LITS)):
        tl.store(out_ptr + (4 * j + 0) * N + offs, (x >> LITS[j]).to(tl.int64))
        tl.store(out_ptr + (4 * j + 1) * N + offs, (LITS[j] >> x).to(tl.int64))
        tl.store(out_ptr + (4 * j + 2) * N + offs, (x << LITS[j]).to(tl.int64))
        tl.store(out_ptr + (4 * j + 3) * N + offs, (LITS[j] << x).to(tl.int64))


@pytest.mark.parametrize("xt", TYPES, ids=str)
def test_shift_with_python_ints(rng, xt, backend):
    """``x >> 3``, ``-16 >> x``...: the number takes the tile's type unless the tile is int1 (then
    int32); the shift is arithmetic iff the tile is signed (int1 included: unsigned)."""
    candidates = [0, 1, 3, 7, 15, 31, 63, -1, -16, 200, -(2**31), 2**31 + 1, 2**63 + 5]
    x = random_values(rng, xt, N)
    if xt != tl.int1:
        x[: N // 2] = rng.integers(0, _bits(xt), N // 2).astype(NUMPY[xt])
    lits, want = [], []
    for c in candidates:
        ct = promote(literal_dtype(c), True, xt, False)
        if not literal_fits(c, ct):
            continue
        lits.append(c)
        for op, left in (("shr", True), ("shr", False), ("shl", True), ("shl", False)):
            vals = [shift_ref(op, int(v), c, ct, _signed(xt)) if left else shift_ref(op, c, int(v), ct, _signed(xt))
                    for v in x]
            want.append(_as_int64(vals, ct))
    out = np.zeros(len(want) * N, np.int64)
    literal_shift_kernel[(1,)](x.astype(np.int64), out, XT=xt, LITS=tuple(lits), N=N)
    np.testing.assert_array_equal(out, np.concatenate(want))


UMULHI_TYPES = [tl.int32, tl.int64, tl.uint32, tl.uint64]


def _umulhi_ref(a: int, b: int, ct, xt, yt) -> int:
    bits = _bits(ct)
    mask = (1 << bits) - 1
    return _in(((_in(a, ct) & mask) * (_in(b, ct) & mask)) >> bits, ct)


def test_umulhi_every_pair_of_types(rng, backend):
    """Unsigned high half for every pair of int32/int64/uint32/uint64 tiles (after promotion)."""
    pairs = [(a, b) for a in UMULHI_TYPES for b in UMULHI_TYPES]
    _run_pairs("umulhi", pairs, lambda xt, yt, ct: (random_values(rng, xt, N), random_values(rng, yt, N)),
               _umulhi_ref)


def test_umulhi_of_triton_unit_test(backend):
    """Triton's test_umulhi: x=[-1,-2,3,INT32_MIN], y=[-1,5,-1,2] give [-2,4,2,1] in int32."""
    x = np.array([-1, -2, 3, -(2**31)] * 2, np.int64)
    y = np.array([-1, 5, -1, 2] * 2, np.int64)
    out = np.zeros(8, np.int64)
    pairs_kernel[(1,)](x, y, out, OP="umulhi", XT=(tl.int32, tl.int64), YT=(tl.int32, tl.int64),
                       CT=(tl.int32, tl.int64), N=4)
    np.testing.assert_array_equal(out[:4], [-2, 4, 2, 1])
    np.testing.assert_array_equal(out[4:], [-2, 4, 2, 1])  # the same high halves at 64 bits


def test_cdiv_every_pair_of_integer_types(rng, backend):
    """``tl.cdiv(x, d) = (x + (d - 1)) // d`` step by step (wrapping, C division; ``d - 1`` in d's type),
    for every pair Triton accepts (same signedness; int1 is unsigned)."""
    pairs = [(a, b) for a, b in PAIRS if _signed(a) == _signed(b) and tl.int1 not in (a, b)]

    def ref(a, b, ct, xt, yt):  # d - 1 is computed in d's own type, then x + that in the promoted one
        return _in(c_div(_in(a + _in(b - 1, yt), ct), _in(b, ct)), ct)

    def make(xt, yt, ct):
        x, y = random_values(rng, xt, N), random_values(rng, yt, N)
        y[y == 0] = 3
        if _signed(ct):  # INT_MIN // -1 overflows (undefined): keep clear of it
            low = -(1 << (_bits(ct) - 1))
            bad = [_in(int(a) + _in(int(b) - 1, yt), ct) == low and int(b) == -1 for a, b in zip(x, y)]
            y[np.array(bad)] = 5
        return x, y

    _run_pairs("cdiv", pairs, make, ref)


@tiles.jit
def literal_op_kernel(x_ptr, out_ptr, OP: tl.constexpr, LIT: tl.constexpr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    if OP == "add":
        r = x + LIT
    elif OP == "and":
        r = x & LIT
    elif OP == "lt":
        r = x < LIT
    elif OP == "maximum":
        r = tl.maximum(x, LIT)
    elif OP == "rshift":
        r = LIT >> x
    elif OP == "cdiv":
        r = tl.cdiv(x, LIT)
    else:
        tl.static_assert(OP == "umulhi", "unknown op")
        r = tl.umulhi(x, LIT)
    tl.store(out_ptr + offs, r)


@pytest.mark.parametrize("dtype,op,lit,match", [
    (np.int8, "add", 128, "128 is out of range for the int8 tile"),
    (np.int8, "lt", -129, "out of range"),
    (np.int32, "and", 0xFFFFFFFF, "4294967295 is out of range for the int32 tile"),
    (np.uint8, "maximum", 256, "out of range"),
    (np.uint32, "add", -1, "negative number -1 with an unsigned uint32 tile"),
    (np.uint8, "rshift", -16, "negative number -16"),
    (np.int64, "add", 2**63, "out of range"),
    (np.int32, "cdiv", -(2**31), "-2147483649 is out of range"),  # d - 1 is computed first, in Python
    (np.int16, "umulhi", 3, "umulhi needs int32, int64, uint32 or uint64 tiles, got int16"),
    (np.bool_, "umulhi", 3, "got int1"),
])
def test_numbers_the_tile_type_cannot_hold_are_refused(dtype, op, lit, match, backend):
    x = np.zeros(4, dtype)
    with pytest.raises(tiles.CompilationError, match=r"test_int_semantics\.py:\d+.*" + match):
        literal_op_kernel[(1,)](x, np.zeros(4, np.int64), OP=op, LIT=lit, N=4)


@tiles.jit
def bool_div_kernel(b_ptr, x_ptr, out_ptr, MOD: tl.constexpr):
    offs = tl.arange(0, 4)
    b = tl.load(b_ptr + offs)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, b % x if MOD else b // x)


@pytest.mark.parametrize("mod", [False, True])
def test_div_mod_of_int1_and_a_signed_tile_is_refused(mod, backend):
    """int1 is unsigned: ``bool_tile // int8_tile`` mixes signedness, which Triton refuses."""
    with pytest.raises(tiles.CompilationError, match="different signedness"):
        bool_div_kernel[(1,)](np.ones(4, np.bool_), np.ones(4, np.int8), np.zeros(4, np.int8), MOD=mod)
    out = np.zeros(4, np.uint8)  # int1 with an unsigned tile is fine
    bool_div_kernel[(1,)](np.array([1, 0, 1, 1], np.bool_), np.array([1, 3, 2, 255], np.uint8), out, MOD=mod)
    np.testing.assert_array_equal(out, [0, 0, 1, 1] if mod else [1, 0, 0, 0])


@tiles.jit
def folded_kernel(out_ptr, A: tl.constexpr, B: tl.constexpr, XT: tl.constexpr, YT: tl.constexpr,
                  N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.full((N,), A, XT)  # constants: constant folding computes these at compile time
    y = tl.full((N,), B, YT)
    tl.store(out_ptr + offs, (x >> y).to(tl.int64))
    tl.store(out_ptr + N + offs, (x << y).to(tl.int64))
    if XT.primitive_bitwidth >= 32 and YT.primitive_bitwidth >= 32:
        tl.store(out_ptr + 2 * N + offs, tl.umulhi(x, y).to(tl.int64))


@pytest.mark.parametrize("xt,yt,a,b", [
    (tl.int8, tl.uint8, -16, 2), (tl.int32, tl.uint32, -(2**31), 31), (tl.int64, tl.uint64, -5, 1),
    (tl.int16, tl.int16, -300, 20), (tl.uint16, tl.int8, 40000, 3), (tl.int32, tl.int32, -1, -1),
    (tl.int32, tl.int32, -(2**31), 2), (tl.int64, tl.uint32, -7, 4000000000), (tl.uint64, tl.int64, 2**64 - 3, 7),
])
def test_constant_folding_gives_the_run_time_answer(xt, yt, a, b, backend):
    """The same ops on constants (folded by the compiler) and on loaded values (not folded)."""
    ct = promote(xt, False, yt, False)
    want = [shift_ref("shr", a, b, ct, _signed(xt)), shift_ref("shl", a, b, ct, _signed(xt))]
    if _bits(xt) >= 32 and _bits(yt) >= 32:
        want.append(_umulhi_ref(a, b, ct, xt, yt))
    folded = np.zeros(3 * 4, np.int64)
    folded_kernel[(1,)](folded, A=a, B=b, XT=xt, YT=yt, N=4)
    loaded = np.zeros(3 * 4, np.int64)
    x, y = np.full(4, wrap_int(a, tl.int64), np.int64), np.full(4, wrap_int(b, tl.int64), np.int64)
    pairs_kernel[(1,)](x, y, loaded[:4], OP="shr", XT=(xt,), YT=(yt,), CT=(ct,), N=4)
    pairs_kernel[(1,)](x, y, loaded[4:8], OP="shl", XT=(xt,), YT=(yt,), CT=(ct,), N=4)
    if len(want) == 3:
        pairs_kernel[(1,)](x, y, loaded[8:], OP="umulhi", XT=(xt,), YT=(yt,), CT=(ct,), N=4)
    expected = np.concatenate([np.full(4, wrap_int(w, tl.int64), np.int64) for w in want])
    np.testing.assert_array_equal(folded[:len(expected)], expected)
    np.testing.assert_array_equal(loaded[:len(expected)], expected)
