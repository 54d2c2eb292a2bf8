"""FlagGems style ``torch.histc``: each program bins its slice of the input into ``BINS`` buckets
(float ``floor`` of the scaled value, the top edge folded into the last bin, out-of-range and
NaN values masked out) with ``tl.histogram(..., mask=)``, then adds its partial histogram to the
global one with a vector ``tl.atomic_add``; a second kernel, ``bincount`` with weights, adds
weights one by one with a scalar-indexed atomic per element."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _histc(x_ptr, hist_ptr, n, lo, hi, BINS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_range = offs < n
    x = tl.load(x_ptr + offs, mask=in_range, other=float("nan"))
    valid = in_range & (x >= lo) & (x <= hi)
    pos = tl.floor((x - lo) * (BINS / (hi - lo)))
    b = tl.where(valid, tl.minimum(pos, BINS - 1), 0).to(tl.int32)
    counts = tl.histogram(b, BINS, mask=valid)
    tl.atomic_add(hist_ptr + tl.arange(0, BINS), counts)


@tiles.jit
def _bincount_weighted(idx_ptr, w_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    tl.atomic_add(out_ptr + idx, w, mask=mask)


def check(rng):
    n, bins, lo, hi = 1000, 16, -2.0, 3.0
    x = (rng.standard_normal(n) * 2).astype(np.float32)
    x[:5] = [lo, hi, np.nan, np.inf, -np.inf]
    x[5:9] = [np.nextafter(np.float32(hi), np.float32(0)), -2.0, 3.0, 0.5]
    hist = np.zeros(bins, np.int32)
    _histc[(tiles.cdiv(n, 128),)](x, hist, n, lo, hi, BINS=bins, BLOCK=128)
    finite = x[np.isfinite(x)]
    expected, _ = np.histogram(finite, bins=bins, range=(lo, hi))
    close(hist, expected.astype(np.int32))
    idx = rng.integers(0, 11, 300).astype(np.int32)
    w = rng.uniform(0, 1, 300).astype(np.float32)
    out = np.zeros(11, np.float32)
    _bincount_weighted[(tiles.cdiv(300, 64),)](idx, w, out, 300, BLOCK=64)
    close(out, np.bincount(idx, weights=w, minlength=11), rtol=1e-5, atol=1e-5)
