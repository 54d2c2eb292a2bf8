"""FlagGems style ``nonzero`` / masked_select by stream compaction: each block counts its true
lanes, reserves room in the output with one scalar ``tl.atomic_add`` on a counter (which returns
the old value: the block's base), and scatters each selected element to ``base + exclusive
prefix`` from ``tl.cumsum`` of the int32 mask; blocks land in any order, so the host sorts."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _compact(x_ptr, threshold, idx_ptr, val_ptr, counter_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    keep = (offs < n) & (x > threshold)
    flags = keep.to(tl.int32)
    inclusive = tl.cumsum(flags, axis=0)
    total = tl.sum(flags, axis=0)
    base = tl.atomic_add(counter_ptr, total)
    pos = base + inclusive - flags
    tl.store(idx_ptr + pos, offs.to(tl.int64), mask=keep)
    tl.store(val_ptr + pos, x, mask=keep)


def check(rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    x[-7:] = 5.0
    counter = np.zeros(1, np.int32)
    idx = np.full(n, -1, np.int64)
    val = np.full(n, np.nan, np.float32)
    _compact[(tiles.cdiv(n, 128),)](x, 0.5, idx, val, counter, n, BLOCK=128)
    want = np.nonzero(x > 0.5)[0]
    count = int(counter[0])
    assert count == want.size, (count, want.size)
    order = np.argsort(idx[:count])
    close(idx[:count][order], want)
    close(val[:count][order], x[want], rtol=0, atol=0)
    assert (idx[count:] == -1).all()
