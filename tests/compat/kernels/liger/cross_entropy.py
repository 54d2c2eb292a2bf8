"""Liger-Kernel style cross entropy: online softmax over column blocks, gradient written in place
into the logits, ignore_index, label smoothing, reduction as a string constexpr, module-level
``tl.constexpr`` flags and an int64 program id."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl

_TRUE: tl.constexpr = tl.constexpr(1)
_FALSE: tl.constexpr = tl.constexpr(0)


@tiles.jit
def liger_cross_entropy_kernel(X_ptr, X_stride, Y_ptr, Y_stride, loss_ptr, loss_stride, n_cols, n_non_ignore,
                               ignore_index, label_smoothing: tl.constexpr, reduction: tl.constexpr,
                               RETURN_Z: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    Y_ptr += program_id * Y_stride
    y = tl.load(Y_ptr)
    X_ptr += program_id * X_stride
    if y == ignore_index:
        for i in range(0, n_cols, BLOCK_SIZE):
            X_offsets = i + tl.arange(0, BLOCK_SIZE)
            tl.store(X_ptr + X_offsets, 0.0, mask=X_offsets < n_cols)
        return
    loss_ptr += program_id * loss_stride
    m = float("-inf")
    d = 0.0
    ori_X_y = tl.load(X_ptr + y).cast(tl.float32)
    scaled_x_sum = 0.0
    eps = label_smoothing / n_cols
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(X_ptr + X_offsets, mask=X_offsets < n_cols, other=float("-inf")).cast(tl.float32)
        block_max = tl.max(X_block)
        if label_smoothing > 0:
            scaled_x_sum += tl.sum(tl.where(X_offsets < n_cols, -eps * X_block, 0.0))
        m_new = tl.maximum(m, block_max)
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(X_block - m_new))
        m = m_new
    lse = m + tl.log(d)
    for i in range(0, n_cols, BLOCK_SIZE):
        X_offsets = i + tl.arange(0, BLOCK_SIZE)
        X_block = tl.load(X_ptr + X_offsets, mask=X_offsets < n_cols, other=float("-inf")).cast(tl.float32)
        X_block = tl.exp(X_block - m) / d
        X_block = X_block - eps
        X_block = tl.where(X_offsets == y, X_block - (1 - label_smoothing), X_block)
        if reduction == "mean":
            X_block = X_block / n_non_ignore
        tl.store(X_ptr + X_offsets, X_block.to(X_ptr.dtype.element_ty), mask=X_offsets < n_cols)
    tl.debug_barrier()
    loss = lse - ori_X_y
    if label_smoothing > 0:
        smooth_loss = scaled_x_sum + label_smoothing * lse
        loss = loss * (1 - label_smoothing) + smooth_loss
    if reduction == "mean":
        loss = loss / n_non_ignore
    if RETURN_Z == _TRUE:
        loss += 0.0
    tl.store(loss_ptr, loss)


def check(rng):
    BT, V, ignore_index, ls = 7, 301, -100, 0.1
    X = (rng.standard_normal((BT, V)) * 4).astype(np.float32)
    Y = rng.integers(0, V, BT).astype(np.int64)
    Y[2] = ignore_index
    n_non_ignore = int((Y != ignore_index).sum())
    loss = np.zeros(BT, np.float32)
    grad = X.copy()
    liger_cross_entropy_kernel[(BT,)](grad, stride(grad, 0), Y, 1, loss, 1, V, n_non_ignore, ignore_index,
                                      label_smoothing=ls, reduction="mean", RETURN_Z=_FALSE, BLOCK_SIZE=128,
                                      num_warps=8)
    keep = Y != ignore_index
    lse = np.log(np.exp(X - X.max(1, keepdims=True)).sum(1)) + X.max(1)
    nll = lse - X[np.arange(BT), np.where(keep, Y, 0)]
    smooth = (lse[:, None] - X).mean(1)
    ref_loss = np.where(keep, ((1 - ls) * nll + ls * smooth) / n_non_ignore, 0)
    p = np.exp(X - lse[:, None])
    target = np.full((BT, V), ls / V)
    target[np.arange(BT), np.where(keep, Y, 0)] += 1 - ls
    ref_grad = np.where(keep[:, None], (p - target) / n_non_ignore, 0)
    close(loss, ref_loss, rtol=1e-4, atol=1e-6)
    close(grad, ref_grad, rtol=1e-4, atol=1e-7)
