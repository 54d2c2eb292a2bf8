"""FlagGems style radix-sort front end: keys mapped to order-preserving unsigned integers and the
per-pass digit histograms counted.  Exercises plain Python helpers decorated with
``@tl.constexpr`` and called from ``@jit`` code (``get_int_t(num_bits, False)`` building a dtype
with ``tl.core.get_int_dtype``, bit-mask constants), ``x.dtype.primitive_bitwidth`` in a local
``tl.constexpr``, ``tl.cast(x, udtype, bitcast=True)``, 0-d ``tl.full((), value=..., dtype=...)``
masks, an arithmetic ``>>`` on a signed view to smear the sign bit, ``~x if descending else x``
on a constexpr, dispatch by ``x.dtype.is_floating()`` / ``is_int_signed()`` / ``is_int_unsigned()``
in an ``if``/``elif`` chain, and ``tl.static_assert(mask.dtype == udtype, ...)``.  The histogram
kernel: CTAs own column ranges (``tl.minimum`` on scalars bounds a ``range`` with tensor
start/stop), a [TILE_R, TILE_N] one-hot comparison summed to int64 and
``tl.atomic_add(..., sem="relaxed")``-ed into (m, passes, 2^bits) counters."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


def unwrap_if_constexpr(o):
    return o.value if isinstance(o, tl.constexpr) else o


@tl.constexpr
def get_int_t(num_bits: tl.constexpr, signed: tl.constexpr) -> tl.dtype:
    return tl.core.get_int_dtype(unwrap_if_constexpr(num_bits), unwrap_if_constexpr(signed))


@tl.constexpr
def one_zeros(num_bits: tl.constexpr) -> int:
    return 1 << (unwrap_if_constexpr(num_bits) - 1)


@tl.constexpr
def zero_ones(num_bits: tl.constexpr) -> int:
    return (1 << (unwrap_if_constexpr(num_bits) - 1)) - 1


@tiles.jit
def uint_to_uint(x, descending: tl.constexpr = False):
    return ~x if descending else x


@tiles.jit
def int_to_uint(x, descending: tl.constexpr = False):
    num_bits: tl.constexpr = x.dtype.primitive_bitwidth
    udtype = get_int_t(num_bits, False)
    ux = tl.cast(x, udtype, bitcast=True)
    if descending:
        out = ux ^ tl.full((), value=zero_ones(num_bits), dtype=udtype)
    else:
        out = ux ^ tl.full((), value=one_zeros(num_bits), dtype=udtype)
    return out


@tiles.jit
def floating_to_uint(x, descending: tl.constexpr = False):
    num_bits: tl.constexpr = x.dtype.primitive_bitwidth
    sdtype = get_int_t(num_bits, True)
    udtype = get_int_t(num_bits, False)
    sx = x.to(sdtype, bitcast=True)
    ux = x.to(udtype, bitcast=True)
    sign_bit = tl.full((), value=one_zeros(num_bits), dtype=udtype)
    rshift_bits = tl.full((), value=num_bits - 1, dtype=sdtype)
    mask = sign_bit | (sx >> rshift_bits).to(udtype, bitcast=True)
    tl.static_assert(mask.dtype == udtype, "type mismatch")
    if descending:
        out = ux ^ (~mask)
    else:
        out = ux ^ mask
    return out.to(udtype, bitcast=True)


@tiles.jit
def convert_to_uint_preserve_order(x: tl.tensor, descending: tl.constexpr = False):
    if x.dtype.is_floating():
        out = floating_to_uint(x, descending)
    elif x.dtype.is_int_signed():
        out = int_to_uint(x, descending)
    elif x.dtype.is_int_unsigned():
        out = uint_to_uint(x, descending)
    return out


@tiles.jit
def to_sortable_kernel(x_ptr, out_ptr, n, descending: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, convert_to_uint_preserve_order(x, descending), mask=offs < n)


@tiles.jit
def compute_global_hist_kernel(arr_ptr, out_ptr, num_passes, m, n, tiles_n_per_cta, TILE_N: tl.constexpr,
                               TILE_R: tl.constexpr, num_bits_per_pass: tl.constexpr, descending: tl.constexpr):
    pid = tl.program_id(0)
    pid_n = pid // m
    pid_m = pid % m
    r: tl.constexpr = 2**num_bits_per_pass
    bfe_mask: tl.constexpr = (1 << num_bits_per_pass) - 1
    cta_tile_n = TILE_N * tiles_n_per_cta
    cta_n_start = cta_tile_n * pid_n
    cta_n_end = tl.minimum(cta_n_start + cta_tile_n, n)
    for p in range(0, num_passes):
        bit_offset = p * num_bits_per_pass
        for r_start in range(0, r, TILE_R):
            bin_indices = r_start + tl.arange(0, TILE_R)
            acc = tl.zeros((TILE_R, TILE_N), dtype=tl.int64)
            for n_start in range(cta_n_start, cta_n_end, TILE_N):
                n_offsets = n_start + tl.arange(0, TILE_N)
                mask = n_offsets < cta_n_end
                arr = tl.load(arr_ptr + pid_m * n + n_offsets, mask=mask)
                key = (convert_to_uint_preserve_order(arr, descending) >> bit_offset) & bfe_mask
                acc += tl.where(mask, bin_indices[:, None] == key, False)
            tl.atomic_add(out_ptr + pid_m * num_passes * r + p * r + bin_indices, tl.sum(acc, axis=1), sem="relaxed")


def _sortable_ref(x, descending):
    bits = x.dtype.itemsize * 8
    u = np.dtype(f"uint{bits}")
    ux = x.view(u)
    if x.dtype.kind == "f":
        neg = (ux >> u.type(bits - 1)).astype(bool)
        mask = np.where(neg, u.type(np.iinfo(u).max), u.type(1 << (bits - 1)))
        return ux ^ (~mask if descending else mask)
    if x.dtype.kind == "i":
        return ux ^ u.type((1 << (bits - 1)) - 1 if descending else 1 << (bits - 1))
    return ~ux if descending else ux


def check(rng):
    n = 300
    cases = [rng.standard_normal(n).astype(np.float32), rng.integers(-2**31, 2**31 - 1, n).astype(np.int32),
             rng.integers(0, 2**16, n).astype(np.uint16), rng.standard_normal(n).astype(np.float16)]
    cases[0][:6] = [0.0, -0.0, np.inf, -np.inf, 1e-45, -1e-45]
    cases[1][:2] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max]
    for x in cases:
        for descending in (False, True):
            keys = np.empty(n, np.dtype(f"uint{x.dtype.itemsize * 8}"))
            to_sortable_kernel[(tiles.cdiv(n, 128),)](x, keys, n, descending, BLOCK=128)
            ref = _sortable_ref(x, descending)
            close(keys, ref)
            order = np.argsort(keys, kind="stable")
            vals = x[order].astype(np.float64)
            assert (np.diff(vals) <= 0).all() if descending else (np.diff(vals) >= 0).all()
    m, n, bits = 3, 201, 4
    for x, descending in ((rng.standard_normal((m, n)).astype(np.float32), False),
                          (rng.integers(-1000, 1000, (m, n)).astype(np.int16), True)):
        width = x.dtype.itemsize * 8
        passes = width // bits
        hist = np.zeros((m, passes, 2**bits), np.int64)
        tiles_n_per_cta = 2
        ctas_n = tiles.cdiv(n, 32 * tiles_n_per_cta)
        compute_global_hist_kernel[(m * ctas_n,)](x, hist, passes, m, n, tiles_n_per_cta, TILE_N=32, TILE_R=8,
                                                  num_bits_per_pass=bits, descending=descending)
        keys = _sortable_ref(x, descending).astype(np.uint64)
        ref = np.stack([np.stack([np.bincount((keys[i] >> np.uint64(p * bits)).astype(np.int64) & (2**bits - 1),
                                              minlength=2**bits) for p in range(passes)]) for i in range(m)])
        close(hist, ref)
