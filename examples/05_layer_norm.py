"""Layer normalization, forward and backward.

Forward: one program per row, walking the row in BLOCK_N chunks (any row length).
Backward: dx row by row; the weight and bias gradients are a two-stage reduction:
each of GROUPS programs sums its rows into one partial row, then a second kernel
sums the partial rows.  (No locks: a spin lock would deadlock an interpreter that
runs the programs of a grid in lock step, and the sums come out deterministic.)
"""

from __future__ import annotations

import argparse

import numpy as np

import tiles
import tiles.language as tl
from tiles.backends.choice import add_backend_argument, chosen, describe


@tiles.jit
def layer_norm_forward_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, row_stride, N, eps,
                              BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    total = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        total += tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    squares = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        centered = tl.where(cols < N, x - mean, 0.0)
        squares += centered * centered
    rstd = 1 / tl.sqrt(tl.sum(squares, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        in_row = cols < N
        w = tl.load(w_ptr + cols, mask=in_row)
        b = tl.load(b_ptr + cols, mask=in_row)
        x = tl.load(x_row + cols, mask=in_row, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=in_row)


@tiles.jit
def layer_norm_backward_dx_kernel(dx_ptr, dy_ptr, x_ptr, w_ptr, mean_ptr, rstd_ptr,
                                  partial_dw_ptr, partial_db_ptr, row_stride, M, N,
                                  BLOCK_N: tl.constexpr):
    group = tl.program_id(0)
    groups = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    in_row = cols < N
    w = tl.load(w_ptr + cols, mask=in_row, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK_N], dtype=tl.float32)
    db = tl.zeros([BLOCK_N], dtype=tl.float32)
    for row in range(group, M, groups):
        x = tl.load(x_ptr + row * row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + row * row_stride + cols, mask=in_row, other=0.0).to(tl.float32)
        mean = tl.load(mean_ptr + row)
        rstd = tl.load(rstd_ptr + row)
        x_hat = tl.where(in_row, (x - mean) * rstd, 0.0)
        w_dy = w * dy
        c1 = tl.sum(x_hat * w_dy, axis=0) / N
        c2 = tl.sum(w_dy, axis=0) / N
        dx = (w_dy - (x_hat * c1 + c2)) * rstd
        tl.store(dx_ptr + row * row_stride + cols, dx, mask=in_row)
        dw += dy * x_hat
        db += dy
    tl.store(partial_dw_ptr + group * N + cols, dw, mask=in_row)
    tl.store(partial_db_ptr + group * N + cols, db, mask=in_row)


@tiles.jit
def sum_partial_rows_kernel(partial_ptr, out_ptr, groups, N, BLOCK_G: tl.constexpr,
                            BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    total = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    for start in range(0, groups, BLOCK_G):
        rows = start + tl.arange(0, BLOCK_G)
        mask = (rows[:, None] < groups) & (cols[None, :] < N)
        total += tl.load(partial_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + cols, tl.sum(total, axis=0), mask=cols < N)


def layer_norm_forward(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-5,
                       block_n: int = 256, backend: str | None = None):
    m, n = x.shape
    y = np.empty_like(x)
    mean = np.empty(m, dtype=np.float32)
    rstd = np.empty(m, dtype=np.float32)
    layer_norm_forward_kernel[(m,)](x, y, w, b, mean, rstd, x.strides[0] // x.itemsize, n, eps,
                                    BLOCK_N=block_n, backend=backend)
    return y, mean, rstd


def layer_norm_backward(dy: np.ndarray, x: np.ndarray, w: np.ndarray, mean: np.ndarray,
                        rstd: np.ndarray, groups: int = 16, backend: str | None = None):
    m, n = x.shape
    block_n = tiles.next_power_of_2(n)
    groups = min(groups, m)
    dx = np.empty_like(x)
    partial_dw = np.empty((groups, n), dtype=np.float32)
    partial_db = np.empty((groups, n), dtype=np.float32)
    layer_norm_backward_dx_kernel[(groups,)](dx, dy, x, w, mean, rstd, partial_dw, partial_db,
                                             x.strides[0] // x.itemsize, m, n, BLOCK_N=block_n,
                                             backend=backend)
    dw = np.empty(n, dtype=np.float32)
    db = np.empty(n, dtype=np.float32)
    cols_block = 64
    for partial, out in ((partial_dw, dw), (partial_db, db)):
        sum_partial_rows_kernel[(tiles.cdiv(n, cols_block),)](partial, out, groups, n, BLOCK_G=8,
                                                            BLOCK_N=cols_block, backend=backend)
    return dx, dw, db


def reference(x, w, b, dy, eps):
    x, w, b, dy = (a.astype(np.float64) for a in (x, w, b, dy))
    n = x.shape[1]
    mean = x.mean(axis=1, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + eps)
    x_hat = (x - mean) * rstd
    y = x_hat * w + b
    w_dy = w * dy
    dx = (w_dy - x_hat * (x_hat * w_dy).sum(1, keepdims=True) / n - w_dy.sum(1, keepdims=True) / n) * rstd
    return y, dx, (dy * x_hat).sum(0), dy.sum(0), mean[:, 0], rstd[:, 0]


def main(m: int = 67, n: int = 300, backend: str | None = None) -> None:
    rng = np.random.default_rng()
    eps = 1e-5
    x = (rng.standard_normal((m, n)) * 2 + 0.5).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    dy = rng.standard_normal((m, n)).astype(np.float32)
    y, mean, rstd = layer_norm_forward(x, w, b, eps, block_n=128, backend=backend)
    dx, dw, db = layer_norm_backward(dy, x, w, mean, rstd, backend=backend)
    want_y, want_dx, want_dw, want_db, want_mean, want_rstd = reference(x, w, b, dy, eps)
    for name, got, want in (("mean", mean, want_mean), ("rstd", rstd, want_rstd), ("y", y, want_y),
                            ("dx", dx, want_dx), ("dw", dw, want_dw), ("db", db, want_db)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=name)
    print(f"layer norm {m}x{n}, forward and backward: ok")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--m", type=int, default=67)
    parser.add_argument("--n", type=int, default=300)
    add_backend_argument(parser)
    args = parser.parse_args()
    main(args.m, args.n, backend=chosen(args.backend))
    print(describe(args.backend))
