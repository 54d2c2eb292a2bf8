"""Cut-Cross-Entropy (Apple's CCE) style fused log-sum-exp of ``E @ C^T`` without materialising
the logits: a 2-D grid over (token blocks, vocabulary blocks), a K loop of ``tl.dot`` on fp16
tiles, a softcap, and the block's partial LSE merged into the global one under a per-token-block
spin lock (``tl.atomic_cas`` acquire in a ``while`` loop, ``tl.atomic_xchg`` release) as
``log(exp(a - m) + exp(b - m)) + m``; vocabulary padding masked to ``-inf``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _lse_forward(E, C, LSE, Locks, B, V, D, stride_eb, stride_cv, SOFTCAP: tl.constexpr,
                 BLOCK_B: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_D: tl.constexpr):
    pid_b = tl.program_id(0)
    pid_v = tl.program_id(1)
    offs_b = pid_b * BLOCK_B + tl.arange(0, BLOCK_B)
    offs_v = pid_v * BLOCK_V + tl.arange(0, BLOCK_V)
    offs_d = tl.arange(0, BLOCK_D)
    e_ptrs = E + offs_b[:, None] * stride_eb + offs_d[None, :]
    c_ptrs = C + offs_v[None, :] * stride_cv + offs_d[:, None]
    acc = tl.zeros((BLOCK_B, BLOCK_V), dtype=tl.float32)
    for d in range(0, tl.cdiv(D, BLOCK_D)):
        d_ok = offs_d < D - d * BLOCK_D
        e = tl.load(e_ptrs, mask=(offs_b[:, None] < B) & d_ok[None, :], other=0.0)
        c = tl.load(c_ptrs, mask=(offs_v[None, :] < V) & d_ok[:, None], other=0.0)
        acc = tl.dot(e, c, acc)
        e_ptrs += BLOCK_D
        c_ptrs += BLOCK_D
    if SOFTCAP > 0:
        acc = SOFTCAP * (2 * tl.sigmoid(2 * acc / SOFTCAP) - 1)
    logits = tl.where(offs_v[None, :] < V, acc, float("-inf"))
    m = tl.max(logits, 1)
    block_lse = tl.log(tl.sum(tl.exp(logits - m[:, None]), 1)) + m
    lock = Locks + pid_b
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    lse_ptrs = LSE + offs_b
    old = tl.load(lse_ptrs, mask=offs_b < B, other=0.0, eviction_policy="evict_last")
    top = tl.maximum(old, block_lse)
    merged = tl.log(tl.exp(old - top) + tl.exp(block_lse - top)) + top
    tl.store(lse_ptrs, merged, mask=offs_b < B)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


def check(rng):
    B, V, D = 21, 150, 40
    E = (rng.standard_normal((B, D)) / 3).astype(np.float16)
    C = (rng.standard_normal((V, D)) / 3).astype(np.float16)
    for cap in (0.0, 3.0):
        lse = np.full(B, -np.inf, np.float32)
        locks = np.zeros(tiles.cdiv(B, 16), np.int32)
        grid = (tiles.cdiv(B, 16), tiles.cdiv(V, 32))
        _lse_forward[grid](E, C, lse, locks, B, V, D, D, D, SOFTCAP=cap, BLOCK_B=16, BLOCK_V=32, BLOCK_D=16)
        logits = E.astype(np.float64) @ C.astype(np.float64).T
        if cap > 0:
            logits = cap * np.tanh(logits / cap)
        m = logits.max(1)
        close(lse, np.log(np.exp(logits - m[:, None]).sum(1)) + m, rtol=1e-4, atol=1e-4)
        assert (locks == 0).all()
