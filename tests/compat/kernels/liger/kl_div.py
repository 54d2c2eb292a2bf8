"""Liger-Kernel style KL divergence: log_target and reduction as constexprs, a row loop per program."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl

_REDUCTION_MODE_NONE: tl.constexpr = tl.constexpr(0)
_REDUCTION_MODE_SUM: tl.constexpr = tl.constexpr(1)


@tiles.jit
def _kldiv_kernel_forward(y_ptr, y_stride, gt_ptr, gt_stride, loss_ptr, loss_stride, n_cols, eps,
                          BLOCK_SIZE: tl.constexpr, log_target: tl.constexpr = False,
                          reduction: tl.constexpr = _REDUCTION_MODE_SUM):
    pid = tl.program_id(0).to(tl.int64)
    y_ptr += pid * y_stride
    gt_ptr += pid * gt_stride
    loss_ptr += pid * loss_stride
    base_offsets = tl.arange(0, BLOCK_SIZE)
    loss_sum = 0.0
    for i in range(0, n_cols, BLOCK_SIZE):
        offsets = i + base_offsets
        mask = offsets < n_cols
        y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
        y_true = tl.load(gt_ptr + offsets, mask=mask, other=0.0)
        if not log_target:
            loss = y_true * (tl.log(tl.maximum(y_true, eps)) - y)
        else:
            loss = tl.exp(y_true) * (y_true - y)
        if reduction == _REDUCTION_MODE_NONE:
            tl.store(loss_ptr + offsets, loss, mask=mask)
        else:
            loss_sum += tl.sum(loss, axis=0)
    if reduction != _REDUCTION_MODE_NONE:
        tl.store(loss_ptr, loss_sum)


def check(rng):
    B, V, eps = 4, 170, 1e-10
    logits = rng.standard_normal((B, V))
    y = (logits - np.log(np.exp(logits).sum(1, keepdims=True))).astype(np.float32)
    t = rng.uniform(0, 1, (B, V))
    t /= t.sum(1, keepdims=True)
    t[0, :4] = 0.0
    t = t.astype(np.float32)
    loss = np.empty((B, V), np.float32)
    _kldiv_kernel_forward[(B,)](y, stride(y, 0), t, stride(t, 0), loss, stride(loss, 0), V, eps,
                                BLOCK_SIZE=64, log_target=False, reduction=_REDUCTION_MODE_NONE)
    close(loss, t * (np.log(np.maximum(t, eps)) - y), rtol=1e-5, atol=1e-6)
