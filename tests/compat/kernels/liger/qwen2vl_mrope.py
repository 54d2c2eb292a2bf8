"""Liger-Kernel style multimodal RoPE (Qwen2-VL): cos/sin come in three position streams
(temporal, height, width) and each rotary column takes its angle from the stream whose section
it falls in: three masked loads selected by a ``tl.where`` chain on section bounds passed as
``tl.constexpr``.  Q and K (different head counts) are rotated in place as [heads, half] tiles,
one program per token; ``BACKWARD_PASS`` flips the sine."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _mrope(q_ptr, k_ptr, cos_ptr, sin_ptr, seq_len, batch_seq,
           n_qh: tl.constexpr, n_kh: tl.constexpr, hd: tl.constexpr,
           pad_n_qh: tl.constexpr, pad_n_kh: tl.constexpr, pad_hd: tl.constexpr,
           sec_t: tl.constexpr, sec_h: tl.constexpr, sec_w: tl.constexpr, BACKWARD_PASS: tl.constexpr = False):
    token = tl.program_id(0)
    q_ptr = q_ptr + token * n_qh * hd
    k_ptr = k_ptr + token * n_kh * hd
    half = tl.arange(0, pad_hd // 2)
    t_end = sec_t
    h_end = t_end + sec_h
    w_end = h_end + sec_w
    in_t = half < t_end
    in_h = (half >= t_end) & (half < h_end)
    in_w = (half >= h_end) & (half < w_end)
    row = token * hd
    stream = batch_seq * hd
    t_cos = tl.load(cos_ptr + row + half, mask=in_t, other=0)
    h_cos = tl.load(cos_ptr + stream + row + half, mask=in_h, other=0)
    w_cos = tl.load(cos_ptr + 2 * stream + row + half, mask=in_w, other=0)
    t_sin = tl.load(sin_ptr + row + half, mask=in_t, other=0)
    h_sin = tl.load(sin_ptr + stream + row + half, mask=in_h, other=0)
    w_sin = tl.load(sin_ptr + 2 * stream + row + half, mask=in_w, other=0)
    cos_row = tl.where(in_t, t_cos, tl.where(in_h, h_cos, tl.where(in_w, w_cos, 0.0)))
    sin_row = tl.where(in_t, t_sin, tl.where(in_h, h_sin, tl.where(in_w, w_sin, 0.0)))
    if BACKWARD_PASS:
        sin_row = -sin_row
    col_ok = half < hd // 2
    q_off = tl.arange(0, pad_n_qh)[:, None] * hd + half[None, :]
    k_off = tl.arange(0, pad_n_kh)[:, None] * hd + half[None, :]
    q_mask = (tl.arange(0, pad_n_qh)[:, None] < n_qh) & col_ok[None, :]
    k_mask = (tl.arange(0, pad_n_kh)[:, None] < n_kh) & col_ok[None, :]
    q1 = tl.load(q_ptr + q_off, mask=q_mask, other=0).to(sin_row.dtype)
    k1 = tl.load(k_ptr + k_off, mask=k_mask, other=0).to(sin_row.dtype)
    q2 = tl.load(q_ptr + q_off + hd // 2, mask=q_mask, other=0).to(sin_row.dtype)
    k2 = tl.load(k_ptr + k_off + hd // 2, mask=k_mask, other=0).to(sin_row.dtype)
    tl.store(q_ptr + q_off, q1 * cos_row - q2 * sin_row, mask=q_mask)
    tl.store(q_ptr + q_off + hd // 2, q2 * cos_row + q1 * sin_row, mask=q_mask)
    tl.store(k_ptr + k_off, k1 * cos_row - k2 * sin_row, mask=k_mask)
    tl.store(k_ptr + k_off + hd // 2, k2 * cos_row + k1 * sin_row, mask=k_mask)


def _rotate(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    c, s = cos[:, :, None, :h], sin[:, :, None, :h]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)


def check(rng):
    bsz, seq, n_qh, n_kh, hd = 2, 5, 6, 2, 24
    sections = (2, 6, 4)
    pos = rng.integers(0, 50, (3, bsz, seq))
    inv_freq = 1.0 / (10000 ** (np.arange(0, hd, 2) / hd))
    angles = pos[..., None] * inv_freq
    emb = np.concatenate([angles, angles], -1)
    cos, sin = np.cos(emb).astype(np.float32), np.sin(emb).astype(np.float32)
    q = rng.standard_normal((bsz, seq, n_qh, hd)).astype(np.float32)
    k = rng.standard_normal((bsz, seq, n_kh, hd)).astype(np.float32)
    stream = np.concatenate([np.repeat(np.arange(3), sections), np.repeat(np.arange(3), sections)])
    cos_sel = np.take_along_axis(cos.transpose(1, 2, 3, 0), stream[None, None, :, None], 3)[..., 0]
    sin_sel = np.take_along_axis(sin.transpose(1, 2, 3, 0), stream[None, None, :, None], 3)[..., 0]
    for backward in (False, True):
        qq, kk = q.copy(), k.copy()
        _mrope[(bsz * seq,)](qq, kk, cos, sin, seq, bsz * seq, n_qh=n_qh, n_kh=n_kh, hd=hd, pad_n_qh=8, pad_n_kh=2,
                             pad_hd=32, sec_t=sections[0], sec_h=sections[1], sec_w=sections[2],
                             BACKWARD_PASS=backward)
        s = -sin_sel if backward else sin_sel
        close(qq, _rotate(q, cos_sel, s), rtol=1e-5, atol=1e-5)
        close(kk, _rotate(k, cos_sel, s), rtol=1e-5, atol=1e-5)
