"""FlagGems style ``embedding`` forward and backward with ``padding_idx`` and
``scale_grad_by_freq``: a row gather per index, an index-frequency histogram by atomics, a
backward that atomically adds each gradient row into the weight gradient (bf16 gradients go
through an fp32 buffer), and a grid-stride rescale by ``1 / freq``.

Language features exercised: launches written ``kernel[M,](...)``; pointer arguments advanced by
scalars (``out_ptr += pid * N``, ``indices += pid``, ``weight_ptr += row_idx * N`` with a loaded
int64 index); positional mask in ``tl.load(ptr, mask, other=0.0)`` / ``tl.store(ptr, v, mask)``;
``tl.atomic_add(freq + idx, 1, mask=mask)`` with a Python int value; ``tl.atomic_add`` of fp16
rows into an fp16 buffer and of bf16 rows cast ``.to(tl.float32)`` under
``if tl.constexpr(grad.dtype.is_bf16())``; ``if not HAS_PADDING_IDX`` / ``else`` with a runtime
``if row_idx != padding_idx`` (``do_not_specialize=["padding_idx"]``); in the rescale,
``embedding_scale = 1.0`` rebound to ``1.0 / freq`` (an int32 load) under a runtime ``if`` inside a
``for row in range(pid, n_rows, num_programs)`` loop. Gradients are multiples of 1/8 so the
atomic sums are exact in any order."""

import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl


@tiles.jit
def embedding_kernel(out_ptr, in_ptr, weight_ptr, N: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    out_ptr += pid * N
    in_ptr += pid
    mask = tl.arange(0, BLOCK_SIZE) < N
    cols = tl.arange(0, BLOCK_SIZE)
    row_idx = tl.load(in_ptr)
    weight_ptr += row_idx * N
    tl.store(out_ptr + cols, tl.load(weight_ptr + cols, mask, other=0.0), mask)


@tiles.jit
def indice_freq_kernel(indices_freq, indices, elem_cnt: tl.constexpr, INDICE_BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * INDICE_BLOCK_SIZE + tl.arange(0, INDICE_BLOCK_SIZE)
    mask = offsets < elem_cnt
    index_element = tl.load(indices + offsets, mask=mask)
    tl.atomic_add(indices_freq + index_element, 1, mask=mask)


@tiles.jit(do_not_specialize=["padding_idx"])
def embedding_backward_kernel(grad_in, grad_out, indices, padding_idx, HAS_PADDING_IDX: tl.constexpr,
                              N: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    grad_out += pid * N
    indices += pid
    mask = tl.arange(0, BLOCK_SIZE) < N
    cols = tl.arange(0, BLOCK_SIZE)
    row_idx = tl.load(indices).to(tl.int32)
    if not HAS_PADDING_IDX:
        grad_in += row_idx * N
        g = tl.load(grad_out + cols, mask, other=0.0)
        if tl.constexpr(g.dtype.is_bf16()):
            g = g.to(tl.float32)
        tl.atomic_add(grad_in + cols, g, mask=mask)
    else:
        if row_idx != padding_idx:
            grad_in += row_idx * N
            g = tl.load(grad_out + cols, mask, other=0.0)
            if tl.constexpr(g.dtype.is_bf16()):
                g = g.to(tl.float32)
            tl.atomic_add(grad_in + cols, g, mask=mask)


@tiles.jit(do_not_specialize=["n_rows"])
def embedding_grad_scale_kernel(grad_out, indice_freq, n_rows, N, BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in range(row_start, n_rows, row_step):
        embedding_scale = 1.0
        freq = tl.load(indice_freq + row_idx)
        if freq > 1:
            embedding_scale = 1.0 / freq
        cols = tl.arange(0, BLOCK_SIZE)
        mask = tl.arange(0, BLOCK_SIZE) < N
        g = tl.load(grad_out + row_idx * N + cols, mask=mask)
        tl.store(grad_out + row_idx * N + cols, g * embedding_scale, mask=mask)


def check(rng):
    V, N, M = 13, 40, 57
    block = 64
    idx = rng.integers(0, V, M).astype(np.int64)
    idx[:6] = [3, 3, 3, 0, 12, 3]
    w = rng.standard_normal((V, N)).astype(np.float16)
    out = np.zeros((M, N), np.float16)
    embedding_kernel[M,](out, idx, w, N, block)
    close(out, w[idx])

    freq = np.zeros(V, np.int32)
    indice_freq_kernel[(-(-M // 16),)](freq, idx, M, 16)
    close(freq, np.bincount(idx, minlength=V).astype(np.int32))

    for gdt, pad in ((np.dtype(np.float16), 3), (BF16, None)):
        g = (rng.integers(-16, 17, (M, N)) / 8).astype(gdt)
        acc_dt = np.float32 if gdt == BF16 else gdt
        gin = np.zeros((V, N), acc_dt)
        embedding_backward_kernel[M,](gin, g, idx, -1 if pad is None else pad, pad is not None, N, block)
        ref = np.zeros((V, N), np.float64)
        np.add.at(ref, idx, g.astype(np.float64))
        if pad is not None:
            ref[pad] = 0.0
        close(gin, ref.astype(acc_dt))
        embedding_grad_scale_kernel[(4,)](gin, freq, V, N, block)
        scale = np.where(freq > 1, 1.0 / np.maximum(freq, 1), 1.0)[:, None]
        close(gin.astype(np.float32), ref * scale, rtol=2e-3, atol=1e-3)
