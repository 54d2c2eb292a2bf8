"""Hashing kernels of the kind serving stacks use for n-gram / prefix-cache keys: MurmurHash3's
32-bit body and ``fmix32`` on ``tl.uint32`` (multiplies that wrap, logical ``>>`` on unsigned,
rotations ``(h << r) | (h >> (32 - r))``), a 64-bit ``fmix64`` on ``tl.uint64`` with
``tl.umulhi`` folding, token ids read as int32 and bit-cast with ``.to(tl.uint32, bitcast=True)``
(negative ids included), a bucket by unsigned ``%`` (the int32 divisor cast first: Triton refuses
mixed signedness), and a signed/unsigned contrast: the same bits shifted right as ``tl.int32``
(arithmetic) and truncated ``.to(tl.int8)`` (wrapping)."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _rotl32(x, r: tl.constexpr):
    return (x << r) | (x >> (32 - r))


@tiles.jit
def _fmix32(h):
    h ^= h >> 16
    h *= 0x85EBCA6B
    h ^= h >> 13
    h *= 0xC2B2AE35
    h ^= h >> 16
    return h


@tiles.jit
def ngram_hash_kernel(tok_ptr, out_ptr, umh_ptr, bucket_ptr, signed_ptr, n, seed, n_buckets, NGRAM: tl.constexpr,
                      BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.zeros([BLOCK], tl.uint32) + seed.to(tl.uint32)
    for j in tl.static_range(NGRAM):
        k = tl.load(tok_ptr + offs + j, mask=mask, other=0).to(tl.uint32, bitcast=True)
        k *= 0xCC9E2D51
        k = _rotl32(k, 15)
        k *= 0x1B873593
        h ^= k
        h = _rotl32(h, 13)
        h = h * 5 + 0xE6546B64
    h ^= NGRAM * 4
    h = _fmix32(h)
    tl.store(out_ptr + offs, h, mask=mask)
    wide = h.to(tl.uint64) * 0x9E3779B97F4A7C15
    wide ^= wide >> 33
    folded = tl.umulhi(h, 0x9E3779B9) ^ wide.to(tl.uint32)
    tl.store(umh_ptr + offs, folded, mask=mask)
    tl.store(bucket_ptr + offs, (h % n_buckets.to(tl.uint32)).to(tl.int32), mask=mask)
    s = h.to(tl.int32, bitcast=True)
    tl.store(signed_ptr + offs * 2, s >> 7, mask=mask)
    tl.store(signed_ptr + offs * 2 + 1, s.to(tl.int8).to(tl.int32), mask=mask)


def _reference(tokens, n, seed, ngram, n_buckets):
    u32, u64 = np.uint32, np.uint64

    def rotl(x, r):
        return (x << u32(r)) | (x >> u32(32 - r))

    with np.errstate(over="ignore"):
        h = np.full(n, seed, u32)
        for j in range(ngram):
            k = tokens[j:j + n].view(u32) * u32(0xCC9E2D51)
            k = rotl(k, 15) * u32(0x1B873593)
            h = rotl(h ^ k, 13) * u32(5) + u32(0xE6546B64)
        h ^= u32(ngram * 4)
        for shift, mult in ((16, 0x85EBCA6B), (13, 0xC2B2AE35)):
            h = (h ^ (h >> u32(shift))) * u32(mult)
        h ^= h >> u32(16)
        wide = h.astype(u64) * u64(0x9E3779B97F4A7C15)
        wide ^= wide >> u64(33)
        folded = ((h.astype(u64) * u64(0x9E3779B9)) >> u64(32)).astype(u32) ^ wide.astype(u32)
    s = h.view(np.int32)
    return h, folded, (h % u32(n_buckets)).astype(np.int32), np.stack([s >> 7, s.astype(np.int8)], 1)


def check(rng):
    n, ngram, n_buckets = 999, 3, 1009
    tokens = rng.integers(-(2**31), 2**31, n + ngram, dtype=np.int64).astype(np.int32)
    tokens[:4] = [np.iinfo(np.int32).min, -1, 0, np.iinfo(np.int32).max]
    seed = 0x9747B28C  # above INT32_MAX: the host passes it as an unsigned 32-bit value
    out = np.empty(n, np.uint32)
    umh = np.empty(n, np.uint32)
    bucket = np.empty(n, np.int32)
    signed = np.empty((n, 2), np.int32)
    ngram_hash_kernel[(tiles.cdiv(n, 128),)](tokens, out, umh, bucket, signed, n, seed, n_buckets, NGRAM=ngram,
                                             BLOCK=128)
    h, folded, buckets, sig = _reference(tokens, n, seed, ngram, n_buckets)
    close(out, h)
    close(umh, folded)
    close(bucket, buckets)
    close(signed, sig.astype(np.int32))
    assert (sig[:, 0] < 0).any() and (sig[:, 1] < 0).any()
