"""FlagGems style random sampling from Philox counters.  ``exponential_``: 64-bit seed and offset
passed as plain ints (``do_not_specialize``), split into two 32-bit counter words, four streams
per ``tl.philox`` call (or two uint64 words pasted from them with ``<<`` and ``|`` when the
runtime flag ``is_double`` is set: an ``if`` on a scalar *argument*), ``uint_to_uniform_float``
written with ``tl.constexpr(x.dtype == ...)`` branches, ``-log(u) / lambda`` with the top of
the range clamped.  ``multinomial`` with replacement: rows normalised by a ``tl.cumsum`` kernel,
then a 2-D grid (sample blocks, distributions) where each lane binary-searches its uniform in
the CDF for ``log2(K) + 1`` steps, a trip count computed in the kernel from the int argument
``K`` (``K.to(tl.float32)``), and a constexpr parameter with a default.  Checked bit-for-bit
against Philox in NumPy, by moments and category frequencies, and for determinism (same seed and
offset give the same bits; another offset gives other bits)."""

import numpy as np
from compat_harness import close
from compat_random import philox, uniform

import tiles
import tiles.language as tl


@tiles.jit
def uint_to_uniform_float(x):
    if tl.constexpr(x.dtype == tl.uint32) or tl.constexpr(x.dtype == tl.int32):
        x = x.to(tl.int32, bitcast=True)
        scale = 4.6566127342e-10
    else:
        tl.static_assert(tl.constexpr(x.dtype == tl.uint64) or tl.constexpr(x.dtype == tl.int64))
        x = x.to(tl.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    x = tl.where(x < 0, -x - 1, x)
    return x * scale


@tiles.jit
def paste_u64(hi: tl.uint32, lo: tl.uint32):
    return (hi.to(tl.uint64) << 32) | lo.to(tl.uint64)


@tiles.jit
def transform_exponential(u, lambd, eps):
    eps1 = -0.5 * eps
    is_min = u >= 1.0 + eps1
    log = tl.where(is_min, eps1, tl.math.log(u))
    return -1.0 / lambd * log


@tiles.jit(do_not_specialize=["philox_seed", "philox_offset", "N"])
def fused_exponential_kernel(out_ptr, N, is_double, lambd, eps, philox_seed, philox_offset, BLOCK: tl.constexpr):
    philox_seed = philox_seed.to(tl.int64)
    philox_offset = philox_offset.to(tl.int64)
    c0 = (philox_offset & 0xFFFFFFFF).to(tl.uint32)
    c1 = ((philox_offset >> 32) & 0xFFFFFFFF).to(tl.uint32)
    i4 = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c0 += i4
    _O = c0 * 0
    r0, r1, r2, r3 = tl.philox(philox_seed, c0, c1, _O, _O)
    if is_double:
        y0 = transform_exponential(uint_to_uniform_float(paste_u64(r0, r2)), lambd, eps)
        y1 = transform_exponential(uint_to_uniform_float(paste_u64(r1, r3)), lambd, eps)
        start = tl.program_id(0).to(tl.uint64) * BLOCK * 2
        off_0 = start + tl.arange(0, BLOCK)
        off_1 = off_0 + BLOCK
        tl.store(out_ptr + off_0, y0, mask=off_0 < N, eviction_policy="evict_first")
        tl.store(out_ptr + off_1, y1, mask=off_1 < N, eviction_policy="evict_first")
    else:
        start = tl.program_id(0).to(tl.uint64) * BLOCK * 4
        off_0 = start + tl.arange(0, BLOCK)
        off_1 = off_0 + BLOCK
        off_2 = off_1 + BLOCK
        off_3 = off_2 + BLOCK
        tl.store(out_ptr + off_0, transform_exponential(uint_to_uniform_float(r0), lambd, eps), mask=off_0 < N)
        tl.store(out_ptr + off_1, transform_exponential(uint_to_uniform_float(r1), lambd, eps), mask=off_1 < N)
        tl.store(out_ptr + off_2, transform_exponential(uint_to_uniform_float(r2), lambd, eps), mask=off_2 < N)
        tl.store(out_ptr + off_3, transform_exponential(uint_to_uniform_float(r3), lambd, eps), mask=off_3 < N)


@tiles.jit
def normed_cumsum_kernel(prob_ptr, cdf_ptr, K, BLOCK_K: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_K)
    p = tl.load(prob_ptr + row * K + cols, mask=cols < K, other=0.0).to(tl.float32)
    tl.store(cdf_ptr + row * K + cols, tl.cumsum(p, 0) / tl.sum(p, 0), mask=cols < K)


@tiles.jit
def uniform4(seed, philox_offset, offset):
    seed = seed.to(tl.int64)
    philox_offset = philox_offset.to(tl.int64)
    c0 = (philox_offset & 0xFFFFFFFF).to(tl.uint32)
    c1 = ((philox_offset >> 32) & 0xFFFFFFFF).to(tl.uint32)
    c0 += offset
    _O = c0 * 0
    r0, r1, r2, r3 = tl.philox(seed, c0, c1, _O, _O)
    return (uint_to_uniform_float(r0), uint_to_uniform_float(r1), uint_to_uniform_float(r2),
            uint_to_uniform_float(r3))


@tiles.jit(do_not_specialize=["K", "N", "philox_seed", "philox_offset"])
def multinomial_with_replacement(cdf_ptr, out_ptr, K, N, philox_seed, philox_offset, NBLOCK: tl.constexpr = 128):
    y_off = tl.program_id(1) * N
    n = tl.program_id(0) * NBLOCK + tl.arange(0, NBLOCK)
    rv, _, _, _ = uniform4(philox_seed, philox_offset, y_off + n)
    rv += 0.0001
    rv = tl.where(rv > 0.9999, 0.9999, rv)
    cdf_ptr += tl.program_id(1) * K
    start = tl.zeros((NBLOCK,), dtype=tl.int32)
    end = tl.zeros((NBLOCK,), dtype=tl.int32) + K - 1
    steps = tl.math.log2(K.to(tl.float32)).to(tl.int32) + 1
    for _ in range(steps):
        mid = start + (end - start) // 2
        x = tl.load(cdf_ptr + mid, mask=n < N)
        start = tl.where(x < rv, mid + 1, start)
        end = tl.where(x < rv, end, mid)
    start = tl.where(start >= K, K - 1, start)
    tl.store(out_ptr + y_off + n, start.to(out_ptr.dtype.element_ty), mask=n < N)


def _exponential_ref(seed, offset, n, block, lambd, eps):
    per_prog = 4 * block
    progs = tiles.cdiv(n, per_prog)
    c0 = ((offset & 0xFFFFFFFF) + np.arange(progs * block, dtype=np.uint64)).astype(np.uint32)
    streams = [uniform(r).reshape(progs, block) for r in philox(seed, c0, offset >> 32, 0, 0)]
    u = np.stack(streams, 1).reshape(-1)[:n]  # program, stream, lane
    eps1 = np.float32(-0.5 * eps)
    return np.where(u >= np.float32(1.0) + eps1, eps1, np.log(u)) * np.float32(-1.0 / lambd)


def check(rng):
    n, block, lambd = 3001, 128, 2.5
    seed, offset = int(rng.integers(1, 2**62)), 2**32 + 4 * int(rng.integers(0, 1000))
    eps = float(np.finfo(np.float32).eps)
    out = np.empty(n, np.float32)
    fused_exponential_kernel[(tiles.cdiv(n, 4 * block),)](out, n, False, lambd, eps, seed, offset, BLOCK=block)
    # bitwise-equal uniforms, then one fp32 log: a few ulp
    close(out, _exponential_ref(seed, offset, n, block, lambd, eps), rtol=2e-6, atol=1e-7)
    assert (out >= 0).all() and np.isfinite(out).all()
    assert abs(out.mean() * lambd - 1) < 5 / np.sqrt(n)  # Exp(lambda) mean 1/lambda, sd 1/lambda
    again = np.empty_like(out)
    fused_exponential_kernel[(tiles.cdiv(n, 4 * block),)](again, n, False, lambd, eps, seed, offset, BLOCK=block)
    assert np.array_equal(again.view(np.uint32), out.view(np.uint32))
    fused_exponential_kernel[(tiles.cdiv(n, 4 * block),)](again, n, False, lambd, eps, seed, offset + 4, BLOCK=block)
    assert (again != out).mean() > 0.99
    n64 = 2001
    out64 = np.empty(n64, np.float64)
    eps64 = float(np.finfo(np.float64).eps)
    fused_exponential_kernel[(tiles.cdiv(n64, 2 * block),)](out64, n64, True, lambd, eps64, seed, offset, BLOCK=block)
    assert (out64 >= 0).all() and np.isfinite(out64).all()
    assert abs(out64.mean() * lambd - 1) < 5 / np.sqrt(n64)
    assert abs(np.median(out64) * lambd - np.log(2)) < 0.1
    again64 = np.empty_like(out64)
    fused_exponential_kernel[(tiles.cdiv(n64, 2 * block),)](again64, n64, True, lambd, eps64, seed, offset,
                                                           BLOCK=block)
    assert np.array_equal(again64.view(np.uint64), out64.view(np.uint64))
    n_dist, K, n_samples = 3, 37, 1000
    prob = rng.uniform(0.0, 1.0, (n_dist, K)).astype(np.float32)
    prob[:, ::5] = 0.0
    prob[2, :] = 0.0
    prob[2, 17] = 3.0  # a one-hot row
    cdf = np.empty_like(prob)
    normed_cumsum_kernel[(n_dist,)](prob, cdf, K, BLOCK_K=64)
    close(cdf, np.cumsum(prob.astype(np.float64), 1) / prob.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    samples = np.empty((n_dist, n_samples), np.int64)
    grid = (tiles.cdiv(n_samples, 128), n_dist)
    multinomial_with_replacement[grid](cdf, samples, K, n_samples, seed, offset)
    flat = (np.arange(n_dist)[:, None] * n_samples + np.arange(n_samples)).astype(np.uint64)
    c0 = ((offset & 0xFFFFFFFF) + flat).astype(np.uint32)
    rv = uniform(philox(seed, c0, offset >> 32, 0, 0)[0]) + np.float32(0.0001)
    rv = np.where(rv > np.float32(0.9999), np.float32(0.9999), rv)
    expected = np.stack([np.minimum(np.searchsorted(cdf[d], rv[d], side="left"), K - 1) for d in range(n_dist)])
    close(samples, expected.astype(np.int64))
    assert (samples[2] == 17).all()
    assert (prob[np.arange(n_dist)[:, None], samples] > 0).all()
    freq = np.stack([np.bincount(samples[d], minlength=K) for d in range(2)]) / n_samples
    p = prob[:2] / prob[:2].sum(1, keepdims=True)
    assert (np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n_samples) + 1e-3).all()
    again_s = np.empty_like(samples)
    multinomial_with_replacement[grid](cdf, again_s, K, n_samples, seed, offset)
    assert np.array_equal(again_s, samples)
