"""Liger-Kernel style group norm forward: one program per (batch, group), a block loop over the
group's elements for the statistics, then per-channel affine parameters."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _group_norm_forward(Y_ptr, Y_row_stride, Y_col_stride, X_ptr, X_row_stride, X_col_stride, Mean_ptr,
                        Mean_row_stride, Mean_col_stride, RSTD_ptr, RSTD_row_stride, RSTD_col_stride, W_ptr, B_ptr,
                        hidden_size, channels_per_group, eps, BLOCK_SIZE: tl.constexpr):
    batch_idx = tl.program_id(0)
    group_idx = tl.program_id(1)
    X_ptr += batch_idx * X_row_stride + group_idx * X_col_stride
    Y_ptr += batch_idx * Y_row_stride + group_idx * Y_col_stride
    block_range = tl.arange(0, BLOCK_SIZE)
    s = 0.0
    squared_sum = 0.0
    for i in tl.range(0, hidden_size, BLOCK_SIZE):
        hidden_size_offsets = i + block_range
        mask = hidden_size_offsets < hidden_size
        X = tl.load(X_ptr + hidden_size_offsets, mask=mask, other=0.0)
        s += tl.sum(X)
        squared_sum += tl.sum(X * X)
    m = s / hidden_size
    variance = (squared_sum / hidden_size) - (m * m)
    rstd = tl.rsqrt(variance + eps)
    hidden_size_per_channel = hidden_size // channels_per_group
    for channel_idx in tl.range(group_idx * channels_per_group, (group_idx + 1) * channels_per_group):
        W = tl.load(W_ptr + channel_idx)
        B = tl.load(B_ptr + channel_idx)
        for i in range(0, hidden_size_per_channel, BLOCK_SIZE):
            hidden_size_offsets = i + block_range
            mask = hidden_size_offsets < hidden_size_per_channel
            X = tl.load(X_ptr + hidden_size_offsets, mask=mask, other=m)
            Y = (X - m) * rstd * W + B
            tl.store(Y_ptr + hidden_size_offsets, Y, mask=mask)
        X_ptr += hidden_size_per_channel
        Y_ptr += hidden_size_per_channel
    tl.store(Mean_ptr + batch_idx * Mean_row_stride + group_idx * Mean_col_stride, m)
    tl.store(RSTD_ptr + batch_idx * RSTD_row_stride + group_idx * RSTD_col_stride, rstd)


def check(rng):
    batch, channels, groups, hw = 2, 6, 3, 37
    cpg = channels // groups
    X = (rng.standard_normal((batch, channels, hw)) + 0.5).astype(np.float32)
    W = rng.standard_normal(channels).astype(np.float32)
    B = rng.standard_normal(channels).astype(np.float32)
    Y = np.empty_like(X)
    Mean = np.empty((batch, groups), np.float32)
    RSTD = np.empty((batch, groups), np.float32)
    hidden = cpg * hw
    _group_norm_forward[(batch, groups)](Y, channels * hw, hidden, X, channels * hw, hidden, Mean, groups, 1,
                                         RSTD, groups, 1, W, B, hidden, cpg, 1e-6, BLOCK_SIZE=32)
    Xg = X.reshape(batch, groups, -1)
    mu, rs = Xg.mean(-1), 1 / np.sqrt(Xg.var(-1) + 1e-6)
    ref = ((Xg - mu[..., None]) * rs[..., None]).reshape(batch, channels, hw) * W[:, None] + B[:, None]
    close(Mean, mu, rtol=1e-5, atol=1e-6)
    close(RSTD, rs, rtol=1e-3)
    close(Y, ref, rtol=1e-3, atol=1e-4)
