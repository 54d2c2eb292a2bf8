"""Options that performance-tuned kernels (vLLM, xformers, FlagGems) sprinkle on memory ops and
products, which must be accepted and not change results: ``cache_modifier=".cg"/".ca"/".wt"``,
``eviction_policy="evict_last"/"evict_first"``, ``volatile=True``; ``tl.full`` of a run-time
value, ``tl.zeros_like``, ``tl.where`` choosing between two pointers, and
``tl.dot`` with ``out_dtype=tl.float16`` and ``max_num_imprecise_acc``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _options(x_ptr, y_ptr, out_ptr, flags_ptr, n, fill, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0, cache_modifier=".cg", eviction_policy="evict_last")
    y = tl.load(y_ptr + offs, mask=mask, other=0.0, cache_modifier=".ca", eviction_policy="evict_first")
    use_y = tl.load(flags_ptr + tl.program_id(0), volatile=True) != 0
    src = tl.where(use_y, y_ptr, x_ptr)
    z = tl.load(src + offs, mask=mask, other=0.0)
    base = tl.full([BLOCK], fill, tl.float32)
    acc = tl.zeros_like(x) + base + 0.5
    tl.store(out_ptr + offs, acc + x * y + z, mask=mask, cache_modifier=".wt")


@tiles.jit
def _dot_fp16_out(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b, out_dtype=tl.float16, max_num_imprecise_acc=None)
    tl.static_assert(c.dtype == tl.float16)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def check(rng):
    n, block = 300, 128
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    flags = np.array([0, 1, 0], np.int32)
    out = np.empty(n, np.float32)
    _options[(tiles.cdiv(n, block),)](x, y, out, flags, n, 2.25, BLOCK=block)
    chosen = np.where(flags[np.arange(n) // block] != 0, y, x)
    close(out, 2.25 + 0.5 + x * y + chosen, rtol=1e-6, atol=1e-6)
    M, N, K = 16, 32, 16
    a = (rng.standard_normal((M, K)) / 2).astype(np.float16)
    b = (rng.standard_normal((K, N)) / 2).astype(np.float16)
    c = np.empty((M, N), np.float16)
    _dot_fp16_out[(1,)](a, b, c, M=M, N=N, K=K)
    close(c, (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16), rtol=1e-2, atol=1e-2)
