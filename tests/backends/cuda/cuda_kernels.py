"""Kernels the CUDA tests compile (and, on a GPU, run)."""

import tiles
import tiles.language as tl


@tiles.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@tiles.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(in_ptr + row * stride + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + offs, num / tl.sum(num, axis=0), mask=mask)


@tiles.jit
def loop_sum_kernel(x, out, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    offs = tl.arange(0, BLOCK)
    for start in range(0, n, BLOCK):
        acc += tl.load(x + start + offs, mask=start + offs < n, other=0.0)
    tl.store(out + tl.program_id(0), tl.sum(acc, axis=0))


@tiles.jit
def atomic_kernel(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask, other=0)
    tl.atomic_add(out, tl.sum(v, axis=0))
    tl.atomic_max(out + 1, tl.max(v, axis=0))


@tiles.jit
def int_ops_kernel(a, b, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(a + offs, mask=mask, other=1)
    y = tl.load(b + offs, mask=mask, other=1)
    r = x // y + x % y * 3 - (x >> 2) + (y << 1) ^ (x & y)
    tl.store(out + offs, r, mask=mask)


@tiles.jit
def matrix_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k in range(0, K, BK):
        av = tl.load(a + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                     other=0.0)
        bv = tl.load(b + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                     other=0.0)
        acc = tl.dot(av, bv, acc)
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@tiles.jit
def fmod_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) % tl.load(y_ptr + offs, mask=mask), mask=mask)
