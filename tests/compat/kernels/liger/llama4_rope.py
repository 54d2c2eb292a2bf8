"""Liger-Kernel style Llama-4 RoPE: complex (interleaved real/imag) rotary embedding applied in
place to q and k, one (batch*seq, head) pair per program.

Language features exercised: ``freqs`` loaded as a ``[BLOCK, 2]`` tile with offsets
``d[:, None] * 2 + tl.arange(0, 2)[None, :]`` and a mask broadcast from ``mask_d[:, None]``, then
split into real/imag halves with ``tl.split``; ``tl.math.fma`` with a negated product as the
addend; ``tl.static_range(0, HALF, BLOCK)`` with a constexpr start/stop/step that does not divide
evenly; an early ``return`` on ``batch_idx >= batch_size or seq_idx >= seq_len`` (Python ``or``
on runtime scalars); ``if pid_h < n_q_heads`` against a constexpr head count, so one program
touches q, k, both or neither; a runtime float ``imag_sign`` (conjugation for the backward pass);
stride-2 loads/stores ``ptr + d * 2 + 1`` on the same buffer it reads (in place)."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _rope_complex_kernel(q_ptr, k_ptr, freqs_ptr, q_row_stride, k_row_stride, q_head_stride, k_head_stride,
                         freqs_row_stride, seq_len, batch_size, imag_sign, head_dim_half: tl.constexpr,
                         n_q_heads: tl.constexpr, n_k_heads: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    pid_bs = tl.program_id(0)
    pid_h = tl.program_id(1)
    batch_idx = pid_bs // seq_len
    seq_idx = pid_bs % seq_len
    if batch_idx >= batch_size or seq_idx >= seq_len:
        return
    row = batch_idx * seq_len + seq_idx
    q_base = q_ptr + row * q_row_stride
    k_base = k_ptr + row * k_row_stride
    f_base = seq_idx * freqs_row_stride
    for d0 in tl.static_range(0, head_dim_half, BLOCK_SIZE):
        d = d0 + tl.arange(0, BLOCK_SIZE)
        mask_d = d < head_dim_half
        f_offs = d[:, None] * 2 + tl.arange(0, 2)[None, :]
        f = tl.load(freqs_ptr + f_base + f_offs, mask=mask_d[:, None], other=0.0)
        f_re, f_im = tl.split(f)
        f_im = f_im * imag_sign
        if pid_h < n_q_heads:
            qh = q_base + pid_h * q_head_stride
            a = tl.load(qh + d * 2, mask=mask_d, other=0.0)
            b = tl.load(qh + d * 2 + 1, mask=mask_d, other=0.0)
            tl.store(qh + d * 2, tl.math.fma(a, f_re, -(b * f_im)), mask=mask_d)
            tl.store(qh + d * 2 + 1, tl.math.fma(a, f_im, b * f_re), mask=mask_d)
        if pid_h < n_k_heads:
            kh = k_base + pid_h * k_head_stride
            a = tl.load(kh + d * 2, mask=mask_d, other=0.0)
            b = tl.load(kh + d * 2 + 1, mask=mask_d, other=0.0)
            tl.store(kh + d * 2, tl.math.fma(a, f_re, -(b * f_im)), mask=mask_d)
            tl.store(kh + d * 2 + 1, tl.math.fma(a, f_im, b * f_re), mask=mask_d)


def _apply(x, freqs, sign):
    xc = x[..., 0::2].astype(np.float64) + 1j * x[..., 1::2]
    fc = freqs[..., 0].astype(np.float64) + 1j * sign * freqs[..., 1]
    y = xc * fc[None, :, None, :]
    out = np.empty(x.shape, np.float64)
    out[..., 0::2], out[..., 1::2] = y.real, y.imag
    return out


def check(rng):
    bs, sl, nq, nk, hd = 2, 5, 4, 2, 24
    half = hd // 2
    theta = rng.random((sl, half)) * 2 * np.pi
    freqs = np.stack([np.cos(theta), np.sin(theta)], -1).astype(np.float32)
    q = rng.standard_normal((bs, sl, nq, hd)).astype(np.float32)
    k = rng.standard_normal((bs, sl, nk, hd)).astype(np.float32)
    q0, k0 = q.copy(), k.copy()
    # one spare row of programs past batch*seq: they must return without touching anything
    grid = (bs * sl + sl, max(nq, nk))
    for sign in (1.0, -1.0):
        _rope_complex_kernel[grid](q, k, freqs, nq * hd, nk * hd, hd, hd, half * 2, sl, bs, sign,
                                   head_dim_half=half, n_q_heads=nq, n_k_heads=nk, BLOCK_SIZE=8)
        close(q, _apply(q0, freqs, sign), rtol=1e-5, atol=1e-5)
        close(k, _apply(k0, freqs, sign), rtol=1e-5, atol=1e-5)
        q0, k0 = q.copy(), k.copy()
    # forward then conjugate is the identity on unit-modulus frequencies
    q1 = rng.standard_normal((bs, sl, nq, hd)).astype(np.float32)
    k1 = np.zeros((bs, sl, nk, hd), np.float32)
    keep = q1.copy()
    for sign in (1.0, -1.0):
        _rope_complex_kernel[grid](q1, k1, freqs, nq * hd, nk * hd, hd, hd, half * 2, sl, bs, sign,
                                   head_dim_half=half, n_q_heads=nq, n_k_heads=nk, BLOCK_SIZE=8)
    close(q1, keep, rtol=1e-5, atol=1e-5)
    assert (k1 == 0).all()
