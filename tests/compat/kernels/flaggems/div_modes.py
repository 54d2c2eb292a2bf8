"""FlagGems style division modes (``torch.div(rounding_mode=...)``, ``floor_divide``, ``remainder``)
on tensors whose signs differ: Triton's integer ``//`` and ``%`` truncate (C's ``sdiv``/``srem``),
its float ``%`` is C's ``fmod`` (``frem``: the sign of the dividend), and the same operators on two
``tl.constexpr`` ints are Python's (floor).  The float floor division is built from
``libdevice.fmod``/``div_rn``/``floor`` with the sign of a zero quotient taken from ``copysign``;
``div_rz``/``div_rd`` give the rounding-mode quotients and ``trunc`` the truncating one.  Inputs
include int32 min/max, ±inf, NaN and -0.0."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra.cuda import libdevice

NEG: tl.constexpr = tl.constexpr(-7)


@tiles.jit
def _int_floor_div(x, y):
    q = x // y
    r = x % y
    return tl.where((r != 0) & ((x < 0) ^ (y < 0)), q - 1, q)


@tiles.jit
def _int_remainder(x, y):
    r = x % y
    return tl.where((r != 0) & ((x < 0) ^ (y < 0)), r + y, r)


@tiles.jit
def _float_floor_div(x, y):
    rem = libdevice.fmod(x, y)
    inexact = rem != 0.0
    signs_differ = (x < 0) ^ (y < 0)
    q = libdevice.div_rn(x - rem, y)
    q = tl.where(inexact & signs_differ, q - 1.0, q)
    fq = tl.floor(q)
    fq = tl.where(q - fq > 0.5, fq + 1.0, fq)
    fq = tl.where(q == 0.0, libdevice.copysign(0.0, x / y), fq)
    return tl.where(y == 0.0, x / y, fq)


@tiles.jit
def int_div_kernel(x_ptr, y_ptr, out_ptr, n, c, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1)
    y = tl.load(y_ptr + offs, mask=mask, other=1)
    tl.store(out_ptr + 0 * n + offs, x // y, mask=mask)
    tl.store(out_ptr + 1 * n + offs, x % y, mask=mask)
    tl.store(out_ptr + 2 * n + offs, _int_floor_div(x, y), mask=mask)
    tl.store(out_ptr + 3 * n + offs, _int_remainder(x, y), mask=mask)
    tl.store(out_ptr + 4 * n + offs, x // NEG + x % NEG, mask=mask)
    if tl.program_id(0) == 0:
        # runtime scalar c (= -7): C semantics; constexpr NEG: Python's
        scalars = tl.where(tl.arange(0, 4) == 0, c // 2, 0) + tl.where(tl.arange(0, 4) == 1, c % 2, 0)
        scalars += tl.where(tl.arange(0, 4) == 2, NEG // 2, 0) + tl.where(tl.arange(0, 4) == 3, NEG % 2, 0)
        tl.store(out_ptr + 5 * n + tl.arange(0, 4), scalars)


@tiles.jit
def float_div_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.load(y_ptr + offs, mask=mask, other=1.0)
    results = (x / y, libdevice.trunc(libdevice.div_rz(x, y)), _float_floor_div(x, y), x % y,
               libdevice.div_rz(x, y), libdevice.div_rd(x, y))
    for i in tl.static_range(len(results)):
        tl.store(out_ptr + i * n + offs, results[i], mask=mask)


def _c_div(x, y):
    q = np.abs(x.astype(np.int64)) // np.abs(y.astype(np.int64)) * np.sign(x.astype(np.int64) * y)
    return q.astype(np.int32), (x.astype(np.int64) - q * y).astype(np.int32)


def _round_toward(v, direction):
    """float64 quotients rounded to float32 toward zero (``"z"``) or toward -inf (``"d"``)."""
    f = v.astype(np.float32)
    with np.errstate(invalid="ignore"):
        too_far = np.abs(f.astype(np.float64)) > np.abs(v) if direction == "z" else f.astype(np.float64) > v
        fixed = np.nextafter(f, np.float32(0) if direction == "z" else np.float32(-np.inf))
    return np.where(too_far & np.isfinite(v), fixed, f)


def check(rng):
    n = 1000
    x = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    x[: n // 2] //= rng.integers(1, 2**20, n // 2).astype(np.int32)
    y = rng.integers(1, 50, n).astype(np.int32) * rng.choice(np.array([-1, 1], np.int32), n)
    x[:6] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, -7, 7, -1, 0]
    y[:6] = [7, -7, 2, -2, 3, -3]
    out = np.empty(5 * n + 4, np.int32)
    int_div_kernel[(tiles.cdiv(n, 256),)](x, y, out, n, -7, BLOCK=256)
    tq, tr = _c_div(x, y)
    close(out[:n], tq)
    close(out[n:2 * n], tr)
    close(out[2 * n:3 * n], np.floor_divide(x, y))
    close(out[3 * n:4 * n], np.remainder(x, y))
    nq, nr = _c_div(x, np.full(n, -7, np.int32))
    close(out[4 * n:5 * n], nq + nr)
    close(out[5 * n:], np.array([-3, -1, -4, 1], np.int32))

    xf = (rng.standard_normal(n) * 20).astype(np.float32)
    yf = (rng.standard_normal(n) * 3).astype(np.float32)
    xf[:10] = [np.inf, -np.inf, np.nan, -0.0, 0.0, 5.0, -5.0, 7.5, -0.0, 1e-30]
    yf[:10] = [2.0, 3.0, 1.0, 3.0, -3.0, 0.0, np.inf, -2.5, -4.0, -1e30]
    outf = np.empty(6 * n, np.float32)
    float_div_kernel[(tiles.cdiv(n, 128),)](xf, yf, outf, n, BLOCK=128)
    r = outf.reshape(6, n)
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = xf.astype(np.float64) / yf.astype(np.float64)
        close(r[0], xf / yf, rtol=1e-6, atol=0)
        close(r[1], np.trunc(xf / yf), rtol=1e-6, atol=0)
        floor_ref = np.floor_divide(xf, yf)
        close(r[2], floor_ref, rtol=0, atol=0)
        ok = ~np.isnan(floor_ref)
        assert (np.signbit(r[2][ok]) == np.signbit(floor_ref[ok])).all(), "floor division's sign of zero"
        close(r[3], np.fmod(xf, yf), rtol=0, atol=0)  # exact, as C's fmod is
        fm = np.fmod(xf, yf)
        assert (np.signbit(r[3]) == np.signbit(fm))[~np.isnan(fm)].all(), "fmod keeps the sign of a zero dividend"
    close(r[4], _round_toward(exact, "z"), rtol=0, atol=0)
    close(r[5], _round_toward(exact, "d"), rtol=0, atol=0)
