"""Unsloth style cross entropy forward with Gemma-2 logit softcapping (``t * tanh(x / t)``) and
Cohere logit scaling, flags as constexprs chosen by heuristics, labels of -100 ignored."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra import libdevice

triton_tanh = libdevice.tanh


@tiles.heuristics({
    "DO_SOFTCAPPING": lambda args: bool(args["DO_SOFTCAPPING"]),
    "DO_LOGIT_SCALING": lambda args: bool(args["DO_LOGIT_SCALING"]),
})
@tiles.jit
def _cross_entropy_forward(logits_ptr, logits_row_stride, loss_ptr, logsumexp_ptr, labels_ptr, VOCAB_SIZE,
                           BLOCK_SIZE: tl.constexpr, DO_SOFTCAPPING: tl.constexpr, SOFTCAP,
                           DO_LOGIT_SCALING: tl.constexpr, LOGIT_SCALE):
    row_idx = tl.program_id(0)
    logits_ptr += row_idx * tl.cast(logits_row_stride, tl.int64)
    loss_ptr += row_idx
    logsumexp_ptr += row_idx
    labels_ptr += row_idx
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < VOCAB_SIZE
    label_idx = tl.load(labels_ptr).to(tl.int32)
    logits = tl.load(logits_ptr + col_offsets, mask=mask, other=-float("inf")).to(tl.float32)
    if DO_LOGIT_SCALING:
        logits = LOGIT_SCALE * logits
    if DO_SOFTCAPPING:
        logits = SOFTCAP * triton_tanh(logits / SOFTCAP)
    c = tl.max(logits, 0)
    logsumexp = c + tl.log(tl.sum(tl.exp(logits - c), 0))
    if label_idx != -100:
        x = tl.load(logits_ptr + label_idx).to(tl.float32)
        if DO_LOGIT_SCALING:
            x = LOGIT_SCALE * x
        if DO_SOFTCAPPING:
            x = SOFTCAP * triton_tanh(x / SOFTCAP)
        loss = logsumexp - x
    else:
        loss = 0.0
    tl.store(logsumexp_ptr, logsumexp)
    tl.store(loss_ptr, loss)


def check(rng):
    n_rows, V, softcap, scale = 6, 250, 30.0, 1.5
    logits = (rng.standard_normal((n_rows, V)) * 20).astype(np.float16)
    labels = rng.integers(0, V, n_rows).astype(np.int64)
    labels[1] = -100
    loss = np.empty(n_rows, np.float32)
    lse = np.empty(n_rows, np.float32)
    _cross_entropy_forward[(n_rows,)](logits, V, loss, lse, labels, V, BLOCK_SIZE=256, DO_SOFTCAPPING=True,
                                      SOFTCAP=softcap, DO_LOGIT_SCALING=True, LOGIT_SCALE=scale, num_warps=8)
    z = softcap * np.tanh(scale * logits.astype(np.float64) / softcap)
    ref_lse = np.log(np.exp(z - z.max(1, keepdims=True)).sum(1)) + z.max(1)
    ref_loss = np.where(labels != -100, ref_lse - z[np.arange(n_rows), np.maximum(labels, 0)], 0)
    close(lse, ref_lse, rtol=1e-5, atol=1e-5)
    close(loss, ref_loss, rtol=1e-4, atol=1e-4)
