"""FlagGems style pointwise epilogues where rounding and NaN policy are the point:
``addcmul`` as ``tl.fma(t1 * value, t2, x)`` (one rounding: checked on operands where a separate
multiply and add give a different float32), ``addcdiv`` with ``tl.div_rn`` (IEEE division, not
the approximate ``/``), a norm with ``tl.sqrt_rn``, ``clamp`` through
``tl.clamp(x, lo, hi, propagate_nan=tl.PropagateNan.ALL)`` and through
``tl.minimum(tl.maximum(x, lo), hi)`` whose default policy returns the number when one operand is
NaN, ``tl.maximum(..., propagate_nan=tl.PropagateNan.ALL)`` (torch.maximum), and
``libdevice.fmax``/``fmin``.  Inputs carry NaN and ±inf."""

from fractions import Fraction

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra import libdevice


@tiles.jit
def addcmul_clamp_kernel(x_ptr, t1_ptr, t2_ptr, lo_ptr, out_ptr, n, value, hi, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    t1 = tl.load(t1_ptr + offs, mask=mask, other=0.0)
    t2 = tl.load(t2_ptr + offs, mask=mask, other=1.0)
    lo = tl.load(lo_ptr + offs, mask=mask, other=0.0)
    addcmul = tl.fma(t1 * value, t2, x)
    addcdiv = x + value * tl.div_rn(t1, t2)
    norm = tl.sqrt_rn(tl.fma(t1, t1, t2 * t2))
    clamped_all = tl.clamp(x, lo, hi, propagate_nan=tl.PropagateNan.ALL)
    clamped_none = tl.minimum(tl.maximum(x, lo), hi)
    max_all = tl.maximum(x, t1, propagate_nan=tl.PropagateNan.ALL)
    results = (addcmul, addcdiv, norm, clamped_all, clamped_none, max_all, libdevice.fmax(x, t1),
               libdevice.fmin(x, t1))
    for i in tl.static_range(len(results)):
        tl.store(out_ptr + i * n + offs, results[i], mask=mask)


def _fma_reference(a, b, c):
    """float32 a * b + c rounded once (exact rational arithmetic; float64 would round twice)."""
    out = np.empty(len(a), np.float32)
    for i, (p, q, r) in enumerate(zip(a.tolist(), b.tolist(), c.tolist())):
        if not all(np.isfinite([p, q, r])):
            out[i] = np.float32(np.float64(p) * q + r)
            continue
        exact = Fraction(p) * Fraction(q) + Fraction(r)
        f = np.float32(float(exact))
        candidates = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
        errors = [abs(Fraction(float(v)) - exact) for v in candidates]
        best = min(errors)
        ties = [v for v, err in zip(candidates, errors) if err == best]
        out[i] = min(ties, key=lambda v: int(v.view(np.int32)) & 1)
    return out


def check(rng):
    n = 777
    f32 = np.float32
    x = rng.standard_normal(n).astype(f32)
    t1 = rng.standard_normal(n).astype(f32)
    t2 = (rng.standard_normal(n) + np.where(rng.random(n) < 0.5, 2.0, -2.0)).astype(f32)
    lo = (rng.standard_normal(n) * 0.3 - 0.5).astype(f32)
    hi, value = 0.75, 1.0
    # fma cases: (1 + 2^-12)^2 rounds to 1 + 2^-11 in float32, so a separate multiply loses 2^-24
    e = f32(1 + 2.0 ** -12)
    t1[:4], t2[:4], x[:4] = e, e, [-(1 + 2.0 ** -11), -1.0, -(1 + 2.0 ** -11) * 2, 1e-30]
    x[4:12] = [np.nan, np.inf, -np.inf, 0.5, np.nan, 2.0, -3.0, np.nan]
    t1[4:12] = [1.0, np.nan, 2.0, np.nan, np.nan, -np.inf, np.inf, 0.25]
    out = np.empty(8 * n, f32)
    addcmul_clamp_kernel[(tiles.cdiv(n, 128),)](x, t1, t2, lo, out, n, value, hi, BLOCK=128)
    r = out.reshape(8, n)
    with np.errstate(invalid="ignore", over="ignore"):
        close(r[0], _fma_reference(t1 * f32(value), t2, x), rtol=0, atol=0)
        assert r[0][0] == f32(2.0 ** -24) and (t1[0] * t2[0] + x[0]) == 0  # the separate product would lose it
        close(r[1], x + f32(value) * (t1 / t2), rtol=0, atol=0)
        close(r[2], np.sqrt(_fma_reference(t1, t1, t2 * t2)), rtol=0, atol=0)
        close(r[3], np.where(np.isnan(x), np.nan, np.minimum(np.maximum(x, lo), f32(hi))), rtol=0, atol=0)
        close(r[4], np.fmin(np.fmax(x, lo), f32(hi)), rtol=0, atol=0)
        close(r[5], np.maximum(x, t1), rtol=0, atol=0)
        close(r[6], np.fmax(x, t1), rtol=0, atol=0)
        close(r[7], np.fmin(x, t1), rtol=0, atol=0)
    assert np.isnan(r[3][4]) and r[4][4] == lo[4] and np.isnan(r[5][4]) and r[6][4] == 1.0
