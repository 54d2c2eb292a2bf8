"""flash-linear-attention style L2 normalization of rows, forward and backward, fp32 math on fp16
rows, ``tl.sqrt`` of a row sum plus eps, rsd saved for the backward."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.autotune(configs=[tiles.Config({}, num_warps=num_warps) for num_warps in [1, 4]], key=["N"])
@tiles.jit
def l2norm_fwd_kernel(x, y, rstd, eps, N: tl.constexpr, BD: tl.constexpr):
    i_t = tl.program_id(0)
    p_x = tl.make_block_ptr(x + i_t * N, (N,), (1,), (0,), (BD,), (0,))
    b_x = tl.load(p_x, boundary_check=(0,)).to(tl.float32)
    b_rstd = 1 / tl.sqrt(tl.sum(b_x * b_x) + eps)
    b_y = b_x * b_rstd
    p_y = tl.make_block_ptr(y + i_t * N, (N,), (1,), (0,), (BD,), (0,))
    tl.store(p_y, b_y.to(p_y.dtype.element_ty), boundary_check=(0,))
    tl.store(rstd + i_t, b_rstd)


@tiles.jit
def l2norm_bwd_kernel(y, rstd, dy, dx, N: tl.constexpr, BD: tl.constexpr):
    i_t = tl.program_id(0)
    o_d = tl.arange(0, BD)
    mask = o_d < N
    b_y = tl.load(y + i_t * N + o_d, mask=mask, other=0).to(tl.float32)
    b_rstd = tl.load(rstd + i_t)
    b_dy = tl.load(dy + i_t * N + o_d, mask=mask, other=0).to(tl.float32)
    b_dx = b_dy * b_rstd - tl.sum(b_dy * b_y) * b_y * b_rstd
    tl.store(dx + i_t * N + o_d, b_dx.to(dx.dtype.element_ty), mask=mask)


def check(rng):
    T, N, eps = 9, 50, 1e-6
    x = rng.standard_normal((T, N)).astype(np.float16)
    y = np.empty_like(x)
    rstd = np.empty(T, np.float32)
    BD = tiles.next_power_of_2(N)
    l2norm_fwd_kernel[(T,)](x, y, rstd, eps, N=N, BD=BD)
    xf = x.astype(np.float64)
    r = 1 / np.sqrt((xf * xf).sum(1) + eps)
    close(rstd, r, rtol=1e-5)
    close(y, xf * r[:, None], rtol=2e-3, atol=2e-3)
    dy = rng.standard_normal((T, N)).astype(np.float32)
    yf = y.astype(np.float32)
    dx = np.empty((T, N), np.float32)
    l2norm_bwd_kernel[(T,)](yf, rstd, dy, dx, N=N, BD=BD)
    close(dx, dy * rstd[:, None] - (dy * yf).sum(1, keepdims=True) * yf * rstd[:, None], rtol=1e-4, atol=1e-5)
