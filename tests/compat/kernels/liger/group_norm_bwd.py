"""Liger-Kernel style group norm backward: loop-carried scalar partial sums (``dW += tl.sum(...)``)
per channel, a scalar ``tl.atomic_add`` of each channel's dW/dB (many programs add to one address),
then a second loop that reads the carried ``c1``/``c2``.  A scalar atomic runs once per program."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _group_norm_backward(X_ptr, X_row_stride, X_col_stride, W_ptr, Mean_ptr, Mean_row_stride,
                         Mean_col_stride, RSTD_ptr, DX_ptr, DW_ptr, DB_ptr, UPSTREAM_ptr,
                         hidden_size: tl.constexpr, channels_per_group: tl.constexpr,
                         BLOCK_SIZE: tl.constexpr, dtype: tl.constexpr):
    batch_idx = tl.program_id(0)
    group_idx = tl.program_id(1)
    X_ptr += batch_idx * X_row_stride
    DX_ptr += batch_idx * X_row_stride
    UPSTREAM_ptr += batch_idx * X_row_stride
    mean = tl.load(Mean_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride)
    rstd = tl.load(RSTD_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride)
    c1 = 0.0
    c2 = 0.0
    block_range = tl.arange(0, BLOCK_SIZE)
    for channel_idx in range(group_idx * channels_per_group, (group_idx + 1) * channels_per_group):
        dW = 0.0
        dB = 0.0
        W = tl.load(W_ptr + channel_idx)
        for i in tl.range(0, hidden_size, BLOCK_SIZE):
            offs = i + block_range
            mask = offs < hidden_size
            X = tl.load(X_ptr + channel_idx * X_col_stride + offs, mask=mask, other=0.0)
            dy = tl.load(UPSTREAM_ptr + channel_idx * X_col_stride + offs, mask=mask, other=0.0)
            x_hat = (X - mean) * rstd
            dW += tl.sum(dy * x_hat)
            dB += tl.sum(dy)
            wdy = W * dy
            c1 += tl.sum(x_hat * wdy)
            c2 += tl.sum(wdy)
        tl.atomic_add(DW_ptr + channel_idx, dW.to(dtype))
        tl.atomic_add(DB_ptr + channel_idx, dB.to(dtype))
    N = hidden_size * channels_per_group
    c1 = c1 / N
    c2 = c2 / N
    for channel_idx in tl.range(group_idx * channels_per_group, (group_idx + 1) * channels_per_group):
        W = tl.load(W_ptr + channel_idx)
        for i in range(0, hidden_size, BLOCK_SIZE):
            offs = i + block_range
            mask = offs < hidden_size
            X = tl.load(X_ptr + channel_idx * X_col_stride + offs, mask=mask, other=0.0)
            dy = tl.load(UPSTREAM_ptr + channel_idx * X_col_stride + offs, mask=mask, other=0.0)
            x_hat = (X - mean) * rstd
            dx = (W * dy - (x_hat * c1 + c2)) * rstd
            tl.store(DX_ptr + channel_idx * X_col_stride + offs, dx, mask=mask)


def _reference(X, W, dY, groups):
    batch, channels, hw = X.shape
    Xg = X.reshape(batch, groups, -1).astype(np.float64)
    mean, rstd = Xg.mean(-1), 1 / np.sqrt(Xg.var(-1) + 1e-6)
    xhat = ((Xg - mean[..., None]) * rstd[..., None]).reshape(batch, channels, hw)
    dW = (dY * xhat).sum((0, 2))
    dB = dY.sum((0, 2))
    wdy = (W[:, None] * dY).reshape(batch, groups, -1)
    xh = xhat.reshape(batch, groups, -1)
    c1 = (xh * wdy).mean(-1, keepdims=True)
    c2 = wdy.mean(-1, keepdims=True)
    dX = ((wdy - (xh * c1 + c2)) * rstd[..., None]).reshape(batch, channels, hw)
    return mean, rstd, dX, dW, dB


def _run(rng, batch, channels, groups, hw, num_warps):
    X = (rng.standard_normal((batch, channels, hw)) + 0.5).astype(np.float32)
    W = rng.standard_normal(channels).astype(np.float32)
    dY = rng.standard_normal((batch, channels, hw)).astype(np.float32)
    mean, rstd, dX_ref, dW_ref, dB_ref = _reference(X, W, dY, groups)
    Mean, RSTD = mean.astype(np.float32), rstd.astype(np.float32)
    DX = np.empty_like(X)
    DW = np.zeros(channels, np.float32)
    DB = np.zeros(channels, np.float32)
    cpg = channels // groups
    block = 1 << max(hw - 1, 1).bit_length()
    _group_norm_backward[(batch, groups)](X, channels * hw, hw, W, Mean, groups, 1, RSTD, DX, DW, DB, dY,
                                          hidden_size=hw, channels_per_group=cpg, BLOCK_SIZE=min(block, 64),
                                          dtype=tl.float32, num_warps=num_warps)
    close(DW, dW_ref, rtol=1e-4, atol=1e-4)
    close(DB, dB_ref, rtol=1e-4, atol=1e-4)
    close(DX, dX_ref, rtol=1e-3, atol=1e-4)


def check(rng):
    _run(rng, 1, 1, 1, 3, num_warps=1)      # the reported case: one program, hidden size 3
    _run(rng, 1, 1, 1, 3, num_warps=4)
    _run(rng, 5, 6, 3, 77, num_warps=4)     # many programs adding to each channel, masked blocks
