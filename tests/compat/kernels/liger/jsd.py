"""Liger-Kernel style generalized Jensen-Shannon divergence on log-probabilities, with the gradient
with respect to the input written alongside the loss; beta as a float argument."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.jit
def _jsd_kernel(X_ptr, X_stride, Y_ptr, Y_stride, loss_ptr, loss_stride, dX_ptr, dX_stride, beta, n_non_ignore,
                n_cols, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    X_ptr += pid * X_stride
    dX_ptr += pid * dX_stride
    Y_ptr += pid * Y_stride
    loss_ptr += pid * loss_stride
    for i in range(0, n_cols, BLOCK_SIZE):
        offsets = i + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_cols
        X = tl.load(X_ptr + offsets, mask=mask, other=float("-inf")).to(tl.float32)
        Y = tl.load(Y_ptr + offsets, mask=mask, other=float("-inf")).to(tl.float32)
        Q = tl.exp(X)
        P = tl.exp(Y)
        M = beta * P + (1 - beta) * Q
        log_M = tl.log(M)
        loss = beta * P * Y + (1 - beta) * Q * X - M * log_M
        loss = loss / n_non_ignore
        dX = (1 - beta) * Q * (X - log_M) / n_non_ignore
        tl.store(loss_ptr + offsets, loss, mask=mask)
        tl.store(dX_ptr + offsets, dX, mask=mask)


def _log_softmax(z):
    return z - np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True)) - z.max(1, keepdims=True)


def check(rng):
    B, V, beta = 3, 130, 0.3
    X = _log_softmax(rng.standard_normal((B, V))).astype(np.float32)
    Y = _log_softmax(rng.standard_normal((B, V))).astype(np.float32)
    loss = np.empty_like(X)
    dX = np.empty_like(X)
    _jsd_kernel[(B,)](X, stride(X, 0), Y, stride(Y, 0), loss, stride(loss, 0), dX, stride(dX, 0), beta, B, V,
                      BLOCK_SIZE=64)
    Xd, Yd = X.astype(np.float64), Y.astype(np.float64)
    Q, P = np.exp(Xd), np.exp(Yd)
    M = beta * P + (1 - beta) * Q
    close(loss, (beta * P * Yd + (1 - beta) * Q * Xd - M * np.log(M)) / B, rtol=1e-4, atol=1e-6)
    close(dX, (1 - beta) * Q * (Xd - np.log(M)) / B, rtol=1e-4, atol=1e-6)
