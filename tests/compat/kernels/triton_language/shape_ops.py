"""Shape and ordering ops from library kernels: ``tl.sort`` (both directions), ``tl.flip``,
``tl.join``/``tl.split``, ``tl.interleave``, ``tl.histogram``, ``tl.permute``/``.T`` and ``tl.reshape``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def shape_ops_kernel(x_ptr, sorted_ptr, desc_ptr, flip_ptr, inter_ptr, hist_ptr, trans_ptr, N: tl.constexpr,
                     BINS: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(sorted_ptr + offs, tl.sort(x))
    tl.store(desc_ptr + offs, tl.sort(x, descending=True))
    tl.store(flip_ptr + offs, tl.flip(x, 0))
    lo, hi = tl.split(tl.reshape(x, [N // 2, 2]))
    pair = tl.join(hi, lo)
    tl.store(inter_ptr + tl.arange(0, N), tl.reshape(pair, [N]))
    tl.store(inter_ptr + N + tl.arange(0, N), tl.interleave(lo, hi))
    bins = (tl.abs(x) * 4).to(tl.int32) % BINS
    tl.store(hist_ptr + tl.arange(0, BINS), tl.histogram(bins, BINS))
    m = tl.reshape(x, [8, N // 8])
    tl.store(trans_ptr + tl.arange(0, N // 8)[:, None] * 8 + tl.arange(0, 8)[None, :], m.T)
    tl.store(trans_ptr + N + tl.arange(0, N // 8)[:, None] * 8 + tl.arange(0, 8)[None, :], tl.permute(m, (1, 0)))


def check(rng):
    N, BINS = 64, 8
    x = rng.standard_normal(N).astype(np.float32)
    outs = [np.empty(N, np.float32) for _ in range(3)]
    inter = np.empty(2 * N, np.float32)
    hist = np.empty(BINS, np.int32)
    trans = np.empty(2 * N, np.float32)
    shape_ops_kernel[(1,)](x, *outs, inter, hist, trans, N=N, BINS=BINS)
    close(outs[0], np.sort(x), rtol=0, atol=0)
    close(outs[1], np.sort(x)[::-1], rtol=0, atol=0)
    close(outs[2], x[::-1], rtol=0, atol=0)
    lo, hi = x[0::2], x[1::2]
    close(inter[:N], np.stack([hi, lo], 1).reshape(-1), rtol=0, atol=0)
    close(inter[N:], np.stack([lo, hi], 1).reshape(-1), rtol=0, atol=0)
    close(hist, np.bincount((np.abs(x) * 4).astype(np.int32) % BINS, minlength=BINS))
    t = x.reshape(8, N // 8).T.reshape(-1)
    close(trans, np.concatenate([t, t]), rtol=0, atol=0)
