"""Liger-Kernel style RoPE: all q and k heads of one token per program, padded head counts,
2-D blocks of (heads, half head dim), a BACKWARD_PASS constexpr flipping the sine."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _triton_rope(q_ptr, q_row_stride, k_ptr, k_row_stride, cos, cos_row_stride, sin, sin_row_stride, sl,
                 bs: tl.constexpr, n_qh: tl.constexpr, n_kh: tl.constexpr, hd: tl.constexpr,
                 pad_n_qh: tl.constexpr, pad_n_kh: tl.constexpr, pad_hd: tl.constexpr,
                 BACKWARD_PASS: tl.constexpr = False):
    pid = tl.program_id(0)
    q_ptr = q_ptr + pid * q_row_stride
    k_ptr = k_ptr + pid * k_row_stride
    cos_row_idx = pid % sl
    cos = cos + cos_row_idx * cos_row_stride
    sin = sin + cos_row_idx * sin_row_stride
    cos_offsets = tl.arange(0, pad_hd // 2)
    cos_mask = cos_offsets < hd // 2
    cos_row = tl.load(cos + cos_offsets, mask=cos_mask, other=0)
    sin_row = tl.load(sin + cos_offsets, mask=cos_mask, other=0)
    first_half_q_offsets = tl.arange(0, pad_n_qh)[:, None] * hd + tl.arange(0, pad_hd // 2)[None, :]
    first_half_k_offsets = tl.arange(0, pad_n_kh)[:, None] * hd + tl.arange(0, pad_hd // 2)[None, :]
    first_q_mask = (tl.arange(0, pad_n_qh)[:, None] < n_qh) & (tl.arange(0, pad_hd // 2)[None, :] < hd // 2)
    first_k_mask = (tl.arange(0, pad_n_kh)[:, None] < n_kh) & (tl.arange(0, pad_hd // 2)[None, :] < hd // 2)
    q_tile_1 = tl.load(q_ptr + first_half_q_offsets, mask=first_q_mask, other=0).to(sin_row.dtype)
    k_tile_1 = tl.load(k_ptr + first_half_k_offsets, mask=first_k_mask, other=0).to(sin_row.dtype)
    second_half_q_offsets = first_half_q_offsets + (hd // 2)
    second_half_k_offsets = first_half_k_offsets + (hd // 2)
    q_tile_2 = tl.load(q_ptr + second_half_q_offsets, mask=first_q_mask, other=0).to(sin_row.dtype)
    k_tile_2 = tl.load(k_ptr + second_half_k_offsets, mask=first_k_mask, other=0).to(sin_row.dtype)
    if not BACKWARD_PASS:
        new_q_tile_1 = q_tile_1 * cos_row - q_tile_2 * sin_row
        new_q_tile_2 = q_tile_2 * cos_row + q_tile_1 * sin_row
        new_k_tile_1 = k_tile_1 * cos_row - k_tile_2 * sin_row
        new_k_tile_2 = k_tile_2 * cos_row + k_tile_1 * sin_row
    else:
        new_q_tile_1 = q_tile_1 * cos_row + q_tile_2 * sin_row
        new_q_tile_2 = q_tile_2 * cos_row - q_tile_1 * sin_row
        new_k_tile_1 = k_tile_1 * cos_row + k_tile_2 * sin_row
        new_k_tile_2 = k_tile_2 * cos_row - k_tile_1 * sin_row
    tl.store(q_ptr + first_half_q_offsets, new_q_tile_1, mask=first_q_mask)
    tl.store(q_ptr + second_half_q_offsets, new_q_tile_2, mask=first_q_mask)
    tl.store(k_ptr + first_half_k_offsets, new_k_tile_1, mask=first_k_mask)
    tl.store(k_ptr + second_half_k_offsets, new_k_tile_2, mask=first_k_mask)


def _rope_ref(x, cos, sin, sign):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - sign * x2 * sin, x2 * cos + sign * x1 * sin], -1)


def check(rng):
    bsz, sl, n_qh, n_kh, hd = 2, 5, 3, 1, 12
    q = rng.standard_normal((bsz, sl, n_qh, hd)).astype(np.float32)
    k = rng.standard_normal((bsz, sl, n_kh, hd)).astype(np.float32)
    theta = rng.uniform(0, 6.3, (sl, hd // 2)).astype(np.float32)
    cos, sin = np.cos(theta), np.sin(theta)
    for backward in (False,):
        q2, k2 = q.copy(), k.copy()
        _triton_rope[(bsz * sl,)](q2, n_qh * hd, k2, n_kh * hd, cos, hd // 2, sin, hd // 2, sl, bsz, n_qh, n_kh, hd,
                                  tiles.next_power_of_2(n_qh), tiles.next_power_of_2(n_kh), tiles.next_power_of_2(hd))
        sign = -1 if backward else 1
        c, s = cos[None, :, None, :], sin[None, :, None, :]
        close(q2, _rope_ref(q, c, s, sign), rtol=1e-5, atol=1e-6)
        close(k2, _rope_ref(k, c, s, sign), rtol=1e-5, atol=1e-6)
