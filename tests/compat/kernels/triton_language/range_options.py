"""Every option Triton's ``tl.range`` takes (``num_stages``, ``loop_unroll_factor``,
``disallow_acc_multi_buffer``, ``flatten``, ``warp_specialize``), ``tl.static_range`` and a while
loop, in one strided-sum kernel."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def strided_sums_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in tl.range(0, n, BLOCK, num_stages=3, loop_unroll_factor=2, disallow_acc_multi_buffer=True):
        acc += tl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0)
    tl.store(out_ptr + 0, tl.sum(acc, 0))
    total = 0.0
    for start in tl.range(0, n, BLOCK, flatten=False, warp_specialize=False):
        total += tl.sum(tl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0), 0)
    tl.store(out_ptr + 1, total)
    firsts = 0.0
    for i in tl.static_range(0, 4, 2):
        firsts += tl.load(x_ptr + i)
    tl.store(out_ptr + 2, firsts)
    k = 1
    while k < n:
        k *= 2
    tl.store(out_ptr + 3, k.to(tl.float32))


def check(rng):
    n = 333
    x = rng.standard_normal(n).astype(np.float32)
    out = np.empty(4, np.float32)
    strided_sums_kernel[(1,)](x, out, n, BLOCK=64)
    s = x.astype(np.float64).sum()
    close(out, np.array([s, s, x[0] + x[2], 512.0]), rtol=1e-5, atol=1e-5)
