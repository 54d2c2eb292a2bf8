"""Unsloth style cross entropy for large vocabularies: the forward splits each row's vocabulary
over a second grid axis (``N_CHUNKS`` programs per row), each storing its chunk's logsumexp while
chunk 0 stores ``-x[label]``; the host merges the chunks with a logsumexp and masks label -100.
The backward (grid rows x vocab blocks) overwrites the logits in place with the gradient,
``dloss`` read through a row stride of 0 (an expanded scalar, as ``loss.mean().backward()``
gives).  Written the Unsloth way: plain functions wrapped afterwards with
``f = jit(f)`` and ``f = heuristics({...})(f)`` whose heuristics recompute the flags the caller
also passes, row strides and the vocabulary size as ``tl.constexpr`` ints, ``SOFTCAP`` /
``LOGIT_SCALE`` as constexpr floats (0 when off), Gemma-2 softcapping through libdevice ``tanh``,
Cohere logit scaling, ``tl.cast(..., tl.int64)`` row offsets and ``-float("inf")`` as ``other``."""

import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl
from tiles.language.extra import libdevice

triton_tanh = libdevice.tanh
triton_cast = tl.cast


def _chunked_ce_forward(logits_ptr, logits_row_stride: tl.constexpr, loss_ptr, lse_ptr, labels_ptr,
                        VOCAB_SIZE: tl.constexpr, N_CHUNKS: tl.constexpr, BLOCK_SIZE: tl.constexpr,
                        DO_SOFTCAPPING: tl.constexpr, SOFTCAP: tl.constexpr,
                        DO_LOGIT_SCALING: tl.constexpr, LOGIT_SCALE: tl.constexpr):
    row = tl.program_id(0)
    chunk = tl.program_id(1)
    logits_ptr += row * triton_cast(logits_row_stride, tl.int64)
    cols = chunk * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    label = tl.load(labels_ptr + row).to(tl.int32)
    z = tl.load(logits_ptr + cols, mask=cols < VOCAB_SIZE, other=-float("inf")).to(tl.float32)
    if DO_LOGIT_SCALING:
        z = LOGIT_SCALE * z
    if DO_SOFTCAPPING:
        z = SOFTCAP * triton_tanh(z / SOFTCAP)
    m = tl.max(z, 0)
    chunk_lse = m + tl.log(tl.sum(tl.exp(z - m), 0))
    if chunk == 0:
        if label != -100:
            x = tl.load(logits_ptr + label).to(tl.float32)
            if DO_LOGIT_SCALING:
                x = LOGIT_SCALE * x
            if DO_SOFTCAPPING:
                x = SOFTCAP * triton_tanh(x / SOFTCAP)
            loss = -1.0 * x
        else:
            loss = 0.0
        tl.store(loss_ptr + row, loss)
    tl.store(lse_ptr + row * N_CHUNKS + chunk, chunk_lse)


_chunked_ce_forward = tiles.jit(_chunked_ce_forward)
_chunked_ce_forward = tiles.heuristics({
    "DO_SOFTCAPPING": lambda args: bool(args["DO_SOFTCAPPING"]),
    "DO_LOGIT_SCALING": lambda args: bool(args["DO_LOGIT_SCALING"]),
})(_chunked_ce_forward)


def _ce_backward(logits_ptr, logits_row_stride: tl.constexpr, dloss_ptr, dloss_row_stride: tl.constexpr,
                 lse_ptr, labels_ptr, VOCAB_SIZE: tl.constexpr, BLOCK_SIZE: tl.constexpr,
                 DO_SOFTCAPPING: tl.constexpr, SOFTCAP: tl.constexpr,
                 DO_LOGIT_SCALING: tl.constexpr, LOGIT_SCALE: tl.constexpr):
    row = tl.program_id(0)
    block = tl.program_id(1)
    logits_ptr += row * triton_cast(logits_row_stride, tl.int64)
    dloss_ptr += row * dloss_row_stride
    cols = block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < VOCAB_SIZE
    label = tl.load(labels_ptr + row).to(tl.int32)
    if label != -100:
        dloss = tl.load(dloss_ptr)
    else:
        dloss = 0.0
    x = tl.load(logits_ptr + cols, mask=mask, other=-float("inf")).to(tl.float32)
    if DO_LOGIT_SCALING:
        x = x * LOGIT_SCALE
    t = x
    if DO_SOFTCAPPING:
        t = triton_tanh(x / SOFTCAP)
        x = SOFTCAP * t
    p = tl.exp(x - tl.load(lse_ptr + row))
    g = tl.where(cols == label, p - 1.0, p)
    if DO_LOGIT_SCALING:
        g = g * LOGIT_SCALE
    if DO_SOFTCAPPING:
        g = g * (1.0 - t * t)
    tl.store(logits_ptr + cols, dloss * g, mask=mask)


