"""FlagGems style ``torch.cummax`` over a flat tensor: ``tl.associative_scan`` over a (value,
index) *tuple* with a combine function that prefers the right index on ties and treats NaN as
largest and equal to itself, written with ``|=`` on masks, ``a_isnan and not b_isnan`` and an
``if is_floating(a_value):`` whose condition is a ``@jit`` helper returning
``promote_to_tensor(x).dtype.is_floating()`` (``x + tl.zeros((1,), tl.int1)``); the padding
value from ``get_dtype_min(inp.type.element_ty)``, a helper that reads ``dtype.value`` and
returns a local ``value: tl.constexpr`` from inside ``if`` branches; dtype dispatch by
``tl.constexpr(x.dtype.is_int64())``-style predicates; per-block partial maxima from
``tl.reduce(..., keep_dims=False)`` with the same combine function, a name bound under one
``if tl.constexpr(NEED_PARTIAL)`` and used under another; the partials scanned by a second launch
of the same kernel (``USE_OUT_INDICES``), then added back under a runtime ``if pid > 0``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def promote_to_tensor(x):
    return x + tl.zeros((1,), tl.int1)


@tiles.jit
def is_floating(x):
    return promote_to_tensor(x).dtype.is_floating()


@tiles.jit
def maximum_with_index_tie_break_right(a_value, a_index, b_value, b_index):
    mask = a_value > b_value
    equal = a_value == b_value
    if is_floating(a_value):
        a_isnan = a_value != a_value
        b_isnan = b_value != b_value
        mask |= a_isnan and not b_isnan
        equal |= a_isnan and b_isnan
    mask |= equal & (a_index > b_index)
    return tl.where(mask, a_value, b_value), tl.where(mask, a_index, b_index)


@tiles.jit
def get_dtype_min(dtype):
    dtype_ = dtype.value
    if dtype_.is_floating():
        value: tl.constexpr = float("-inf")
        return value
    if dtype_.is_int_signed():
        width: tl.constexpr = dtype_.int_bitwidth
        value: tl.constexpr = -1 * 2 ** (width - 1)
        return value
    if dtype_.is_int_unsigned():
        value: tl.constexpr = 0
        return value


@tiles.jit
def tl_cummax(input, index, axis=0):
    return tl.associative_scan((input, index), axis, maximum_with_index_tie_break_right)


@tiles.jit
def tl_max_tie_break_right(input, index, axis=None, keep_dims=False):
    return tl.reduce((input, index), axis, maximum_with_index_tie_break_right, keep_dims=keep_dims)


@tiles.jit(do_not_specialize=["n_elements"])
def scan_part_max_kernel(inp, out, out_indices, partial_max, partial_max_indices, n_elements,
                         BLOCK_SIZE: tl.constexpr, NEED_PARTIAL: tl.constexpr, USE_OUT_INDICES: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offset = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offset < n_elements
    min_value = get_dtype_min(inp.type.element_ty)
    inp_vals = tl.load(inp + offset, mask=mask, other=min_value)
    if (tl.constexpr(inp_vals.dtype.is_int64()) or tl.constexpr(inp_vals.dtype.is_uint64())) or \
            tl.constexpr(inp_vals.dtype.is_fp64()):
        inp_vals = inp_vals
    elif tl.constexpr(inp_vals.dtype.is_int()):
        inp_vals = inp_vals.to(tl.int32)
    else:
        inp_vals = inp_vals.to(tl.float32)
    if tl.constexpr(USE_OUT_INDICES):
        in_indices_vals = tl.load(out_indices + offset, mask=mask)
    else:
        in_indices_vals = offset
    result, cummax_indices = tl_cummax(inp_vals, in_indices_vals, axis=0)
    if tl.constexpr(NEED_PARTIAL):
        part_max, part_max_index = tl_max_tie_break_right(inp_vals, in_indices_vals, axis=0)
    tl.store(out + offset, result, mask=mask)
    tl.store(out_indices + offset, cummax_indices, mask=mask)
    if tl.constexpr(NEED_PARTIAL):
        tl.store(partial_max + pid, part_max)
        tl.store(partial_max_indices + pid, part_max_index)


@tiles.jit(do_not_specialize=["n_elements"])
def add_base_max_kernel(out, out_indices, partial_max, partial_max_indices, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    offset = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offset < n_elements
    out_vals = tl.load(out + offset, mask=mask)
    out_idx = tl.load(out_indices + offset, mask=mask)
    if pid > 0:
        base = tl.load(partial_max + pid - 1)
        base_index = tl.load(partial_max_indices + pid - 1)
        tl.store(out + offset, tl.maximum(out_vals, base).to(out_vals.dtype), mask=mask)
        tl.store(out_indices + offset, tl.where(out_vals >= base, out_idx, base_index), mask=mask)


def cummax(x, block):
    n = x.size
    out = np.empty_like(x)
    idx = np.empty(n, np.int64)
    parts = tiles.cdiv(n, block)
    if parts == 1:
        scan_part_max_kernel[(1,)](x, out, idx, None, None, n, BLOCK_SIZE=block, NEED_PARTIAL=False,
                                   USE_OUT_INDICES=False)
        return out, idx
    pmax = np.empty(parts, x.dtype)
    pidx = np.empty(parts, np.int64)
    scan_part_max_kernel[(parts,)](x, out, idx, pmax, pidx, n, BLOCK_SIZE=block, NEED_PARTIAL=True,
                                   USE_OUT_INDICES=False)
    scanned = np.empty_like(pmax)
    scan_part_max_kernel[(1,)](pmax, scanned, pidx, None, None, parts, BLOCK_SIZE=tiles.next_power_of_2(parts),
                               NEED_PARTIAL=False, USE_OUT_INDICES=True)
    add_base_max_kernel[(parts,)](out, idx, scanned, pidx, n, BLOCK_SIZE=block)
    return out, idx


def _reference(x):
    vals, idx = np.empty_like(x), np.empty(x.size, np.int64)
    best, at = None, 0
    for i, v in enumerate(x):
        if best is None or (np.isnan(v) if np.isnan(best) else (np.isnan(v) or v >= best)):
            best, at = v, i
        vals[i], idx[i] = best, at
    return vals, idx


def check(rng):
    x = rng.integers(-30, 30, 100).astype(np.float32) / 4  # many ties: the right index wins
    x[[40, 77]] = np.nan
    x[10] = -np.inf
    out, idx = cummax(x, 128)
    r_out, r_idx = _reference(x)
    close(out, r_out, rtol=0, atol=0)
    close(idx, r_idx)
    y = rng.integers(-2000, 2000, 1000).astype(np.int16)
    y[0] = np.iinfo(np.int16).min
    y[500] = np.iinfo(np.int16).max
    out, idx = cummax(y, 128)
    r_out, r_idx = _reference(y)
    close(out, r_out)
    close(idx, r_idx)
    z = rng.standard_normal(777).astype(np.float32)
    z[300:310] = z[299]
    out, idx = cummax(z, 64)
    r_out, r_idx = _reference(z)
    close(out, r_out, rtol=0, atol=0)
    close(idx, r_idx)
