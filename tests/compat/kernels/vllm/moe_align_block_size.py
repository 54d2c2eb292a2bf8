"""vLLM style ``moe_align_block_size`` in Triton: sort the flattened top-k expert ids by expert,
pad each expert's run to a multiple of ``block_size`` with the sentinel ``numel``, and emit one
expert id per M block plus the padded total, in four launches over a grid of experts.  Stage 1
counts per program with a scalar ``tl.load``/``tl.store`` loop guarded by a runtime ``if``;
stage 2 turns the counts into per-program prefixes (``tl.cumsum`` over a column when the expert
count is a power of two, else a scalar running sum); stage 3 rounds with ``tl.cdiv`` on loaded
scalars and scans; stage 4 fills the block expert ids with ``range(start, end, block_size)`` over
loaded bounds, then places tokens.  ``@jit(do_not_specialize=["numel"])`` on the kernels taking
the element count.  A second, one-launch placement uses ``tl.atomic_add`` (``sem="relaxed"``)
returning each lane's rank, with ``cache_modifier=".cv"`` on the id load; its order within an
expert is unspecified, so it is compared as sets per padded run."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit(do_not_specialize=["numel"])
def _stage1(topk_ids_ptr, tokens_cnts_ptr, num_experts: tl.constexpr, numel, tokens_per_thread: tl.constexpr):
    pid = tl.program_id(0)
    start = pid * tokens_per_thread
    row = (pid + 1) * num_experts
    for i in range(tokens_per_thread):
        if start + i < numel:
            e = tl.load(topk_ids_ptr + start + i)
            c = tl.load(tokens_cnts_ptr + row + e)
            tl.store(tokens_cnts_ptr + row + e, c + 1)


@tiles.jit
def _stage2_scan(tokens_cnts_ptr, num_experts: tl.constexpr):
    pid = tl.program_id(0)
    rows = tl.arange(0, num_experts) + 1
    col = tl.load(tokens_cnts_ptr + rows * num_experts + pid)
    tl.store(tokens_cnts_ptr + rows * num_experts + pid, tl.cumsum(col, axis=0))


@tiles.jit
def _stage2_loop(tokens_cnts_ptr, num_experts: tl.constexpr):
    pid = tl.program_id(0)
    running = 0
    for i in range(1, num_experts + 1):
        running = running + tl.load(tokens_cnts_ptr + i * num_experts + pid)
        tl.store(tokens_cnts_ptr + i * num_experts + pid, running)


@tiles.jit
def _stage3(total_post_pad_ptr, tokens_cnts_ptr, cumsum_ptr, num_experts: tl.constexpr, block_size: tl.constexpr):
    last = 0
    base = num_experts * num_experts
    for i in range(1, num_experts + 1):
        cnt = tl.load(tokens_cnts_ptr + base + i - 1)
        last = last + tl.cdiv(cnt, block_size) * block_size
        tl.store(cumsum_ptr + i, last)
    tl.store(total_post_pad_ptr, last)


@tiles.jit(do_not_specialize=["numel"])
def _stage4(topk_ids_ptr, sorted_ids_ptr, expert_ids_ptr, tokens_cnts_ptr, cumsum_ptr, num_experts: tl.constexpr,
            block_size: tl.constexpr, numel, tokens_per_thread: tl.constexpr):
    pid = tl.program_id(0)
    lo = tl.load(cumsum_ptr + pid)
    hi = tl.load(cumsum_ptr + pid + 1)
    for i in range(lo, hi, block_size):
        tl.store(expert_ids_ptr + i // block_size, pid)
    start = pid * tokens_per_thread
    row = pid * num_experts
    for i in range(start, tl.minimum(start + tokens_per_thread, numel)):
        e = tl.load(topk_ids_ptr + i)
        rank = tl.load(tokens_cnts_ptr + row + e)
        tl.store(tokens_cnts_ptr + row + e, rank + 1)
        tl.store(sorted_ids_ptr + tl.load(cumsum_ptr + e) + rank, i)


@tiles.jit(do_not_specialize=["numel"])
def _fill(sorted_ids_ptr, n_sorted, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(sorted_ids_ptr + offs, numel, mask=offs < n_sorted)


@tiles.jit(do_not_specialize=["numel"])
def _atomic_place(topk_ids_ptr, sorted_ids_ptr, cursor_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    e = tl.load(topk_ids_ptr + offs, mask=mask, other=0, cache_modifier=".cv")
    slot = tl.atomic_add(cursor_ptr + e, 1, mask=mask, sem="relaxed")
    tl.store(sorted_ids_ptr + slot, offs, mask=mask)


def moe_align_block_size(topk_ids, block_size, num_experts):
    numel = topk_ids.size
    max_padded = numel + num_experts * (block_size - 1)
    sorted_ids = np.empty(max_padded, np.int32)
    expert_ids = np.full(tiles.cdiv(max_padded, block_size), -1, np.int32)
    total = np.empty(1, np.int32)
    _fill[(tiles.cdiv(max_padded, 64),)](sorted_ids, max_padded, numel, BLOCK=64)
    tokens_cnts = np.zeros((num_experts + 1, num_experts), np.int32)
    cumsum = np.zeros(num_experts + 1, np.int32)
    tpt = tiles.cdiv(numel, num_experts)
    grid = (num_experts,)
    _stage1[grid](topk_ids, tokens_cnts, num_experts, numel, tpt)
    if num_experts & (num_experts - 1) == 0:
        _stage2_scan[grid](tokens_cnts, num_experts)
    else:
        _stage2_loop[grid](tokens_cnts, num_experts)
    _stage3[(1,)](total, tokens_cnts, cumsum, num_experts, block_size)
    _stage4[grid](topk_ids, sorted_ids, expert_ids, tokens_cnts, cumsum, num_experts, block_size, numel, tpt)
    return sorted_ids, expert_ids, total, cumsum


def reference(topk_ids, block_size, num_experts):
    flat = topk_ids.reshape(-1)
    ids, experts = [], []
    for e in range(num_experts):
        run = np.flatnonzero(flat == e)
        padded = -(-len(run) // block_size) * block_size
        ids.extend(list(run) + [flat.size] * (padded - len(run)))
        experts.extend([e] * (padded // block_size))
    return np.array(ids, np.int32), np.array(experts, np.int32)


def check(rng):
    for tokens, top_k, num_experts, block_size in ((37, 2, 6, 16), (129, 3, 8, 32), (5, 1, 8, 16)):
        topk_ids = np.stack([rng.choice(num_experts, top_k, replace=False) for _ in range(tokens)]).astype(np.int32)
        if tokens > 5:
            topk_ids[topk_ids == 1] = 0  # an expert nobody routes to
        ref_ids, ref_experts = reference(topk_ids, block_size, num_experts)
        sorted_ids, expert_ids, total, cumsum = moe_align_block_size(topk_ids, block_size, num_experts)
        n = int(total[0])
        close(n, len(ref_ids))
        close(sorted_ids[:n], ref_ids)
        close(sorted_ids[n:], np.full(len(sorted_ids) - n, topk_ids.size, np.int32))
        close(expert_ids[:n // block_size], ref_experts)
        # the atomic placement: same padded runs, any order inside each run
        again = np.empty_like(sorted_ids)
        _fill[(tiles.cdiv(again.size, 64),)](again, again.size, topk_ids.size, BLOCK=64)
        cursor = cumsum[:-1].copy()
        _atomic_place[(tiles.cdiv(topk_ids.size, 32),)](topk_ids, again, cursor, topk_ids.size, BLOCK=32)
        close(cursor, cumsum[:-1] + np.bincount(topk_ids.reshape(-1), minlength=num_experts))
        for e in range(num_experts):
            run = slice(cumsum[e], cumsum[e + 1])
            close(np.sort(again[run]), np.sort(ref_ids[run]))
