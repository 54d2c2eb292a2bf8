"""Kernels in the forms real test suites run, written for Triton (``import triton``).

Used by ``interp_real_workloads.py``: imported as written under Triton's interpreter, and with
``tiles.install_as_triton()`` under tiles' interpreter, so both run the same source.  The forms
follow Liger-Kernel (RMSNorm with a per-program row loop in backward, cross entropy with an
online softmax over the vocabulary and the gradient written in place, SwiGLU), Triton's
tutorials (layer norm with column loops, a grouped-order matmul) and FlagGems (a pointwise op
over many dtypes).  The host functions are autograd-style wrappers: torch tensors in, kernels
launched, torch tensors out.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl


# ---- RMSNorm (Liger style): forward caches rstd, backward loops over rows_per_program rows ----
@triton.jit
def rms_norm_fwd(Y, X, W, RSTD, stride, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(X + row * stride + cols, mask=mask, other=0.0)
    x_dtype = x.dtype
    x = x.to(tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(RSTD + row, rstd)
    tl.store(Y + row * stride + cols, (x * rstd).to(x_dtype) * w.to(x_dtype), mask=mask)


@triton.jit
def rms_norm_bwd(DY, DX, X, W, RSTD, DW, stride, n_rows, n_cols, rows_per_program, BLOCK: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    start = pid * rows_per_program
    end = tl.minimum(start + rows_per_program, n_rows)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    dw = tl.zeros((BLOCK,), dtype=tl.float32)
    w = tl.load(W + cols, mask=mask, other=0.0).to(tl.float32)
    for r in range(start, end):
        dy = tl.load(DY + r * stride + cols, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(X + r * stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(RSTD + r)
        m = dy * w
        dx = rstd * m - rstd * (rstd * rstd / n_cols) * tl.sum(m * x, axis=0) * x
        dw += dy * (x * rstd)
        tl.store(DX + r * stride + cols, dx.to(DX.dtype.element_ty), mask=mask)
    tl.store(DW + pid * n_cols + cols, dw, mask=mask)


PROGRAMS = 4  # what a wrapper sizes by the SM count on a GPU


class RMSNorm(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, eps):
        shape = x.shape
        x2 = x.reshape(-1, shape[-1])
        rows, cols = x2.shape
        y = torch.empty_like(x2)
        rstd = torch.empty(rows, dtype=torch.float32)
        rms_norm_fwd[(rows,)](y, x2, w, rstd, x2.stride(0), cols, eps, BLOCK=triton.next_power_of_2(cols))
        ctx.save_for_backward(x2, w, rstd)
        return y.reshape(shape)

    @staticmethod
    def backward(ctx, dy):
        x2, w, rstd = ctx.saved_tensors
        rows, cols = x2.shape
        dy2 = dy.reshape(rows, cols).contiguous()
        dx = torch.empty_like(x2)
        programs = min(PROGRAMS, rows)
        dw = torch.empty((programs, cols), dtype=torch.float32)
        rms_norm_bwd[(programs,)](dy2, dx, x2, w, rstd, dw, x2.stride(0), rows, cols, triton.cdiv(rows, programs),
                                  BLOCK=triton.next_power_of_2(cols))
        return dx.reshape(dy.shape), dw.sum(0).to(w.dtype), None


# ---- cross entropy (Liger style): online softmax over vocabulary blocks, gradient in place ----
@triton.jit
def cross_entropy_kernel(X, stride, Y, LOSS, n_cols, n_non_ignore, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    X += row * stride
    y = tl.load(Y + row)
    if y == ignore_index:
        for i in range(0, n_cols, BLOCK):
            offs = i + tl.arange(0, BLOCK)
            tl.store(X + offs, 0.0, mask=offs < n_cols)
        return
    m = float("-inf")
    d = 0.0
    picked = tl.load(X + y).to(tl.float32)
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(d)
    for i in range(0, n_cols, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        x = tl.load(X + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        g = tl.exp(x - m) / d
        g = tl.where(offs == y, g - 1.0, g) / n_non_ignore
        tl.store(X + offs, g.to(X.dtype.element_ty), mask=offs < n_cols)
    tl.store(LOSS + row, (lse - picked) / n_non_ignore)


class CrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx, logits, target, ignore_index):
        rows, cols = logits.shape
        grad = logits.detach().clone()
        loss = torch.zeros(rows, dtype=torch.float32)
        n_non_ignore = int((target != ignore_index).sum().item())
        block = min(1024, triton.next_power_of_2(cols))
        cross_entropy_kernel[(rows,)](grad, grad.stride(0), target, loss, cols, max(n_non_ignore, 1),
                                      ignore_index, BLOCK=block)
        ctx.save_for_backward(grad)
        return loss.sum()

    @staticmethod
    def backward(ctx, dloss):
        (grad,) = ctx.saved_tensors
        return grad * dloss, None, None


# ---- SwiGLU (Liger style): a row per program, forward and backward ----
@triton.jit
def swiglu_fwd(A, B, C, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    a = tl.load(A + row * stride + cols, mask=mask, other=0).to(tl.float32)
    b = tl.load(B + row * stride + cols, mask=mask, other=0)
    c = (a * tl.sigmoid(a)).to(b.dtype) * b
    tl.store(C + row * stride + cols, c, mask=mask)


@triton.jit
def swiglu_bwd(DC, A, B, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    dc = tl.load(DC + row * stride + cols, mask=mask, other=0)
    a = tl.load(A + row * stride + cols, mask=mask, other=0).to(tl.float32)
    b = tl.load(B + row * stride + cols, mask=mask, other=0)
    sig = tl.sigmoid(a)
    silu = a * sig
    db = dc * silu.to(dc.dtype)
    da = dc * (silu * (1 - sig) + sig) * b
    tl.store(A + row * stride + cols, da.to(A.dtype.element_ty), mask=mask)
    tl.store(B + row * stride + cols, db, mask=mask)


class SwiGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        shape = a.shape
        a2, b2 = a.reshape(-1, shape[-1]).contiguous(), b.reshape(-1, shape[-1]).contiguous()
        c = torch.empty_like(a2)
        swiglu_fwd[(a2.shape[0],)](a2, b2, c, a2.stride(0), a2.shape[1], BLOCK=triton.next_power_of_2(a2.shape[1]))
        ctx.save_for_backward(a2, b2)
        return c.reshape(shape)

    @staticmethod
    def backward(ctx, dc):
        a2, b2 = (t.clone() for t in ctx.saved_tensors)
        dc2 = dc.reshape(a2.shape).contiguous()
        swiglu_bwd[(a2.shape[0],)](dc2, a2, b2, a2.stride(0), a2.shape[1], BLOCK=triton.next_power_of_2(a2.shape[1]))
        return a2.reshape(dc.shape), b2.reshape(dc.shape)


# ---- layer norm forward (tutorial 05): column loops for the statistics and the output ----
@triton.jit
def layer_norm_fwd(X, Y, W, B, MEAN, RSTD, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        acc += x * x
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    tl.store(MEAN + row, mean)
    tl.store(RSTD + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        tl.store(Y + cols, ((x - mean) * rstd * w + b).to(Y.dtype.element_ty), mask=mask)


def layer_norm(x, w, b, eps=1e-5):
    x2 = x.reshape(-1, x.shape[-1])
    rows, n = x2.shape
    y = torch.empty_like(x2)
    mean = torch.empty(rows, dtype=torch.float32)
    rstd = torch.empty(rows, dtype=torch.float32)
    block = min(triton.next_power_of_2(n), 65536 // x.element_size(), 256)
    layer_norm_fwd[(rows,)](x2, y, w, b, mean, rstd, x2.stride(0), n, eps, BLOCK=block)
    return y.reshape(x.shape)


# ---- matmul (tutorial 03): grouped program order, a K loop ----
@triton.jit
def matmul_kernel(A, B, C, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_n
    group = pid // in_group
    first_m = group * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % in_group) % size_m)
    pid_n = (pid % in_group) // size_m
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = A + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = B + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=rk[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    c = acc.to(C.dtype.element_ty)
    cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(C + cm[:, None] * scm + cn[None, :] * scn, c, mask=(cm[:, None] < M) & (cn[None, :] < N))


def matmul(a, b, block=(32, 32, 32)):
    (m, k), (_, n) = a.shape, b.shape
    c = torch.empty((m, n), dtype=a.dtype)
    bm, bn, bk = block
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8)
    return c


# ---- one program, a long loop: a strided sum (a reduction test's single-program kernel) ----
@triton.jit
def long_loop_sum(X, OUT, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(X + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(OUT, tl.sum(acc, axis=0))


def long_sum(x, block):
    out = torch.empty(1, dtype=torch.float32)
    long_loop_sum[(1,)](x, out, x.numel(), BLOCK=block)
    return out


# ---- pointwise (FlagGems style): one kernel over many dtypes and sizes ----
@triton.jit
def add_alpha_kernel(X, Y, OUT, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask)
    y = tl.load(Y + offs, mask=mask)
    tl.store(OUT + offs, x + y * alpha, mask=mask)


def add_alpha(x, y, alpha, block=1024):
    out = torch.empty_like(x)
    add_alpha_kernel[(triton.cdiv(x.numel(), block),)](x, y, out, alpha, x.numel(), BLOCK=block)
    return out
