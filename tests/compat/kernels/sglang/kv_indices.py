"""SGLang style ``create_flashinfer_kv_indices_triton``: one program per request copies its token
slots out of the ``req_to_token`` pool row (picked through ``req_pool_indices``, starting at an
optional per-request offset: ``kv_start_idx`` or ``None``, branched on with ``is not None`` in the
kernel) into a flat buffer at ``kv_indptr[pid]``, in ``tl.range`` chunks with masked tails."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _kv_indices(req_to_token_ptr, req_pool_indices_ptr, page_kernel_lens_ptr, kv_indptr, kv_start_idx,
                kv_indices_ptr, req_to_token_stride: tl.constexpr, BLOCK_SIZE: tl.constexpr = 32):
    pid = tl.program_id(axis=0)
    req_pool_index = tl.load(req_pool_indices_ptr + pid)
    kv_indices_offset = tl.load(kv_indptr + pid)
    kv_start = 0
    kv_end = 0
    if kv_start_idx is not None:
        kv_start = tl.load(kv_start_idx + pid).to(tl.int32)
        kv_end = kv_start
    kv_end += tl.load(page_kernel_lens_ptr + pid).to(tl.int32)
    num_loop = tl.cdiv(kv_end - kv_start, BLOCK_SIZE)
    for i in tl.range(0, num_loop):
        offset = tl.arange(0, BLOCK_SIZE).to(tl.int64) + i * BLOCK_SIZE
        mask = offset < kv_end - kv_start
        data = tl.load(req_to_token_ptr + req_pool_index * req_to_token_stride + kv_start + offset, mask=mask)
        tl.store(kv_indices_ptr + kv_indices_offset + offset, data, mask=mask)


def check(rng):
    pool_rows, max_ctx, batch = 6, 100, 4
    req_to_token = rng.integers(0, 10**6, (pool_rows, max_ctx)).astype(np.int32)
    req_pool = rng.permutation(pool_rows)[:batch].astype(np.int32)
    lens = np.array([33, 0, 64, 5], np.int32)
    indptr = np.r_[0, np.cumsum(lens)].astype(np.int32)
    for starts in (None, np.array([3, 50, 0, 90], np.int64)):
        out = np.full(int(indptr[-1]) + 3, -7, np.int32)
        _kv_indices[(batch,)](req_to_token, req_pool, lens, indptr, starts, out, req_to_token_stride=max_ctx)
        expected = np.full_like(out, -7)
        for b in range(batch):
            s = 0 if starts is None else int(starts[b])
            expected[indptr[b]:indptr[b + 1]] = req_to_token[req_pool[b], s:s + lens[b]]
        close(out, expected)
