"""vLLM / SGLang style top-p (nucleus) filtering without a sort: per row, softmax with a
temperature, then a data-dependent ``while`` loop bisects the probability threshold whose kept
mass first reaches ``top_p`` (the condition mixes an iteration counter and a tensor width with
``and``), then the kept probabilities are renormalised; rows with ``top_p >= 1`` return early
through a runtime ``if`` on a loaded per-row value."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _top_p(logits_ptr, top_p_ptr, out_ptr, n, temperature, BLOCK: tl.constexpr, MAX_ITERS: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    logits = tl.load(logits_ptr + row * n + cols, mask=mask, other=-float("inf")) / temperature
    e = tl.exp(logits - tl.max(logits, 0))
    p = e / tl.sum(e, 0)
    top_p = tl.load(top_p_ptr + row)
    if top_p >= 1.0:
        tl.store(out_ptr + row * n + cols, p, mask=mask)
        return
    lo = 0.0
    hi = tl.max(p, 0) * 1.0001
    it = 0
    while it < MAX_ITERS and hi - lo > 1e-9:
        mid = (lo + hi) * 0.5
        mass = tl.sum(tl.where(p >= mid, p, 0.0), 0)
        if mass >= top_p:
            lo = mid
        else:
            hi = mid
        it += 1
    kept = tl.where(p >= lo, p, 0.0)
    tl.store(out_ptr + row * n + cols, kept / tl.sum(kept, 0), mask=mask)


def check(rng):
    rows, n, temperature = 6, 50, 0.7
    logits = (rng.standard_normal((rows, n)) * 2).astype(np.float32)
    top_p = np.array([0.9, 0.5, 1.0, 0.05, 0.99, 0.3], np.float32)
    out = np.full((rows, n), np.nan, np.float32)
    _top_p[(rows,)](logits, top_p, out, n, temperature, BLOCK=64, MAX_ITERS=60)
    z = logits.astype(np.float64) / np.float32(temperature)
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    for r in range(rows):
        if top_p[r] >= 1:
            close(out[r], p[r], rtol=1e-5, atol=1e-7)
            continue
        order = np.argsort(-p[r])
        count = int(np.searchsorted(np.cumsum(p[r, order]), top_p[r])) + 1
        kept = np.zeros(n)
        kept[order[:count]] = p[r, order[:count]]
        close(out[r], kept / kept.sum(), rtol=1e-5, atol=1e-7)
