"""FlagGems style LSD radix sort, the scatter ("sweep") pass: each program owns a tile of one row and
a range of digit bins; for each bin it publishes its local count in a status word, then walks
back over earlier tiles' status words (*decoupled look-back*) adding their counts until it meets
an inclusive prefix, publishes its own inclusive prefix and scatters its keys (and the associated
indices) to their stable positions.  Every pass is a launch of the same compiled kernel.

Language features exercised: the look-back itself -- ``while i_lookback >= 0:`` around an inner
spin ``while pack1 == 0: pack1 = tl.load(..., volatile=True)`` on words another program stores
with ``cache_modifier=".cg"`` (programs wait on earlier programs of the same launch); uint32 status
words packed with constexpr flag bits ``1 << 30`` / ``1 << 31`` (the latter outside int32) and
``(pack1 & aggregate_mask) == aggregate_mask`` as a scalar ``if`` inside the loop; a loop variable
rebound to the literal ``-1`` to leave; ``tl.zeros((), dtype=tl.uint32)`` accumulators;
``tl.cumsum(matches.to(tl.uint32), axis=0) - matches`` (uint32 minus int1); uint32 offsets added to
pointers; ``tl.where(mask, key == bin_index, False)``; a ``for`` over ``range(cta_r_start,
cta_r_end)`` whose stop is a ``tl.minimum`` of a scalar and a constexpr; ``if associate_arr_ptr is
not None``; order-preserving key maps through ``@tl.constexpr``-decorated Python helpers and
``tl.core.get_int_dtype``; the same-named local ``r: tl.constexpr = 2**k_bits``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


def _unwrap(o):
    return o.value if isinstance(o, tl.constexpr) else o


@tl.constexpr
def uint_type_of(num_bits: tl.constexpr, signed: tl.constexpr) -> tl.dtype:
    return tl.core.get_int_dtype(_unwrap(num_bits), _unwrap(signed))


@tl.constexpr
def high_bit(num_bits: tl.constexpr) -> int:
    return 1 << (_unwrap(num_bits) - 1)


@tiles.jit
def to_ordered_uint(x: tl.tensor, descending: tl.constexpr = False):
    num_bits: tl.constexpr = x.dtype.primitive_bitwidth
    udtype = uint_type_of(num_bits, False)
    if x.dtype.is_floating():
        sdtype = uint_type_of(num_bits, True)
        sx = x.to(sdtype, bitcast=True)
        ux = x.to(udtype, bitcast=True)
        sign = tl.full((), value=high_bit(num_bits), dtype=udtype)
        shift = tl.full((), value=num_bits - 1, dtype=sdtype)
        flip = sign | (sx >> shift).to(udtype, bitcast=True)
        out = ux ^ (~flip) if descending else ux ^ flip
    else:
        ux = tl.cast(x, udtype, bitcast=True)
        sign = tl.full((), value=high_bit(num_bits), dtype=udtype)
        out = ux ^ (~sign) if descending else ux ^ sign
    return out


@tiles.jit
def sweep(arr_ptr, associate_arr_ptr, out_ptr, associate_out_ptr, excumsum_bins_ptr, status_ptr, n_passes,
          pass_id, bit_offset, m, N, OUT_N, TILE_N: tl.constexpr, TILE_R: tl.constexpr, k_bits: tl.constexpr,
          descending: tl.constexpr):
    pid = tl.program_id(0)
    pid_m = pid % m
    pid_n = pid // m
    pid_r = tl.program_id(1)
    aggregate_mask: tl.constexpr = 1 << 30
    inclusive_prefix_mask: tl.constexpr = 1 << 31
    v_mask: tl.constexpr = (1 << 30) - 1
    bfe_mask: tl.constexpr = (1 << k_bits) - 1
    r: tl.constexpr = 2**k_bits
    cta_r_start = pid_r * TILE_R
    cta_r_end = tl.minimum(cta_r_start + TILE_R, r)
    n_offsets = pid_n * TILE_N + tl.arange(0, TILE_N)
    mask = n_offsets < N
    arr = tl.load(arr_ptr + pid_m * N + n_offsets, mask=mask)
    key = (to_ordered_uint(arr, descending) >> bit_offset) & bfe_mask
    for bin_index in range(cta_r_start, cta_r_end):
        matches = tl.where(mask, key == bin_index, False)
        local_sum = tl.sum(matches.to(tl.uint32), axis=0)
        status_offset = pid_m * (r * OUT_N) + bin_index * OUT_N + pid_n
        tl.store(status_ptr + status_offset, aggregate_mask | local_sum, cache_modifier=".cg")
        exclusive_prefix = tl.zeros((), dtype=tl.uint32)
        i_lookback = pid_n - 1
        while i_lookback >= 0:
            flag_offset_i = pid_m * (r * OUT_N) + bin_index * OUT_N + i_lookback
            pack1 = tl.load(status_ptr + flag_offset_i, volatile=True)
            while pack1 == 0:
                pack1 = tl.load(status_ptr + flag_offset_i, volatile=True)
            exclusive_prefix += pack1 & v_mask
            if (pack1 & aggregate_mask) == aggregate_mask:
                i_lookback -= 1
            else:
                i_lookback = -1
        tl.store(status_ptr + status_offset, inclusive_prefix_mask | (exclusive_prefix + local_sum),
                 cache_modifier=".cg")
        local_ex_cumsum = tl.cumsum(matches.to(tl.uint32), axis=0) - matches
        ex_cumsum_bins = tl.load(excumsum_bins_ptr + pid_m * (n_passes * r) + pass_id * r + bin_index)
        pos = ex_cumsum_bins + (exclusive_prefix + local_ex_cumsum)
        tl.store(out_ptr + pid_m * N + pos, arr, mask=matches)
        if associate_arr_ptr is not None:
            associate_arr = tl.load(associate_arr_ptr + pid_m * N + n_offsets, mask=mask)
            tl.store(associate_out_ptr + pid_m * N + pos, associate_arr, mask=matches)


def _ordered_keys(a, descending):
    bits = a.view(np.uint32)
    if a.dtype.kind == "f":
        flip = np.where(bits >> 31 == 1, np.uint32(0xFFFFFFFF), np.uint32(0x80000000)).astype(np.uint32)
    else:
        flip = np.full(bits.shape, 0x80000000, np.uint32)
    if descending:
        flip = ~flip
    return bits ^ flip


def _radix_sort(arr, k_bits, descending, with_indices):
    m, n = arr.shape
    tile_n, tile_r = 64, 8
    bins = 2**k_bits
    n_passes = -(-32 // k_bits)
    keys = _ordered_keys(arr, descending)
    digits = np.stack([(keys >> (p * k_bits)) & (bins - 1) for p in range(n_passes)], 1)  # (m, passes, n)
    hist = np.stack([(digits == b).sum(-1) for b in range(bins)], -1)
    ex_cumsum = (np.cumsum(hist, -1) - hist).astype(np.uint32)
    grid_n = -(-n // tile_n)
    grid = (m * grid_n, -(-bins // tile_r))
    a_in = arr.copy()
    i_in = np.broadcast_to(np.arange(n, dtype=np.int64), (m, n)).copy() if with_indices else None
    a_out = np.empty_like(arr)
    i_out = np.empty((m, n), np.int64) if with_indices else None
    status = np.empty((m, bins, grid_n), np.uint32)
    for p in range(n_passes):
        status[:] = 0
        sweep[grid](a_in, i_in, a_out, i_out, ex_cumsum, status, n_passes, p, p * k_bits, m, n, grid_n,
                    tile_n, tile_r, k_bits, descending)
        a_in, a_out = a_out, a_in
        i_in, i_out = i_out, i_in
    return a_in, i_in, keys


def check(rng):
    # Programs of one launch spin on ``tl.load(..., volatile=True)`` until a lower-numbered program
    # publishes: the load must read memory on every turn of the spin (it hung on OpenCL when it did not).
    m, n = 2, 300
    x = (rng.standard_normal((m, n)) * 10).astype(np.float32)
    x[0, :6] = [np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-40]
    x[1, 10:40] = 1.5  # a run of equal keys: stability
    for descending in (False, True):
        vals, idx, keys = _radix_sort(x, 4, descending, True)
        order = np.argsort(keys, axis=1, kind="stable")
        close(idx, order)
        close(vals.view(np.uint32), np.take_along_axis(x, order, 1).view(np.uint32))
    y = rng.integers(-(2**31), 2**31 - 1, (m, n), dtype=np.int64).astype(np.int32)
    y[0, :2] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max]
    vals, idx, _ = _radix_sort(y, 4, False, False)
    close(vals, np.sort(y, axis=1))
    assert idx is None
