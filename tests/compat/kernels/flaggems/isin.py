"""FlagGems style ``torch.isin`` two ways, each a grid-stride loop (``tiles_per_cta`` rounds of
``pid + j * num_programs``) calling a ``@jit`` helper whose parameters carry annotations
(``ptr: tl.tensor``, ``M: int``) and which receives constexprs positionally.  By comparison: a
[BLOCK_M, BLOCK_N] bool tile started with ``tl.full(..., value=(1 if invert else 0),
dtype=tl.int1)``, built with Python ``and``/``or`` on tensors inside ``tl.where(invert, ...)``
on a constexpr condition, pointers broadcast by adding ``tl.zeros`` rows/columns, and reduced
with ``tl.reduce`` whose ``combine_fn`` is picked by a conditional expression between two
``@jit`` combiners (``a or b`` / ``a and b``).  By binary search over a sorted second input:
``tl.zeros_like(r).to(tl.int1)`` flags, a fixed ``log_n`` trip count, masked loads without
``other``, and the result stored as ``not out if invert else out``.  NaN never matches, -0.0
matches 0.0, int32 extremes included."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def reduce_any(a, b):
    return a or b


@tiles.jit
def reduce_all(a, b):
    return a and b


@tiles.jit
def isin_by_comparation_impl(global_pid, in0_ptr: tl.tensor, in1_ptr: tl.tensor, out_ptr: tl.tensor, M: int, N: int,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, invert: tl.constexpr):
    rows = global_pid * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    row_mask = rows < M
    out_ptr += rows
    in0_ptr += rows + tl.zeros([BLOCK_N], dtype=tl.int32)
    in1_ptr += tl.zeros([BLOCK_M], dtype=tl.int32)[:, None]
    block = tl.full([BLOCK_M, BLOCK_N], value=(1 if invert else 0), dtype=tl.int1)
    in0 = tl.load(in0_ptr, row_mask, other=0)
    for col_off in range(0, N, BLOCK_N):
        cols = col_off + tl.arange(0, BLOCK_N)[None, :]
        mask = row_mask and cols < N
        in1 = tl.load(in1_ptr + cols, mask, other=0)
        block = tl.where(mask, tl.where(invert, block and (in0 != in1), block or (in0 == in1)), block)
    out = tl.reduce(block, axis=1, combine_fn=(reduce_all if invert else reduce_any))
    tl.store(out_ptr, out[:, None], row_mask)


@tiles.jit
def isin_by_comparation_kernel(in0_ptr: tl.tensor, in1_ptr: tl.tensor, out_ptr: tl.tensor, M: int, N: int,
                               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, tiles_per_cta: int,
                               invert: tl.constexpr):
    pid = tl.program_id(0)
    ctas_num = tl.num_programs(0)
    for j in range(0, tiles_per_cta):
        isin_by_comparation_impl(pid + j * ctas_num, in0_ptr, in1_ptr, out_ptr, M, N, BLOCK_M, BLOCK_N, invert)


@tiles.jit
def isin_by_search_impl(global_pid, in0_ptr: tl.tensor, in1_sorted_ptr: tl.tensor, out_ptr: tl.tensor, M: int,
                        N: int, log_n: tl.constexpr, BLOCK_M: tl.constexpr, invert: tl.constexpr):
    r = tl.arange(0, BLOCK_M)
    i0 = global_pid * BLOCK_M + r
    mask = i0 < M
    value = tl.load(in0_ptr + i0, mask=mask)
    out = tl.zeros_like(r).to(tl.int1)
    start = tl.zeros_like(r)
    end = start + N
    active = start < end
    for _ in range(log_n):
        mid = tl.where(active, start + (end - start) // 2, 0)
        mid_val = tl.load(in1_sorted_ptr + mid, mask=active)
        out = tl.where(active, out or (mid_val == value), out)
        start = tl.where(active and (mid_val < value), mid + 1, start)
        end = tl.where(active and (mid_val > value), mid, end)
        active = start < end
    tl.store(out_ptr + i0, not out if invert else out, mask=mask)


@tiles.jit
def isin_by_search_kernel(in0_ptr: tl.tensor, in1_sorted_ptr: tl.tensor, out_ptr: tl.tensor, M: int, N: int,
                          log_n: tl.constexpr, BLOCK_M: tl.constexpr, tiles_per_cta: int, invert: tl.constexpr):
    pid = tl.program_id(0)
    ctas_num = tl.num_programs(0)
    for j in range(0, tiles_per_cta):
        isin_by_search_impl(pid + j * ctas_num, in0_ptr, in1_sorted_ptr, out_ptr, M, N, log_n, BLOCK_M, invert)


def isin_by_comparation(in0, in1, invert, ctas=3, block_m=16, block_n=32):
    M, N = in0.size, in1.size
    tiles_per_cta = tiles.cdiv(M, block_m * ctas)
    out = np.empty(M, np.bool_)
    isin_by_comparation_kernel[(ctas,)](in0.ravel(), in1.ravel(), out, M, N, block_m, block_n,
                                        tiles_per_cta=tiles_per_cta, invert=invert)
    return out.reshape(in0.shape)


def isin_by_search(in0, in1, invert, ctas=2, block_m=64):
    in1_sorted = np.sort(in1.ravel())
    M, N = in0.size, in1_sorted.size
    log_n = int(np.log2(N)) + 1
    out = np.empty(M, np.bool_)
    isin_by_search_kernel[(ctas,)](in0.ravel(), in1_sorted, out, M, N, log_n, block_m,
                                   tiles_per_cta=tiles.cdiv(M, block_m * ctas), invert=invert)
    return out.reshape(in0.shape)


def check(rng):
    a = rng.integers(-20, 20, (9, 13)).astype(np.float32) / 2
    a[0, :4] = [np.nan, -0.0, np.inf, -np.inf]
    b = rng.integers(-20, 20, 45).astype(np.float32) / 2
    b[:3] = [np.nan, 0.0, np.inf]
    for invert in (False, True):
        expected = np.isin(a, b, invert=invert)  # NaN is in nothing; -0.0 == 0.0
        close(isin_by_comparation(a, b, invert), expected)
        close(isin_by_search(a, b[1:], invert), np.isin(a, b[1:], invert=invert))
    ai = rng.integers(-1000, 1000, 301).astype(np.int32)
    bi = rng.integers(-1000, 1000, 77).astype(np.int32)
    ai[:3] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max, 0]
    bi[:2] = [np.iinfo(np.int32).max, 0]
    for invert in (False, True):
        expected = np.isin(ai, bi, invert=invert)
        close(isin_by_comparation(ai, bi, invert), expected)
        close(isin_by_search(ai, bi, invert), expected)
    single = np.array([5], np.int32)
    close(isin_by_search(ai, single, False), np.isin(ai, single))