_ce_backward = tiles.jit(_ce_backward)
_ce_backward = tiles.heuristics({
    "DO_SOFTCAPPING": lambda args: bool(args["DO_SOFTCAPPING"]),
    "DO_LOGIT_SCALING": lambda args: bool(args["DO_LOGIT_SCALING"]),
})(_ce_backward)


def _lse(a, axis):
    m = a.max(axis, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis, keepdims=True))).squeeze(axis)


def cross_entropy(logits, labels, softcap, scale, chunk, bwd_block, dloss):
    n_rows, vocab = logits.shape
    n_chunks = -(-vocab // chunk)
    losses = np.empty(n_rows, np.float32)
    lse = np.empty((n_rows, n_chunks), np.float32)
    _chunked_ce_forward[(n_rows, n_chunks)](
        logits, logits.strides[0] // logits.itemsize, losses, lse, labels, VOCAB_SIZE=vocab,
        N_CHUNKS=n_chunks, BLOCK_SIZE=chunk, DO_SOFTCAPPING=softcap != 0, SOFTCAP=softcap,
        DO_LOGIT_SCALING=scale != 0, LOGIT_SCALE=scale, num_warps=8)
    lse = _lse(lse, 1).astype(np.float32)
    losses += lse
    losses[labels == -100] = 0
    _ce_backward[(n_rows, -(-vocab // bwd_block))](
        logits, logits.strides[0] // logits.itemsize, dloss, dloss.strides[0] // dloss.itemsize, lse,
        labels, VOCAB_SIZE=vocab, BLOCK_SIZE=bwd_block, DO_SOFTCAPPING=softcap != 0, SOFTCAP=softcap,
        DO_LOGIT_SCALING=scale != 0, LOGIT_SCALE=scale, num_warps=4)
    return losses, logits


def reference(logits, labels, softcap, scale, dloss):
    x = logits.astype(np.float64)
    if scale:
        x = scale * x
    t = np.tanh(x / softcap) if softcap else x
    z = softcap * t if softcap else x
    lse = _lse(z, 1)
    valid = labels != -100
    loss = np.where(valid, lse - z[np.arange(len(labels)), np.where(valid, labels, 0)], 0.0)
    g = np.exp(z - lse[:, None])
    g[valid, labels[valid]] -= 1.0
    g *= np.where(valid, dloss, 0.0)[:, None]
    if scale:
        g *= scale
    if softcap:
        g *= 1.0 - t * t
    return loss, g


def check(rng):
    n_rows, vocab = 7, 1000
    labels = rng.integers(0, vocab, n_rows).astype(np.int64)
    labels[2] = -100
    labels[4] = vocab - 1  # the label in the last, partial chunk
    for dtype, softcap, scale in ((np.float16, 30.0, 1.25), (BF16, 0.0, 0.0), (np.float32, 0.0, 0.0625)):
        logits = (rng.standard_normal((n_rows, vocab)) * 8).astype(dtype)
        logits[0, :3] = [60.0, -60.0, 0.0]
        x = logits.copy()
        dloss = np.broadcast_to(np.float32(1.0 / n_rows), (n_rows,))  # loss.mean(): expanded, stride 0
        ref_loss, ref_grad = reference(x, labels, softcap, scale, dloss)
        loss, grad = cross_entropy(logits, labels, softcap, scale, 256, 128, dloss)
        # fp32 logsumexp over <= 1000 terms; the gradient is rounded to the logits' dtype in place
        close(loss, ref_loss, rtol=1e-5, atol=2e-5)
        tol = {np.dtype(np.float16): 2e-3, BF16: 1e-2, np.dtype(np.float32): 1e-5}[np.dtype(dtype)]
        close(grad.astype(np.float32), ref_grad, rtol=tol, atol=1e-6)
