"""Liger-Kernel style total variation distance ``0.5 * |p - q|`` with its gradient: the
reduction mode is a *string* ``tl.constexpr`` compared with module-level string constexprs, rows
whose label equals ``ignore_index`` get zero loss and gradient (``HAS_LABEL`` from heuristics),
the row is walked in chunks with ``range(0, n_cols, BLOCK_SIZE)`` and ``tl.where`` builds the
sign of the difference."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl

MODE_NONE = tl.constexpr("none")
MODE_SUM = tl.constexpr("sum")
MODE_MEAN = tl.constexpr("mean")
MODE_BATCHMEAN = tl.constexpr("batchmean")


@tiles.heuristics({"HAS_LABEL": lambda args: args["labels_ptr"] is not None})
@tiles.jit
def _tvd(p_ptr, p_stride, q_ptr, q_stride, loss_ptr, loss_stride, grads_ptr, grads_stride, labels_ptr,
         ignore_index: tl.constexpr, n_cols, n_rows, BLOCK_SIZE: tl.constexpr, HAS_LABEL: tl.constexpr,
         reduction: tl.constexpr = MODE_BATCHMEAN):
    row = tl.program_id(0).to(tl.int64)
    p_ptr += row * p_stride
    q_ptr += row * q_stride
    loss_ptr += row * loss_stride
    grads_ptr += row * grads_stride
    skip = False
    if HAS_LABEL:
        skip = tl.load(labels_ptr + row) == ignore_index
    row_loss = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        p = tl.load(p_ptr + cols, mask=mask, other=0.0)
        q = tl.load(q_ptr + cols, mask=mask, other=0.0)
        loss = 0.5 * tl.abs(p - q)
        grad = tl.where(p > q, 0.5, tl.where(p < q, -0.5, 0.0))
        loss = tl.where(skip, 0.0, loss)
        grad = tl.where(skip, 0.0, grad)
        if reduction == MODE_BATCHMEAN:
            grad = grad / n_rows
        elif reduction == MODE_MEAN:
            grad = grad / (n_rows * n_cols)
        tl.store(grads_ptr + cols, grad, mask=mask)
        if reduction == MODE_NONE:
            tl.store(loss_ptr + cols, loss, mask=mask)
        else:
            row_loss += tl.sum(loss, axis=0)
    if reduction != MODE_NONE:
        tl.store(loss_ptr, row_loss)


def check(rng):
    rows, cols, ignore = 6, 75, -100
    p = rng.dirichlet(np.ones(cols), rows).astype(np.float32)
    q = rng.dirichlet(np.ones(cols), rows).astype(np.float32)
    q[1, :10] = p[1, :10]
    labels = rng.integers(0, cols, rows).astype(np.int64)
    labels[3] = ignore
    keep = (labels != ignore)[:, None]
    diff = p.astype(np.float64) - q
    base_grad = np.where(keep, 0.5 * np.sign(diff), 0)
    base_loss = np.where(keep, 0.5 * np.abs(diff), 0)
    for mode, grad_scale in (("none", 1), ("sum", 1), ("mean", rows * cols), ("batchmean", rows)):
        loss = np.zeros((rows, cols) if mode == "none" else (rows, 1), np.float32)
        grads = np.empty_like(p)
        _tvd[(rows,)](p, cols, q, cols, loss, loss.shape[1], grads, cols, labels, ignore, cols, rows,
                      BLOCK_SIZE=32, reduction=mode)
        close(grads, base_grad / grad_scale, rtol=1e-6, atol=1e-7)
        close(loss, base_loss if mode == "none" else base_loss.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
    loss = np.zeros((rows, 1), np.float32)
    grads = np.empty_like(p)
    _tvd[(rows,)](p, cols, q, cols, loss, 1, grads, cols, None, ignore, cols, rows, BLOCK_SIZE=32)
    close(grads, 0.5 * np.sign(diff) / rows, rtol=1e-6, atol=1e-7)
    close(loss, 0.5 * np.abs(diff).sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
