"""FlagGems style vector norms: ``torch.linalg.vector_norm`` over a *middle* dimension of an
[M, N, K] tensor (each program owns a [BLOCK_N, BLOCK_K] tile of one batch row, loops down N and
reduces ``axis=0``), with the order chosen by a constexpr ``if``/``elif`` chain comparing against
``float("inf")`` (0: count of non-zeros through ``tl.where(a != 0, 1, 0)`` added to a float
accumulator, inf/-inf: max/min of ``abs``, 1, 2) and any other order as a runtime float
(``do_not_specialize``) through libdevice ``pow``.  A full reduction in two launches (per-block
partials, then one program) and a (max-abs, argmax) pair reduced with ``tl.reduce`` and a
user ``@jit`` combine function that makes NaN win and breaks ties toward the lower index; the
same combine function is also called directly to merge the running pair across N chunks."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra.libdevice import pow


@tiles.jit
def _norm_dim1(X, Out, M, N, K, ORD: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0).to(tl.int64)
    ks = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    k_mask = ks[None, :] < K
    X += pid_m * N * K
    if ORD == float("-inf"):
        acc = tl.full([BLOCK_N, BLOCK_K], float("inf"), dtype=tl.float32)
    else:
        acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        ns = off + tl.arange(0, BLOCK_N)[:, None]
        mask = ns < N and k_mask
        if ORD == float("-inf"):
            a = tl.load(X + ns * K + ks[None, :], mask, other=float("inf")).to(tl.float32)
        else:
            a = tl.load(X + ns * K + ks[None, :], mask, other=0.0).to(tl.float32)
        if ORD == 0:
            acc += tl.where(a != 0, 1, 0)
        elif ORD == 1:
            acc += tl.abs(a)
        elif ORD == 2:
            acc += a * a
        elif ORD == float("inf"):
            acc = tl.maximum(acc, tl.abs(a))
        else:
            acc = tl.minimum(acc, tl.abs(a))
    if ORD == float("inf"):
        out = tl.max(acc, axis=0)
    elif ORD == float("-inf"):
        out = tl.min(acc, axis=0)
    elif ORD == 2:
        out = tl.sqrt(tl.sum(acc, axis=0))
    else:
        out = tl.sum(acc, axis=0)
    tl.store(Out + pid_m * K + ks, out.to(Out.dtype.element_ty), mask=ks < K)


@tiles.jit(do_not_specialize=["ord"])
def _pnorm_dim1(X, Out, M, N, K, ord, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0).to(tl.int64)
    ks = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_N, BLOCK_K], dtype=tl.float32)
    for off in range(0, N, BLOCK_N):
        ns = off + tl.arange(0, BLOCK_N)[:, None]
        mask = ns < N and ks[None, :] < K
        a = tl.load(X + pid_m * N * K + ns * K + ks[None, :], mask, other=0.0).to(tl.float32)
        acc += pow(tl.abs(a), ord)
    tl.store(Out + pid_m * K + ks, pow(tl.sum(acc, axis=0), 1 / ord), mask=ks < K)


@tiles.jit
def _sumsq_partial(X, Mid, total, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(X + offs, mask=offs < total, other=0.0).to(tl.float32)
    tl.store(Mid + tl.program_id(0), tl.sum(x * x))


@tiles.jit
def _sumsq_final(Mid, Out, mid_size, BLOCK_MID: tl.constexpr):
    offs = tl.arange(0, BLOCK_MID)
    mid = tl.load(Mid + offs, mask=offs < mid_size, other=0.0)
    tl.store(Out, tl.sqrt(tl.sum(mid)))


@tiles.jit
def _absmax_combine(a, ia, b, ib):
    a_nan = a != a
    b_nan = b != b
    b_wins = (b_nan & ~a_nan) | ((b > a) & ~a_nan)
    tie = ((a == b) | (a_nan & b_nan)) & (ib < ia)
    take_b = b_wins | tie
    return tl.where(take_b, b, a), tl.where(take_b, ib, ia)


@tiles.jit
def _absmax_dim1(X, Val, Idx, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    ks = tl.program_id(1) * BLOCK_K + tl.arange(0, BLOCK_K)
    best = tl.full([BLOCK_K], -1.0, tl.float32)
    best_at = tl.zeros([BLOCK_K], tl.int32)
    for off in range(0, N, BLOCK_N):
        ns = off + tl.arange(0, BLOCK_N)
        mask = (ns[:, None] < N) & (ks[None, :] < K)
        a = tl.abs(tl.load(X + pid_m * N * K + ns[:, None] * K + ks[None, :], mask=mask, other=-1.0))
        a = tl.where(mask, a, -1.0)
        idx = tl.broadcast_to(ns[:, None], [BLOCK_N, BLOCK_K])
        v, i = tl.reduce((a, idx), axis=0, combine_fn=_absmax_combine)
        best, best_at = _absmax_combine(best, best_at, v, i)
    tl.store(Val + pid_m * K + ks, best, mask=ks < K)
    tl.store(Idx + pid_m * K + ks, best_at, mask=ks < K)


def check(rng):
    M, N, K = 3, 37, 21
    x = rng.standard_normal((M, N, K)).astype(np.float32)
    x[0, :, 0] = 0.0
    x[1, 5, 3] = -0.0
    x[1, ::3, 4] = 0.0
    x[2, 7, 2] = -np.inf
    x64 = np.abs(x.astype(np.float64))
    grid = (M, tiles.cdiv(K, 8))
    for ord_, ref in ((0, (x64 != 0).sum(1)), (1, x64.sum(1)), (2, np.sqrt((x64 * x64).sum(1))),
                      (float("inf"), x64.max(1)), (float("-inf"), x64.min(1))):
        out = np.empty((M, K), np.float32)
        _norm_dim1[grid](x, out, M, N, K, ORD=ord_, BLOCK_N=16, BLOCK_K=8)
        close(out, ref, rtol=1e-5, atol=1e-6)
    finite = rng.standard_normal((M, N, K)).astype(np.float16)
    f64 = np.abs(finite.astype(np.float64))
    out16 = np.empty((M, K), np.float16)
    _norm_dim1[grid](finite, out16, M, N, K, ORD=2, BLOCK_N=8, BLOCK_K=8)
    close(out16, np.sqrt((f64 * f64).sum(1)), rtol=2e-3, atol=1e-3)
    for p in (3.0, 0.5):
        out = np.empty((M, K), np.float32)
        _pnorm_dim1[grid](finite, out, M, N, K, p, BLOCK_N=16, BLOCK_K=8)
        # pow in fp32 over 37 terms; 0.5-norms reach ~1e3 (the 1/p = 2 power squares the error)
        close(out, (f64 ** p).sum(1) ** (1 / p), rtol=1e-4, atol=1e-5)
    flat = rng.standard_normal(1000).astype(np.float32)
    mid = np.empty(tiles.cdiv(flat.size, 128), np.float32)
    out = np.empty(1, np.float32)
    _sumsq_partial[(mid.size,)](flat, mid, flat.size, BLOCK_SIZE=128)
    _sumsq_final[(1,)](mid, out, mid.size, BLOCK_MID=tiles.next_power_of_2(mid.size))
    close(out, [np.sqrt((flat.astype(np.float64) ** 2).sum())], rtol=1e-5)
    y = rng.integers(-6, 7, (M, N, K)).astype(np.float32)
    y[1, 20, 5] = np.nan
    y[1, 30, 5] = np.nan
    y[2, 3, 0] = -np.inf
    val = np.empty((M, K), np.float32)
    idx = np.empty((M, K), np.int32)
    _absmax_dim1[grid](y, val, idx, N, K, BLOCK_N=16, BLOCK_K=8)
    ay = np.abs(y)
    ref_idx = np.where(np.isnan(ay).any(1), np.argmax(np.isnan(ay), 1), np.nanargmax(ay, 1))
    close(idx, ref_idx.astype(np.int32))
    close(val, np.take_along_axis(ay, ref_idx[:, None, :], 1)[:, 0, :], rtol=0, atol=0)
