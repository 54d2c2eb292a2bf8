"""PyTorch Inductor's generated-kernel style: ``xoffset``/``xindex[:, None]``/``r0_index[None, :]``
indexing, an embedding lookup whose negative ids wrap (``tl.where(tmp < 0, tmp + N, tmp)``) checked
by ``tl.device_assert(... | ~xmask, "index out of bounds: ...")``, a looped online reduction over
``r0`` with ``tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)`` accumulators merged by
``tl.where(r0_mask & xmask, ...)``, helper functions in the style of ``triton_helpers``
(``maximum`` through ``tl.reduce`` with a combine function, ``promote_to_tensor``), loads with
``eviction_policy='evict_last'``/``'evict_first'``, ``libdevice.exp``/``log`` and a persistent
row split ``x0 = xindex % 7; x1 = xindex // 7``.  The result: log-softmax of the gathered rows
scaled per (x1, x0) position."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra import libdevice


@tiles.jit
def promote_to_tensor(x):
    return x + tl.zeros((1,), tl.int1)


@tiles.jit
def _maximum(a, b):
    mask = a > b
    if a.dtype.is_floating():
        mask |= a != a
    return tl.where(mask, a, b)


@tiles.jit
def max2(a, dim):
    return tl.reduce(a, dim, _maximum)


@tiles.jit
def triton_red_fused_embedding_log_softmax_0(in_ptr0, in_ptr1, in_ptr2, out_ptr2, xnumel, r0_numel,
                                             XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    x3 = xindex
    x0 = xindex % 7
    tmp0 = tl.load(in_ptr0 + (x3), xmask, eviction_policy="evict_last")
    tmp1 = tl.full([XBLOCK, 1], 1031, tl.int64)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.device_assert(((0 <= tmp4) & (tmp4 < 1031)) | ~(xmask), "index out of bounds: 0 <= tmp4 < 1031")
    _tmp_max = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        tmp6 = tl.load(in_ptr1 + (r0_index + r0_numel * tmp4), r0_mask & xmask, eviction_policy="evict_last",
                       other=0.0)
        tmp7 = tl.broadcast_to(tmp6, [XBLOCK, R0_BLOCK])
        tmp9 = _maximum(_tmp_max, tmp7)
        _tmp_max = tl.where(r0_mask & xmask, tmp9, _tmp_max)
    tmp_max = max2(_tmp_max, 1)[:, None]
    _tmp_sum = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        tmp10 = tl.load(in_ptr1 + (r0_index + r0_numel * tmp4), r0_mask & xmask, eviction_policy="evict_last",
                        other=0.0)
        tmp12 = libdevice.exp(tmp10 - tmp_max)
        tmp13 = tl.broadcast_to(tmp12, [XBLOCK, R0_BLOCK])
        _tmp_sum = tl.where(r0_mask & xmask, _tmp_sum + tmp13, _tmp_sum)
    tmp_sum = tl.sum(_tmp_sum, 1)[:, None]
    tmp_scale = tl.load(in_ptr2 + (x0), xmask, eviction_policy="evict_first")
    tmp_flag = promote_to_tensor(tmp_scale < 0)
    for r0_offset in range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        tmp14 = tl.load(in_ptr1 + (r0_index + r0_numel * tmp4), r0_mask & xmask, eviction_policy="evict_first",
                        other=0.0)
        tmp16 = tmp14 - tmp_max - libdevice.log(tmp_sum)
        tmp17 = tl.where(tmp_flag, 0.0, tmp16 * tmp_scale)
        tl.store(out_ptr2 + (r0_index + r0_numel * x3), tmp17, r0_mask & xmask)


def check(rng):
    vocab, hidden, n_tokens = 1031, 333, 7 * 6 + 3
    table = (rng.standard_normal((vocab, hidden)) * 3).astype(np.float32)
    table[5, :10] = 40.0  # large logits: the max subtraction matters
    ids = rng.integers(-vocab, vocab, n_tokens).astype(np.int64)
    ids[:3] = [-1, -vocab, vocab - 1]
    scale = rng.uniform(0.5, 2.0, 7).astype(np.float32)
    scale[4] = -1.0  # a negative scale zeroes its column of tokens
    out = np.empty((n_tokens, hidden), np.float32)
    grid = lambda meta: (tiles.cdiv(n_tokens, meta["XBLOCK"]),)  # noqa: E731
    triton_red_fused_embedding_log_softmax_0[grid](ids, table, scale, out, n_tokens, hidden, XBLOCK=4, R0_BLOCK=64,
                                                   num_warps=2)
    rows = table[np.where(ids < 0, ids + vocab, ids)].astype(np.float64)
    logp = rows - rows.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    s = scale[np.arange(n_tokens) % 7][:, None]
    close(out, np.where(s < 0, 0.0, logp * s), rtol=1e-5, atol=1e-4)
