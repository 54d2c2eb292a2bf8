"""Code-generated kernels (FlagGems' pointwise templates, Liger's multi-tensor helpers) unroll with
``tl.static_range`` and keep tiles in Python lists: a negative-step static range, lists appended to
and indexed with static indices, a tuple of pointers indexed inside the unrolled loop, a
``tl.constexpr`` list length from ``len()``, and a reduction tree over the list built by static
loops and constexpr ``if``s."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _weighted_sum(ptrs, out_ptr, rev_ptr, n, WEIGHTS: tl.constexpr, LEVELS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    count: tl.constexpr = len(WEIGHTS)
    tiles_ = []
    for i in tl.static_range(count):
        tiles_.append(tl.load(ptrs[i] + offs, mask=mask, other=0.0) * WEIGHTS[i])
    for _ in tl.static_range(LEVELS):
        if len(tiles_) > 1:
            pairs = []
            for j in tl.static_range(0, len(tiles_) - 1, 2):
                pairs.append(tiles_[j] + tiles_[j + 1])
            if len(tiles_) % 2 == 1:
                pairs.append(tiles_[len(tiles_) - 1])
            tiles_ = pairs
    tl.store(out_ptr + offs, tiles_[0], mask=mask)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in tl.static_range(count - 1, -1, -2):
        acc = acc * 10.0 + tl.load(ptrs[i] + offs, mask=mask, other=0.0)
    tl.store(rev_ptr + offs, acc, mask=mask)


def check(rng):
    n = 150
    xs = tuple(rng.standard_normal(n).astype(np.float32) for _ in range(5))
    weights = (0.5, -1.0, 2.0, 0.25, 3.0)
    out = np.empty(n, np.float32)
    rev = np.empty(n, np.float32)
    _weighted_sum[(tiles.cdiv(n, 64),)](xs, out, rev, n, WEIGHTS=weights, LEVELS=3, BLOCK=64)
    t = [x * np.float32(w) for x, w in zip(xs, weights)]
    close(out, ((t[0] + t[1]) + (t[2] + t[3])) + t[4], rtol=1e-6, atol=1e-6)
    close(rev, (xs[4] * 10 + xs[2]) * 10 + xs[0], rtol=1e-5, atol=1e-5)
