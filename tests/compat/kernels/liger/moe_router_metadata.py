"""Liger-Kernel style fused-MoE router metadata (after sonic-moe): a tiled expert histogram with
masked atomics, per-expert prefix sums with three program roles, and a scatter kernel that sorts
packed ``expert << 16 | local_offset`` keys and ranks entries inside each expert run with a
segmented ``tl.associative_scan``.

Language features exercised: ``tl.reshape`` of a 2-D ``int1`` mask and of int32 ids to 1-D;
``tl.atomic_add`` of ``tl.full([...], 1, dtype=tl.int32)`` with a mask onto redirected addresses;
program roles chosen by ``if pid < E`` / ``elif pid == E`` / ``elif pid == E + 1`` with a runtime
``range`` loop in one branch and a ``tl.static_range(0, E, BLOCK_N)`` loop in another, both
carrying ``curr_sum = 0`` (a Python int that becomes a tensor); ``BLOCK_SIZE: tl.constexpr =
A * B`` and ``IS_POW2_K: tl.constexpr = K == K_POW2`` locals; ``tl.static_assert(BLOCK_SIZE <=
32768)``; ``other=-1`` loads cast ``.to(tl.uint32)`` (0xFFFFFFFF) then shifted and or-ed with
``tl.arange``; ``tl.sort(x, 0)`` on uint32; ``tl.associative_scan(x, 0, combine)`` whose combine
uses a local ``key_mask: tl.constexpr = 0xFFFF0000`` (above int32) and ``tl.where``; uint32/int32
mixed index arithmetic (``pid_m + expert * n_tiles``) and ``//``/``%`` on uint32."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _keyed_add(x, y):
    key_mask: tl.constexpr = 0xFFFF0000
    kx = x & key_mask
    ky = y & key_mask
    return tl.where(kx == ky, x + y - kx, y)


@tiles.jit
def _router_histogram(topk_ptr, partial_ptr, T, E: tl.constexpr, n_tiles, TOKENS_PER_TILE: tl.constexpr,
                      K_POW2: tl.constexpr, K: tl.constexpr, E_POW2: tl.constexpr):
    # the counts start at zero (host): zeroing them here and adding in the same program races, since
    # the atomics of one thread may land before another thread's store (no barrier orders global memory)
    tile_id = tl.program_id(0)
    tok = tile_id * TOKENS_PER_TILE + tl.arange(0, TOKENS_PER_TILE)
    k_offs = tl.arange(0, K_POW2)
    load_mask = (tok < T)[:, None] & (k_offs[None, :] < K)
    safe_k = tl.minimum(k_offs, K - 1)
    ids = tl.load(topk_ptr + tok[:, None] * K + safe_k[None, :], mask=load_mask, other=-1)
    flat_ids = tl.reshape(ids, [TOKENS_PER_TILE * K_POW2])
    flat_mask = tl.reshape(load_mask, [TOKENS_PER_TILE * K_POW2])
    safe_ids = tl.where(flat_mask, flat_ids, 0)
    tl.atomic_add(partial_ptr + safe_ids * n_tiles + tile_id, tl.full([TOKENS_PER_TILE * K_POW2], 1, dtype=tl.int32),
                  mask=flat_mask)


@tiles.jit
def _router_prefix_sum(freq_ptr, freq_offs_ptr, tile_offs_ptr, E: tl.constexpr, partial_ptr, n_tiles, TK,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_M_TOKEN: tl.constexpr):
    pid = tl.program_id(0)
    if pid < E:
        row = partial_ptr + pid * n_tiles
        curr_sum = 0
        for start in range(0, n_tiles, BLOCK_M):
            offs = start + tl.arange(0, BLOCK_M)
            counts = tl.load(row + offs, mask=offs < n_tiles, other=0)
            excl = tl.cumsum(counts, 0) - counts + curr_sum
            curr_sum += tl.sum(counts, 0)
            tl.store(row + offs, excl, mask=offs < n_tiles)
    elif pid == E:
        curr_freq = 0
        curr_tiles = 0
        for start in tl.static_range(0, E, BLOCK_N):
            offs = start + tl.arange(0, BLOCK_N)
            freq = tl.load(freq_ptr + offs, mask=offs < E, other=0)
            tl.store(freq_offs_ptr + offs, tl.cumsum(freq, 0) - freq + curr_freq, mask=offs < E)
            curr_freq += tl.sum(freq, 0)
            m_tiles = (freq + BLOCK_M_TOKEN - 1) // BLOCK_M_TOKEN
            tl.store(tile_offs_ptr + offs, tl.cumsum(m_tiles, 0) - m_tiles + curr_tiles, mask=offs < E)
            curr_tiles += tl.sum(m_tiles, 0)
        tl.store(tile_offs_ptr + E, curr_tiles)
    elif pid == E + 1:
        tl.store(freq_offs_ptr + E, TK)


@tiles.jit
def _router_scatter(s_scatter_ptr, s_reverse_ptr, x_gather_ptr, tile_row_start_ptr, tile_expert_ptr, topk_ptr, T,
                    partial_ptr, n_tiles, expert_offs_ptr, tile_offs_ptr, K_POW2: tl.constexpr, K: tl.constexpr,
                    TOKENS_PER_BLOCK: tl.constexpr, BLOCK_M_TOKEN: tl.constexpr):
    BLOCK_SIZE: tl.constexpr = TOKENS_PER_BLOCK * K_POW2
    IS_POW2_K: tl.constexpr = K == K_POW2
    tl.static_assert(BLOCK_SIZE <= 32768)
    pid_m = tl.program_id(0)
    offs_local = tl.arange(0, BLOCK_SIZE)
    offs_global = pid_m * BLOCK_SIZE + offs_local
    mask = offs_global < T * K_POW2
    if IS_POW2_K:
        expert = tl.load(topk_ptr + offs_global, mask=mask, other=-1).to(tl.uint32)
    else:
        tok = pid_m * TOKENS_PER_BLOCK + offs_local // K_POW2
        k_slot = offs_local % K_POW2
        expert = tl.load(topk_ptr + tok * K + tl.minimum(k_slot, K - 1), mask=mask & (k_slot < K),
                         other=-1).to(tl.uint32)
    kv = tl.sort(((expert << 16) | offs_local).to(tl.uint32), 0)
    expert = kv >> 16
    mask = expert != 0xFFFF
    runs = tl.associative_scan((kv & 0xFFFF0000) | 0x00000001, 0, _keyed_add)
    rank = (runs - 1) & 0xFFFF
    within = tl.load(partial_ptr + pid_m + expert * n_tiles, mask=mask, other=0) + rank
    s_reverse = tl.load(expert_offs_ptr + expert, mask=mask, other=0) + within
    is_tile_start = (within % BLOCK_M_TOKEN) == 0
    tile_base = tl.load(tile_offs_ptr + expert, mask=mask & is_tile_start, other=0).to(tl.int32)
    flat_tile = tile_base + within // BLOCK_M_TOKEN
    tl.store(tile_row_start_ptr + flat_tile, s_reverse.to(tl.int32), mask=mask & is_tile_start)
    tl.store(tile_expert_ptr + flat_tile, expert.to(tl.int32), mask=mask & is_tile_start)
    presort = kv & 0xFFFF
    if IS_POW2_K:
        entry = pid_m * BLOCK_SIZE + presort
        token = entry // K_POW2
    else:
        token = pid_m * TOKENS_PER_BLOCK + presort // K_POW2
        entry = token * K + presort % K_POW2
    tl.store(s_reverse_ptr + entry, s_reverse, mask=mask)
    tl.store(s_scatter_ptr + s_reverse, entry, mask=mask)
    tl.store(x_gather_ptr + s_reverse, token, mask=mask)


def _route(topk, E, tokens_per_tile, block_m_token):
    T, K = topk.shape
    k_pow2 = 1 << (K - 1).bit_length()
    e_pow2 = 1 << (E - 1).bit_length()
    n_tiles = -(-T // tokens_per_tile)
    partial = np.zeros((E, n_tiles), np.int32)
    _router_histogram[(n_tiles,)](topk, partial, T, E, n_tiles, tokens_per_tile, k_pow2, K, e_pow2)
    tiles_of = [topk[i * tokens_per_tile:(i + 1) * tokens_per_tile] for i in range(n_tiles)]
    close(partial, np.stack([[(t == e).sum() for t in tiles_of] for e in range(E)]).astype(np.int32))
    freq = partial.sum(1).astype(np.int32)
    freq_offs = np.full(E + 1, -1, np.int32)
    tile_offs = np.full(E + 1, -1, np.int32)
    _router_prefix_sum[(E + 2,)](freq, freq_offs, tile_offs, E, partial, n_tiles, T * K, BLOCK_M=2, BLOCK_N=4,
                                 BLOCK_M_TOKEN=block_m_token)
    m_tiles = -(-freq // block_m_token)
    close(freq_offs, np.concatenate([np.cumsum(freq) - freq, [T * K]]).astype(np.int32))
    close(tile_offs, np.concatenate([np.cumsum(m_tiles) - m_tiles, [m_tiles.sum()]]).astype(np.int32))
    n_m_tiles = int(m_tiles.sum())
    s_scatter, s_reverse, x_gather = (np.full(T * K, -1, np.int32) for _ in range(3))
    row_start, tile_expert = (np.full(n_m_tiles, -1, np.int32) for _ in range(2))
    _router_scatter[(n_tiles,)](s_scatter, s_reverse, x_gather, row_start, tile_expert, topk, T, partial, n_tiles,
                                freq_offs, tile_offs, k_pow2, K, tokens_per_tile, block_m_token)
    flat = topk.reshape(-1)
    order = np.argsort(flat, kind="stable").astype(np.int32)
    close(s_scatter, order)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(T * K)
    close(s_reverse, inverse)
    close(x_gather, order // K)
    exp_start, exp_expert = [], []
    for e in range(E):
        for j in range(m_tiles[e]):
            exp_start.append(freq_offs[e] + j * block_m_token)
            exp_expert.append(e)
    close(row_start, np.array(exp_start, np.int32))
    close(tile_expert, np.array(exp_expert, np.int32))


def check(rng):
    E, T = 6, 23
    for K in (3, 2):
        topk = np.stack([rng.permutation(E)[:K] for _ in range(T)]).astype(np.int32)
        _route(topk, E, tokens_per_tile=8, block_m_token=4)
