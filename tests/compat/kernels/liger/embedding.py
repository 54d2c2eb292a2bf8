"""Liger-Kernel style embedding: the forward gathers a [BLOCK_M, BLOCK_N] tile of rows picked by
int64 indices (a 2-D grid over tokens and embedding columns); the backward scatters the output
gradient back with ``tl.atomic_add`` into the weight gradient, where repeated indices collide."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _embedding_fwd(emb_ptr, idx_ptr, out_ptr, n_tokens, dim, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = offs_m < n_tokens
    mask_n = offs_n < dim
    ids = tl.load(idx_ptr + offs_m, mask=mask_m, other=0)
    rows = tl.load(emb_ptr + ids[:, None] * dim + offs_n[None, :], mask=mask_m[:, None] & mask_n[None, :],
                   other=0.0)
    tl.store(out_ptr + offs_m[:, None] * dim + offs_n[None, :], rows, mask=mask_m[:, None] & mask_n[None, :])


@tiles.jit
def _embedding_bwd(grad_out_ptr, grad_w_ptr, idx_ptr, n_tokens, dim, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = offs_m < n_tokens
    mask_n = offs_n < dim
    ids = tl.load(idx_ptr + offs_m, mask=mask_m, other=0)
    g = tl.load(grad_out_ptr + offs_m[:, None] * dim + offs_n[None, :], mask=mask_m[:, None] & mask_n[None, :],
                other=0.0)
    tl.atomic_add(grad_w_ptr + ids[:, None] * dim + offs_n[None, :], g, mask=mask_m[:, None] & mask_n[None, :])


def check(rng):
    vocab, dim, n_tokens = 17, 40, 53
    weight = rng.standard_normal((vocab, dim)).astype(np.float32)
    ids = rng.integers(0, vocab, n_tokens).astype(np.int64)
    ids[:4] = [vocab - 1, 0, vocab - 1, vocab - 1]
    out = np.empty((n_tokens, dim), np.float32)
    grid = (tiles.cdiv(n_tokens, 16), tiles.cdiv(dim, 16))
    _embedding_fwd[grid](weight, ids, out, n_tokens, dim, BLOCK_M=16, BLOCK_N=16)
    close(out, weight[ids], rtol=0, atol=0)
    grad_out = rng.standard_normal((n_tokens, dim)).astype(np.float32)
    grad_w = np.zeros_like(weight)
    _embedding_bwd[grid](grad_out, grad_w, ids, n_tokens, dim, BLOCK_M=16, BLOCK_N=16)
    expected = np.zeros((vocab, dim))
    np.add.at(expected, ids, grad_out.astype(np.float64))
    close(grad_w, expected, rtol=1e-5, atol=1e-5)
