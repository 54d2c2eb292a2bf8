"""Liger-Kernel style DyT (dynamic tanh, ``gamma * tanh(alpha * x) + beta``): forward one row
per program with ``alpha`` read from a one-element tensor and ``beta`` optional (``HAVE_BETA``
from ``beta is not None``); backward persistent, each program striding over rows with
``tl.range(pid, n_rows, tl.num_programs(0))`` and writing per-program partial sums of
dgamma/dbeta/dalpha that the host adds.  ``tanh`` comes from ``libdevice``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra.libdevice import tanh


@tiles.heuristics({"HAVE_BETA": lambda args: args["beta_ptr"] is not None})
@tiles.jit
def _dyt_fwd(x_ptr, x_stride, alpha_ptr, gamma_ptr, beta_ptr, y_ptr, y_stride, n_cols,
             BLOCK_SIZE: tl.constexpr, HAVE_BETA: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    alpha = tl.load(alpha_ptr)
    gamma = tl.load(gamma_ptr + offs, mask=mask)
    x = tl.load(x_ptr + row * x_stride + offs, mask=mask)
    y = gamma * tanh((alpha * x).cast(tl.float32))
    if HAVE_BETA:
        y += tl.load(beta_ptr + offs, mask=mask)
    tl.store(y_ptr + row * y_stride + offs, y, mask=mask)


@tiles.heuristics({"HAVE_BETA": lambda args: args["dbeta_ptr"] is not None})
@tiles.jit
def _dyt_bwd(dy_ptr, dy_stride, dx_ptr, dx_stride, x_ptr, x_stride, alpha_ptr, gamma_ptr,
             dalpha_ptr, dgamma_ptr, dbeta_ptr, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
             HAVE_BETA: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    alpha = tl.load(alpha_ptr).cast(tl.float32)
    gamma = tl.load(gamma_ptr + offs, mask=mask, other=0.0).cast(tl.float32)
    dalpha = 0.0
    dgamma = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    dbeta = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for row in tl.range(pid, n_rows, tl.num_programs(0)):
        x = tl.load(x_ptr + row * x_stride + offs, mask=mask, other=0.0).cast(tl.float32)
        dy = tl.load(dy_ptr + row * dy_stride + offs, mask=mask, other=0.0).cast(tl.float32)
        t = tanh(alpha * x)
        if HAVE_BETA:
            dbeta += dy
        dgamma += dy * t
        dt = dy * gamma * (1 - t * t)
        dalpha += tl.sum(dt * x)
        tl.store(dx_ptr + row * dx_stride + offs, dt * alpha, mask=mask)
    tl.store(dgamma_ptr + pid * n_cols + offs, dgamma, mask=mask)
    if HAVE_BETA:
        tl.store(dbeta_ptr + pid * n_cols + offs, dbeta, mask=mask)
    tl.store(dalpha_ptr + pid, dalpha)


def check(rng):
    rows, cols, programs = 23, 70, 4
    x = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
    x[0, :3] = [0.0, 1e4, -1e4]
    alpha = np.array([0.7], np.float32)
    gamma = rng.standard_normal(cols).astype(np.float32)
    beta = rng.standard_normal(cols).astype(np.float32)
    x64 = x.astype(np.float64)
    t = np.tanh(alpha[0] * x64)
    for b in (beta, None):
        y = np.empty_like(x)
        _dyt_fwd[(rows,)](x, cols, alpha, gamma, b, y, cols, cols, BLOCK_SIZE=128)
        close(y, gamma * t + (b if b is not None else 0), rtol=1e-5, atol=1e-5)
    dy = rng.standard_normal((rows, cols)).astype(np.float32)
    dx = np.empty_like(x)
    dalpha = np.empty(programs, np.float32)
    dgamma = np.empty((programs, cols), np.float32)
    dbeta = np.empty((programs, cols), np.float32)
    _dyt_bwd[(programs,)](dy, cols, dx, cols, x, cols, alpha, gamma, dalpha, dgamma, dbeta, rows, cols,
                          BLOCK_SIZE=128)
    dt = dy * gamma * (1 - t * t)
    close(dx, dt * alpha[0], rtol=1e-4, atol=1e-5)
    close(dalpha.sum(), (dt * x64).sum(), rtol=1e-4, atol=1e-3)
    close(dgamma.sum(0), (dy * t).sum(0), rtol=1e-4, atol=1e-4)
    close(dbeta.sum(0), dy.sum(0), rtol=1e-4, atol=1e-4)
    _dyt_bwd[(programs,)](dy, cols, dx, cols, x, cols, alpha, gamma, dalpha, dgamma, None, rows, cols,
                          BLOCK_SIZE=128)
    close(dgamma.sum(0), (dy * t).sum(0), rtol=1e-4, atol=1e-4)
