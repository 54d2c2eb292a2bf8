"""Mamba-2 SSD ``_chunk_state_fwd`` style: per (batch, chunk, head) the state contribution
``sum_l x[l, p] * B[l, n] * exp(dA_cs[last] - dA_cs[l]) * dt[l]`` as a ``tl.dot`` over the chunk,
with x read through a column-major ``tl.make_block_ptr`` (``order=(0, 1)``), B through a row-major
one of the head's group (``nheads // ngroups``), both loaded with ``boundary_check=(0, 1)`` and
``padding_option="zero"`` over a ragged last chunk and moved with ``tl.advance``; the chunk
length is ``min(chunk_size, seqlen - c * chunk_size)``, the decay and dt loaded with masks, and
``tl.dot(..., input_precision="ieee")``.  A second kernel applies the causal segment-sum mask of
the chunk scan: ``tl.where(m >= k, exp(cs[m] - cs[k]), 0.0)`` with -inf decays."""

import numpy as np
from compat_harness import close, stride

import tiles
import tiles.language as tl


@tiles.jit
def _chunk_state_fwd_kernel(x_ptr, b_ptr, states_ptr, dt_ptr, dA_cumsum_ptr, hdim, dstate, chunk_size, seqlen,
                            nheads_ngroups_ratio, nchunks,
                            stride_x_batch, stride_x_seqlen, stride_x_head, stride_x_hdim,
                            stride_b_batch, stride_b_seqlen, stride_b_head, stride_b_dstate,
                            stride_states_batch, stride_states_chunk, stride_states_head, stride_states_hdim,
                            stride_states_dstate, stride_dt_batch, stride_dt_chunk, stride_dt_head, stride_dt_csize,
                            BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    pid_bc = tl.program_id(1)
    pid_b = pid_bc // nchunks
    pid_c = pid_bc - pid_b * nchunks
    pid_h = tl.program_id(2)
    num_pid_n = tl.cdiv(dstate, BLOCK_SIZE_N)
    pid_m = tl.program_id(0) // num_pid_n
    pid_n = tl.program_id(0) % num_pid_n
    chunk_size_limit = min(chunk_size, seqlen - pid_c * chunk_size)
    x_base = x_ptr + pid_b * stride_x_batch + pid_c * chunk_size * stride_x_seqlen + pid_h * stride_x_head
    b_base = (b_ptr + pid_b * stride_b_batch + pid_c * chunk_size * stride_b_seqlen
              + (pid_h // nheads_ngroups_ratio) * stride_b_head)
    x_block = tl.make_block_ptr(x_base, shape=(hdim, chunk_size_limit), strides=(stride_x_hdim, stride_x_seqlen),
                                offsets=(pid_m * BLOCK_SIZE_M, 0), block_shape=(BLOCK_SIZE_M, BLOCK_SIZE_K),
                                order=(0, 1))
    b_block = tl.make_block_ptr(b_base, shape=(chunk_size_limit, dstate), strides=(stride_b_seqlen, stride_b_dstate),
                                offsets=(0, pid_n * BLOCK_SIZE_N), block_shape=(BLOCK_SIZE_K, BLOCK_SIZE_N),
                                order=(1, 0))
    dt_base = dt_ptr + pid_b * stride_dt_batch + pid_c * stride_dt_chunk + pid_h * stride_dt_head
    dA_base = dA_cumsum_ptr + pid_b * stride_dt_batch + pid_c * stride_dt_chunk + pid_h * stride_dt_head
    dA_cs_last = tl.load(dA_base + (chunk_size_limit - 1) * stride_dt_csize).to(tl.float32)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    for k in range(0, chunk_size_limit, BLOCK_SIZE_K):
        x = tl.load(x_block, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_block, boundary_check=(0, 1), padding_option="zero").to(tl.float32)
        k_mask = offs_k < chunk_size_limit - k
        dA_cs_k = tl.load(dA_base + (k + offs_k) * stride_dt_csize, mask=k_mask, other=0.0).to(tl.float32)
        dt_k = tl.load(dt_base + (k + offs_k) * stride_dt_csize, mask=k_mask, other=0.0).to(tl.float32)
        scale = tl.exp(dA_cs_last - dA_cs_k) * dt_k
        b *= scale[:, None]
        acc += tl.dot(x, b.to(x.dtype), input_precision="ieee")
        x_block = tl.advance(x_block, (0, BLOCK_SIZE_K))
        b_block = tl.advance(b_block, (BLOCK_SIZE_K, 0))
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    states = (states_ptr + pid_b * stride_states_batch + pid_c * stride_states_chunk + pid_h * stride_states_head
              + offs_m[:, None] * stride_states_hdim + offs_n[None, :] * stride_states_dstate)
    tl.store(states, acc, mask=(offs_m[:, None] < hdim) & (offs_n[None, :] < dstate))


@tiles.jit
def _segsum_decay_kernel(cs_ptr, out_ptr, L: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, L)
    cs = tl.load(cs_ptr + row * L + offs)
    m, k = offs[:, None], offs[None, :]
    decay = tl.where(m >= k, tl.exp(cs[:, None] - cs[None, :]), 0.0)
    tl.store(out_ptr + row * L * L + m * L + k, decay)


def check(rng):
    batch, seqlen, nheads, ngroups, hdim, dstate, chunk = 2, 90, 4, 2, 24, 20, 32
    nchunks = -(-seqlen // chunk)
    x = rng.standard_normal((batch, seqlen, nheads, hdim)).astype(np.float32)
    b = rng.standard_normal((batch, seqlen, ngroups, dstate)).astype(np.float32)
    dt = np.log1p(np.exp(rng.standard_normal((batch, nheads, nchunks, chunk)))).astype(np.float32)
    a = -np.exp(rng.standard_normal(nheads)).astype(np.float32)
    dA_cs = np.cumsum(dt * a[None, :, None, None], axis=-1).astype(np.float32)
    states = np.full((batch, nchunks, nheads, hdim, dstate), np.nan, np.float32)
    grid = (tiles.cdiv(hdim, 16) * tiles.cdiv(dstate, 16), batch * nchunks, nheads)
    _chunk_state_fwd_kernel[grid](x, b, states, dt, dA_cs, hdim, dstate, chunk, seqlen, nheads // ngroups, nchunks,
                                  *(stride(x, i) for i in range(4)), *(stride(b, i) for i in range(4)),
                                  *(stride(states, i) for i in range(5)), *(stride(dt, i) for i in (0, 2, 1, 3)),
                                  BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
    ref = np.zeros(states.shape)
    for c in range(nchunks):
        lo, hi = c * chunk, min(seqlen, (c + 1) * chunk)
        n = hi - lo
        w = np.exp(dA_cs[:, :, c, n - 1:n].astype(np.float64) - dA_cs[:, :, c, :n]) * dt[:, :, c, :n]  # (b, h, l)
        bg = np.repeat(b[:, lo:hi], nheads // ngroups, axis=2).astype(np.float64)  # (b, l, h, n)
        ref[:, c] = np.einsum("blhp,blhn,bhl->bhpn", x[:, lo:hi].astype(np.float64), bg, w)
    close(states, ref, rtol=1e-4, atol=1e-4)

    cs = np.cumsum(rng.standard_normal((3, 16)), axis=1).astype(np.float32)
    cs[1, 5:] = -np.inf  # a decay that reaches zero
    out = np.empty((3, 16, 16), np.float32)
    _segsum_decay_kernel[(3,)](cs, out, L=16)
    with np.errstate(invalid="ignore"):
        diff = cs[:, :, None] - cs[:, None, :]
        ref2 = np.where(np.tril(np.ones((16, 16), bool)), np.exp(diff), 0.0)
    close(out, ref2, rtol=1e-5, atol=1e-6)
