"""Triton's ``tl.float8e4b15``: 1 sign bit, 4 exponent bits with bias 15, 3 mantissa bits, subnormals,
and every one of the 256 bytes finite (no infinity, no NaN; the largest is 1.875, byte 0x7f).

The reference below is written from the bit layout alone.  It was checked against Triton 3.9's own
interpreter (``TRITON_INTERPRET=1``, a kernel of tl.load / .to / tl.store over
``triton.reinterpret(..., tl.float8e4b15)``): every byte decodes to float32 as this table says, and
float32 -> float8e4b15 gives the same bytes with ``fp_downcast_rounding="rtz"`` for every result of
2**-18 and up below 1.9375, and with the default rounding (to nearest, ties away from zero: the cut-off
bit rounds the magnitude up) for every normal result but where a mantissa of 0b111 carries into an odd
exponent (Triton's interpreter ORs the carry in and loses it: 0.484375 gives 0.25 there; tiles gives
0.5, as Triton's CUDA conversion does).  Where Triton's interpreter is not self-consistent tiles
rounds subnormal results to nearest (Triton's interpreter truncates them, and turns some inputs far
below the smallest subnormal into nonzero bytes) and saturates: past 1.875, +-inf and NaN give
+-1.875 (Triton's interpreter keeps the mantissa of an overflowing exponent: 2.0 -> 1.0, 3.0 -> 1.5).

Only the interpreter runs the type: OpenCL, CUDA and ROCm refuse it (``UnsupportedError``)."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles import UnsupportedError

REFUSED = "dtype float8e4b15 is not supported on"
pytestmark = [pytest.mark.unsupported_on(name, REFUSED) for name in ("opencl", "cuda", "cuda-ptx", "cuda-sim")]


def _decode_table() -> np.ndarray:
    """The value of every byte, from the layout: (-1)**s * 2**(e - 15) * (1 + m/8), or 2**-14 * m/8."""
    values = []
    for byte in range(256):
        s, e, m = byte >> 7, (byte >> 3) & 0xF, byte & 7
        mag = 2.0 ** -14 * (m / 8) if e == 0 else 2.0 ** (e - 15) * (1 + m / 8)
        values.append(-mag if s else mag)
    return np.array(values)


TABLE = _decode_table()
MAGNITUDES = TABLE[:128]  # ascending from +0 to 1.875


def encode(x: np.ndarray, rounding: str = "rtne") -> np.ndarray:
    """The byte each value rounds to, by search over the 128 magnitudes: to nearest with ties away
    from zero ("rtne", Triton's rounding of this type), or toward zero ("rtz"); past the largest,
    infinities and NaN saturate to +-1.875, keeping the sign bit."""
    out = []
    for v in np.asarray(x, np.float64).ravel():
        sign = 0x80 if np.signbit(v) else 0
        mag = abs(v)
        if not mag <= MAGNITUDES[-1]:
            out.append(sign | 0x7F)
            continue
        below = int(np.searchsorted(MAGNITUDES, mag, side="right")) - 1
        code = below
        if rounding == "rtne" and below < 127 and mag - MAGNITUDES[below] >= MAGNITUDES[below + 1] - mag:
            code = below + 1
        out.append(sign | code)
    return np.array(out, np.uint8)


@pytest.mark.backends("interpreter")
def test_the_reference_agrees_with_triton_spot_values():
    """Bytes Triton 3.9's interpreter gives (and its CUDA conversion: ties away from zero)."""
    assert TABLE[0x7F] == 1.875 and TABLE[0x78] == 1.0 and TABLE[0x08] == 2.0 ** -14
    assert TABLE[0x01] == 2.0 ** -17 and TABLE[0x80] == 0.0 and np.signbit(TABLE[0x80])
    spots = {1.0625: (0x79, 0x78), 1.1875: (0x7A, 0x79), -1.0625: (0xF9, 0xF8), 0.300048828125: (0x6A, 0x69),
             1.8125: (0x7F, 0x7E), 1.875: (0x7F, 0x7F), 0.96875: (0x78, 0x77), 2.0 ** -17: (0x01, 0x01),
             -0.0: (0x80, 0x80), 1.9: (0x7F, 0x7F)}
    for v, (nearest, toward_zero) in spots.items():
        assert encode(np.array([v]))[0] == nearest, v
        assert encode(np.array([v]), "rtz")[0] == toward_zero, v


@tiles.jit
def widen_kernel(bits_ptr, f32_ptr, f16_ptr, bf16_ptr, f64_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(bits_ptr + offs, mask=mask)
    tl.store(f32_ptr + offs, v.to(tl.float32), mask=mask)
    tl.store(f16_ptr + offs, v.to(tl.float16), mask=mask)
    tl.store(bf16_ptr + offs, v.to(tl.bfloat16), mask=mask)
    tl.store(f64_ptr + offs, v.to(tl.float64), mask=mask)


@pytest.mark.parametrize("n, block", [(256, 256), (256, 64), (201, 128)])
def test_every_byte_widens_exactly(n, block):
    import ml_dtypes
    bits = np.arange(n, dtype=np.uint8)
    f32, f16, f64 = np.full(n, 7, np.float32), np.full(n, 7, np.float16), np.full(n, 7.0)
    bf16 = np.full(n, 7, ml_dtypes.bfloat16)
    widen_kernel[(tiles.cdiv(n, block),)](tiles.reinterpret(bits, tl.float8e4b15), f32, f16, bf16, f64, n,
                                          BLOCK=block)
    want = TABLE[:n]
    for got in (f32, f16, bf16, f64):
        np.testing.assert_array_equal(got.astype(np.float64), want)
        assert np.array_equal(np.signbit(got.astype(np.float64)), np.signbit(want))  # -0.0 is 0x80


@tiles.jit
def narrow_kernel(x_ptr, bits_ptr, back_ptr, n, ROUNDING: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask).to(tl.float8e4b15, fp_downcast_rounding=ROUNDING)
    tl.store(bits_ptr + offs, v.to(tl.uint8, bitcast=True), mask=mask)
    tl.store(back_ptr + offs, v, mask=mask)  # a float32 pointer: the store widens


# largest finite and past it, the smallest subnormal and half of it, ties, -0.0, overflow,
# underflow, infinities, NaN
EDGES = [0.0, -0.0, 1.0, 1.0625, -1.0625, 1.1875, 1.75, 1.8125, 1.84, 1.875, 1.9, 1.9375, 2.0, 3.0, 4.0,
         1e30, -1e30, np.inf, -np.inf, np.nan, -np.nan, 2.0 ** -14, 2.0 ** -15, 2.0 ** -17, -(2.0 ** -17),
         2.0 ** -18, 1.5 * 2.0 ** -18, 0.75 * 2.0 ** -17, 2.0 ** -19, 1e-30, -1e-30, 0.484375, 0.96875,
         1.9375 * 2.0 ** -14]


@pytest.mark.parametrize("rounding", [None, "rtne", "rtz"])
@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16", "float64"])
def test_cast_to_e4b15_rounds_and_saturates(rng, src, rounding):
    import ml_dtypes
    dtype = ml_dtypes.bfloat16 if src == "bfloat16" else np.dtype(src)
    with np.errstate(over="ignore"):
        x = np.concatenate([np.array(EDGES), rng.standard_normal(300), rng.standard_normal(200) * 2.0 ** -12,
                            rng.uniform(-3, 3, 200)]).astype(dtype)
    n = x.size
    bits, back = np.zeros(n, np.uint8), np.zeros(n, np.float32)
    narrow_kernel[(tiles.cdiv(n, 128),)](x, bits, back, n, ROUNDING=rounding, BLOCK=128)
    want = encode(x.astype(np.float64), "rtz" if rounding == "rtz" else "rtne")
    bad = np.nonzero(bits != want)[0]
    assert bad.size == 0, [(float(x[i]), hex(bits[i]), hex(want[i])) for i in bad[:8]]
    np.testing.assert_array_equal(back, TABLE[want].astype(np.float32))


def test_edge_bytes():
    x = np.array([1.875, 1.9, 2.0, np.inf, -np.inf, np.nan, -0.0, 2.0 ** -17, 2.0 ** -18, 2.0 ** -19, 1e-30],
                 np.float32)
    bits, back = np.zeros(x.size, np.uint8), np.zeros(x.size, np.float32)
    narrow_kernel[(1,)](x, bits, back, x.size, ROUNDING=None, BLOCK=16)
    assert bits.tolist() == [0x7F, 0x7F, 0x7F, 0x7F, 0xFF, 0x7F, 0x80, 0x01, 0x01, 0x00, 0x00]
    narrow_kernel[(1,)](x, bits, back, x.size, ROUNDING="rtz", BLOCK=16)
    assert bits.tolist() == [0x7F, 0x7F, 0x7F, 0x7F, 0xFF, 0x7F, 0x80, 0x01, 0x00, 0x00, 0x00]


@tiles.jit
def ints_kernel(i_ptr, bits_ptr, f_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.load(i_ptr + offs).to(tl.float8e4b15)  # int -> e4b15: the value, rounded
    tl.store(bits_ptr + offs, v.to(tl.int8, bitcast=True))
    f = tl.load(f_ptr + offs)
    tl.store(out_ptr + offs, f.to(tl.int32))  # e4b15 -> int: truncates toward zero


def test_int_conversions_and_bitcast_to_int8():
    i = np.array([0, 1, -1, 2, 5, -100, 1, 0], np.int32)
    f = tiles.reinterpret(np.array([0x78, 0x7F, 0xFF, 0x77, 0x80, 0x00, 0x01, 0xF8], np.uint8), tl.float8e4b15)
    bits, out = np.zeros(8, np.int8), np.zeros(8, np.int32)
    ints_kernel[(1,)](i, bits, f, out, BLOCK=8)
    assert bits.view(np.uint8).tolist() == encode(i.astype(np.float64)).tolist()
    assert out.tolist() == [1, 1, -1, 0, 0, 0, 0, -1]


@tiles.jit
def unary_kernel(x_ptr, abs_ptr, neg_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(abs_ptr + offs, tl.abs(x))
    tl.store(neg_ptr + offs, -x)


def test_abs_and_neg_every_byte():
    """abs clears the sign bit (Triton: ``x & 0x7f``), negation flips it; -0.0 included."""
    bits = np.arange(256, dtype=np.uint8)
    a, m = np.zeros(256, np.uint8), np.zeros(256, np.uint8)
    unary_kernel[(1,)](tiles.reinterpret(bits, tl.float8e4b15), tiles.reinterpret(a, tl.float8e4b15),
                       tiles.reinterpret(m, tl.float8e4b15), BLOCK=256)
    assert a.tolist() == [b & 0x7F for b in range(256)]
    assert m.tolist() == [b ^ 0x80 for b in range(256)]


@tiles.jit
def compare_arith_kernel(x_ptr, y_ptr, cmp_ptr, sum_ptr, prod_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    c = (x == y).to(tl.int8) | ((x < y).to(tl.int8) << 1) | ((x >= y).to(tl.int8) << 2) | ((x != y).to(tl.int8) << 3)
    tl.store(cmp_ptr + offs, c)
    tl.store(sum_ptr + offs, x + y)  # computed in float32, rounded back to e4b15 once
    tl.store(prod_ptr + offs, x * y)


def test_comparisons_and_arithmetic(rng):
    xb = np.concatenate([np.arange(256), rng.integers(0, 256, 256)]).astype(np.uint8)
    yb = np.concatenate([rng.integers(0, 256, 256), np.arange(256) ^ 0x80]).astype(np.uint8)
    n = xb.size
    c = np.zeros(n, np.int8)
    s, p = np.zeros(n, np.uint8), np.zeros(n, np.uint8)
    e4 = tl.float8e4b15
    compare_arith_kernel[(1,)](tiles.reinterpret(xb, e4), tiles.reinterpret(yb, e4), c, tiles.reinterpret(s, e4),
                               tiles.reinterpret(p, e4), BLOCK=n)
    x, y = TABLE[xb], TABLE[yb]
    want = (x == y) | (x < y) << 1 | (x >= y) << 2 | (x != y) << 3
    assert c.tolist() == want.astype(np.int8).tolist()  # +0 == -0 (0x00 and 0x80)
    assert s.tolist() == encode((x.astype(np.float32) + y.astype(np.float32)).astype(np.float64)).tolist()
    assert p.tolist() == encode((x.astype(np.float32) * y.astype(np.float32)).astype(np.float64)).tolist()


@tiles.jit
def movement_kernel(x_ptr, t_ptr, r_ptr, w_ptr, j_ptr, m_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    t = tl.permute(x, (1, 0))
    tl.store(t_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], t)
    tl.store(r_ptr + tl.arange(0, M * N), tl.reshape(tl.trans(t), (M * N,)))
    tl.store(w_ptr + rows * N + cols, tl.where(cols % 2 == 0, x, tl.zeros_like(x)))
    j = tl.join(x, -x)  # (M, N, 2)
    tl.store(j_ptr + (rows * N + cols)[:, :, None] * 2 + tl.arange(0, 2)[None, None, :], j)
    # a masked load with and without `other`
    offs = tl.arange(0, M * N)
    a = tl.load(x_ptr + offs, mask=offs < 5)
    b = tl.load(x_ptr + offs, mask=offs < 3, other=1.5)
    tl.store(m_ptr + offs, a)
    tl.store(m_ptr + M * N + offs, b)


def test_data_movement_keeps_bytes(rng):
    M, N = 4, 8
    xb = rng.integers(0, 256, M * N).astype(np.uint8)
    e4 = tl.float8e4b15
    t, r, w, j, m = (np.zeros(k, np.uint8) for k in (M * N, M * N, M * N, 2 * M * N, 2 * M * N))
    movement_kernel[(1,)](*(tiles.reinterpret(a, e4) for a in (xb, t, r, w, j, m)), M=M, N=N)
    x = xb.reshape(M, N)
    assert t.reshape(N, M).tolist() == x.T.tolist()
    assert r.tolist() == xb.tolist()
    assert w.reshape(M, N).tolist() == np.where(np.arange(N) % 2 == 0, x, 0).tolist()
    assert j.reshape(M, N, 2).tolist() == np.stack([x, x ^ 0x80], -1).tolist()
    assert m[:M * N].tolist() == [*xb[:5], *[0] * (M * N - 5)]
    assert m[M * N:].tolist() == [*xb[:3], *[0x7C] * (M * N - 3)]  # 1.5 is 0x7c


@tiles.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))


def test_dot_upcasts_the_operands(rng):
    """As Triton, float8e4b15 operands are upcast (exactly) to float16 and accumulate in float32."""
    M, N, K = 16, 16, 32
    ab, bb = rng.integers(0, 256, (M, K)).astype(np.uint8), rng.integers(0, 256, (K, N)).astype(np.uint8)
    c = np.zeros((M, N), np.float32)
    dot_kernel[(1,)](tiles.reinterpret(ab, tl.float8e4b15), tiles.reinterpret(bb, tl.float8e4b15), c, M=M, N=N, K=K)
    np.testing.assert_allclose(c, TABLE[ab] @ TABLE[bb], rtol=1e-6, atol=1e-9)


@tiles.jit
def reduce_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    tl.store(out_ptr, tl.max(x, axis=0))
    tl.store(out_ptr + 1, tl.min(x, axis=0))
    tl.store(out_ptr + 2, tl.sum(x, axis=0))
    tl.store(out_ptr + 3, tl.full((), 0.3, tl.float8e4b15))


def test_reductions_and_constants(rng):
    xb = rng.integers(0, 256, 64).astype(np.uint8)
    out = np.zeros(4, np.uint8)
    reduce_kernel[(1,)](tiles.reinterpret(xb, tl.float8e4b15), tiles.reinterpret(out, tl.float8e4b15), BLOCK=64)
    x = TABLE[xb]
    assert TABLE[out[0]] == x.max() and TABLE[out[1]] == x.min()
    assert out[2] == encode(np.array([x.sum()]))[0]
    assert out[3] == encode(np.array([np.float32(0.3)]))[0] == 0x6A


@pytest.mark.backends("interpreter")
def test_dtype_queries_and_spellings():
    e4 = tl.float8e4b15
    assert tl.dtype("fp8e4b15") is e4 and tl.dtype("float8e4b15") is e4
    assert e4.is_fp8e4b15() and e4.is_fp8() and e4.is_floating() and not tl.float8e4nv.is_fp8e4b15()
    assert (e4.exponent_bias, e4.fp_mantissa_width, e4.primitive_bitwidth) == (15, 3, 8)
    assert (e4.min(), e4.max()) == (-1.875, 1.875)
    compiled = narrow_kernel.compile(signature={"x_ptr": "*fp32", "bits_ptr": "*u8", "back_ptr": "*fp8e4b15",
                                                "n": "i32"}, constexprs={"ROUNDING": None, "BLOCK": 16},
                                     backend="interpreter")
    assert "ptr<float8e4b15>" in compiled.asm["ir"]


@pytest.mark.backends("interpreter")
def test_reinterpret_numpy_is_a_byte_view_numpy_cannot_compute_with():
    bits = np.arange(4, dtype=np.uint8)
    view = tiles.reinterpret(bits, tl.float8e4b15)
    assert view.dtype.itemsize == 1 and np.shares_memory(view, bits)
    assert view.view(np.uint8).tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError):
        view + view  # never read as numbers by mistake
    with pytest.raises(TypeError, match="one byte"):
        tiles.reinterpret(np.zeros(2, np.float32), tl.float8e4b15)


def test_reinterpret_torch_gives_a_wrapper():
    torch = pytest.importorskip("torch")
    from tiles.runtime.jit import TensorWrapper
    src = torch.arange(-128, 128, dtype=torch.int8)
    w = tiles.reinterpret(src, tl.float8e4b15)
    assert isinstance(w, TensorWrapper) and w.base is src and w.dtype is tl.float8e4b15
    assert w.data_ptr() == src.data_ptr() and w.stride() == src.stride() and w.numel() == 256
    assert tiles.reinterpret(w, torch.int8) is not None
    f32 = torch.zeros(256, dtype=torch.float32)
    narrow = torch.zeros(256, dtype=torch.uint8)
    roundtrip = tiles.reinterpret(narrow, tl.float8e4b15)
    copy_kernel[(1,)](w, f32, roundtrip, BLOCK=256)
    np.testing.assert_array_equal(f32.numpy().astype(np.float64), TABLE[src.numpy().view(np.uint8)])
    assert narrow.tolist() == src.view(torch.uint8).tolist()


@tiles.jit
def copy_kernel(x_ptr, f32_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(f32_ptr + offs, x.to(tl.float32))
    tl.store(y_ptr + offs, x)


@pytest.mark.backends("interpreter")
@pytest.mark.parametrize("target", ["cuda-ptx", "opencl", "rocm"])
def test_compiled_backends_refuse_it(target):
    """The GPU lowerings have no float8e4b15 conversions: each refuses the type by name, with the
    kernel line, instead of compiling something wrong (a compile, no device needed)."""
    from tiles.backends import registry
    try:
        backend = registry.get(target)
    except Exception as e:  # noqa: BLE001  (not registered here)
        pytest.skip(f"{target}: {e}")
    traced = copy_kernel.compile(signature={"x_ptr": "*fp8e4b15", "f32_ptr": "*fp32", "y_ptr": "*fp8e4b15"},
                                 constexprs={"BLOCK": 16}, backend="interpreter")
    reasons = backend.unsupported(traced.ir)
    assert reasons and all("float8e4b15" in r for r in reasons), reasons
    assert "test_fp8e4b15.py" in reasons[0]
    with pytest.raises(UnsupportedError, match=REFUSED):
        backend.compile(traced.ir, traced.options)


@tiles.jit
def store_kernel(out, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    v = tl.full((BLOCK,), 1.5, tl.float8e4b15)
    tl.device_print("v", v)
    tl.device_print("bits", v, hex=True)
    tl.store(out + offs, v)


@pytest.mark.backends("interpreter")
def test_prints_and_watchpoints_show_values(monkeypatch, capsys):
    from tiles.backends import stepping
    out = np.zeros(4, np.uint8)
    monkeypatch.setenv("TILES_WATCH", "out[1]")
    monkeypatch.setenv("TILES_WATCH_BREAK", "0")
    store_kernel[(1,)](tiles.reinterpret(out, tl.float8e4b15), BLOCK=4, backend="step")
    assert out.tolist() == [0x7C] * 4
    assert [(h.old, h.new) for h in stepping.LAST_HITS] == [(0.0, 1.5)]
    printed = capsys.readouterr().out
    assert "v[1.5 1.5 1.5 1.5]" in printed and "bits[0x7c 0x7c 0x7c 0x7c]" in printed


SEEN: list = []


def record(*seen):
    SEEN.append(seen)


@tiles.jit
def host_data_kernel(x_ptr, out, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    first = tl.load(x_ptr)
    record(x.numpy().tolist(), float(first), bool(first), repr(x))
    if first:  # -0.0 is false, as a number
        tl.store(out, 1)


@pytest.mark.backends("interpreter")
def test_stepping_mode_sees_values():
    """Stepping mode's host view of a float8e4b15 tile (numpy(), float(), truth, repr) is its values."""
    SEEN.clear()
    xb = np.array([0x80, 0x78, 0xFF, 0x01], np.uint8)
    out = np.zeros(1, np.int32)
    host_data_kernel[(1,)](tiles.reinterpret(xb, tl.float8e4b15), out, BLOCK=4, backend="step")
    (values, first, truth, text), = SEEN
    assert values == [-0.0, 1.0, -1.875, 2.0 ** -17] and first == 0.0 and truth is False and out[0] == 0
    assert "1.875" in text and "float8e4b15" in text
