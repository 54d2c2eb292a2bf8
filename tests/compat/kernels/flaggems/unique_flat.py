"""FlagGems style ``torch.unique(sorted=True, return_inverse=True, return_counts=True)`` on a
small flat tensor: one program over the host-sorted data marks where a value differs from its
predecessor, prefix-sums the marks into output slots, scatters values, inverse indices and first
positions; a grid-stride kernel then differences the first positions into counts.

Language features exercised: FlagGems' annotated signatures (``ptr: tl.tensor``, ``num_tasks:
int``, ``origin_num_tasks: int`` on a ``@jit`` helper called per tile); ``tl.where(i0 > 0, a != b,
0)`` mixing an ``int1`` tensor and a Python int; ``tl.cumsum`` with no axis; a store to
``ptr + tl.zeros_like(i0)`` where the mask keeps only the last lane (``i0 == tile_size - 1``); a
store whose addresses come from the prefix sum (several lanes hitting one slot with equal values);
an ``int1`` recovered by ``ne_result.to(tl.int1)`` and or-ed with ``i0 == 0``; constexpr booleans
from positional arguments; ``tl.where(i0_next < num_tasks, idx_next - idx, origin_num_tasks - idx)``
on int64 loads; ``tl.where(global_pid > 0, 1, 0)`` on a scalar. The single-tile kernel pads to a
power of two and, as in FlagGems, relies on masked loads without ``other`` reading zero."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def simple_unique_flat_kernel(
    sorted_data_ptr: tl.tensor,
    sorted_indices_ptr: tl.tensor,  # in
    data_out_ptr: tl.tensor,
    inverse_indices_ptr: tl.tensor,
    idx_ptr: tl.tensor,
    unique_size_ptr: tl.tensor,  # out
    return_inverse: tl.constexpr,
    return_counts: tl.constexpr,
    num_tasks: int,
    tile_size: tl.constexpr,
):
    i0 = tl.arange(0, tile_size)
    mask = i0 < num_tasks
    a = tl.load(sorted_data_ptr + i0, mask=mask)
    i0_prev = tl.where(i0 > 0, i0 - 1, 0)
    b = tl.load(sorted_data_ptr + i0_prev, mask=mask)
    ne_result = tl.where(i0 > 0, a != b, 0)
    cumsum = tl.cumsum(ne_result)
    tl.store(unique_size_ptr + tl.zeros_like(i0), cumsum, mask=i0 == tile_size - 1)
    tl.store(data_out_ptr + cumsum, a, mask=mask)
    if return_inverse:
        sorted_indices = tl.load(sorted_indices_ptr + i0, mask=mask)
        tl.store(inverse_indices_ptr + sorted_indices, cumsum, mask=mask)
    if return_counts:
        idx_mask = ((i0 == 0) | ne_result.to(tl.int1)) & mask
        tl.store(idx_ptr + cumsum, i0, mask=idx_mask)


@tiles.jit
def output_counts_flat_impl(
    global_pid,
    idx_ptr: tl.tensor,
    origin_num_tasks: int,  # in
    counts_ptr: tl.tensor,  # out
    num_tasks: int,
    tile_size: tl.constexpr,
):
    i0 = global_pid * tile_size + tl.arange(0, tile_size)
    mask = i0 < num_tasks
    idx = tl.load(idx_ptr + i0, mask=mask)
    i0_next = i0 + 1
    idx_next = tl.load(idx_ptr + i0_next, mask=i0_next < num_tasks)
    counts = tl.where(i0_next < num_tasks, idx_next - idx, origin_num_tasks - idx)
    # a first-tile marker the way the multi-tile FlagGems path offsets its local ids
    counts = counts + tl.where(global_pid > 0, 1, 0) - tl.where(global_pid > 0, 1, 0)
    tl.store(counts_ptr + i0, counts, mask=mask)


@tiles.jit
def output_counts_flat_kernel(
    idx_ptr: tl.tensor,
    origin_num_tasks: int,  # in
    counts_ptr: tl.tensor,  # out
    num_tasks: int,
    tiles_per_cta: int,
    tile_size: tl.constexpr,
):
    pid = tl.program_id(0)
    ctas_num = tl.num_programs(0)
    for j in range(0, tiles_per_cta):
        global_pid = pid + j * ctas_num
        output_counts_flat_impl(global_pid, idx_ptr, origin_num_tasks, counts_ptr, num_tasks, tile_size)


def _unique_ref(sorted_data, order):
    n = len(sorted_data)
    ne = np.zeros(n, np.int64)
    ne[1:] = sorted_data[1:] != sorted_data[:-1]
    cs = np.cumsum(ne)
    size = int(cs[-1]) + 1
    first = np.flatnonzero(np.concatenate([[True], ne[1:].astype(bool)]))
    inverse = np.empty(n, np.int64)
    inverse[order] = cs
    counts = np.diff(np.concatenate([first, [n]]))
    return sorted_data[first], inverse, first, counts, size


def check(rng):
    n = 45
    cases = [rng.integers(-4, 5, n).astype(np.int32)]
    f = rng.choice(np.array([-1.5, 0.25, 3.0, np.inf, -np.inf], np.float32), n)
    f[[3, 17]] = np.nan
    cases.append(f)
    for data in cases:
        order = np.argsort(data, kind="stable").astype(np.int64)
        s = data[order]
        out = np.full(n, 99, data.dtype)
        inverse = np.full(n, -1, np.int64)
        idx = np.full(n, -1, np.int64)
        size = np.full(1, -1, np.int64)
        simple_unique_flat_kernel[(1, 1, 1)](s, order, out, inverse, idx, size, True, True, n, tile_size=64)
        vals, inv_ref, first_ref, counts_ref, size_ref = _unique_ref(s, order)
        assert int(size[0]) + 1 == size_ref, (size, size_ref)
        close(out[:size_ref], vals)
        close(inverse, inv_ref)
        close(idx[:size_ref], first_ref)
        counts = np.full(size_ref, -1, np.int64)
        first = np.ascontiguousarray(idx[:size_ref])
        tile = 4
        n_tiles = -(-size_ref // tile)
        ctas = 2
        output_counts_flat_kernel[(ctas,)](first, n, counts, size_ref, -(-n_tiles // ctas), tile_size=tile)
        close(counts, counts_ref)
        assert counts.sum() == n
