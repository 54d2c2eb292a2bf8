"""FlagGems style ``max_pool2d_with_indices`` forward and its backward (a gather over the windows
that could have picked each input pixel), with padding, stride and dilation.

Language features exercised: ``@autotune`` over 2-D tile shapes keyed on constexpr pooling
parameters; the padding value from ``get_dtype_min(input_ptr.type.element_ty)``, a ``@jit`` helper
that reads ``dtype.value`` and returns a local ``value: tl.constexpr`` from inside ``if`` branches;
``tl.full((BH, BW), min_val, dtype=dtype)`` with that dtype and ``tl.full(..., -1, dtype=tl.int64)``;
doubly nested ``tl.static_range(0, kernel_h)`` / ``(0, kernel_w)`` loops carrying two
accumulators; *negative* input coordinates (``h * stride - padding + kh * dilation``) in masks;
an int32 flat index ``tl.where``-d into an int64 accumulator; in the backward, ``%`` and ``//`` of
possibly negative numerators by constexpr strides (C truncation, not Python flooring) deciding
which outputs map to an input pixel, ``other=-1`` index loads compared with flat positions and a
second load masked by that comparison; fp16 values compared with ``>`` (NaN never wins)."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def get_dtype_min(dtype):
    dtype_ = dtype.value
    if dtype_.is_floating():
        value: tl.constexpr = float("-inf")
        return value
    if dtype_.is_int_signed():
        width: tl.constexpr = dtype_.int_bitwidth
        value: tl.constexpr = -1 * 2 ** (width - 1)
        return value
    if dtype_.is_int_unsigned():
        value: tl.constexpr = 0
        return value


@tiles.autotune(configs=[tiles.Config({"BLOCK_H": 4, "BLOCK_W": 8}, num_warps=2),
                         tiles.Config({"BLOCK_H": 8, "BLOCK_W": 4}, num_warps=2)],
                key=["out_h", "out_w", "kernel_h", "kernel_w", "stride_h", "stride_w"])
@tiles.jit
def max_pool2d_forward_kernel(input_ptr, output_ptr, indices_ptr, in_stride_n, in_stride_c, in_stride_h, in_stride_w,
                              in_c, in_h, in_w, out_h, out_w, kernel_h: tl.constexpr, kernel_w: tl.constexpr,
                              stride_h: tl.constexpr, stride_w: tl.constexpr, padding_h: tl.constexpr,
                              padding_w: tl.constexpr, dilation_h: tl.constexpr, dilation_w: tl.constexpr,
                              BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    pid_nc = tl.program_id(0)
    pid_hw = tl.program_id(1)
    num_w_blocks = tl.cdiv(out_w, BLOCK_W)
    h_block_idx = pid_hw // num_w_blocks
    w_block_idx = pid_hw % num_w_blocks
    n_idx = pid_nc // in_c
    c_idx = pid_nc % in_c
    h_out = h_block_idx * BLOCK_H + tl.arange(0, BLOCK_H)
    w_out = w_block_idx * BLOCK_W + tl.arange(0, BLOCK_W)
    dtype = input_ptr.type.element_ty
    min_val = get_dtype_min(dtype)
    best = tl.full((BLOCK_H, BLOCK_W), min_val, dtype=dtype)
    best_idx = tl.full((BLOCK_H, BLOCK_W), -1, dtype=tl.int64)
    base = input_ptr + n_idx * in_stride_n + c_idx * in_stride_c
    for kh in tl.static_range(0, kernel_h):
        for kw in tl.static_range(0, kernel_w):
            h_in = h_out[:, None] * stride_h - padding_h + kh * dilation_h
            w_in = w_out[None, :] * stride_w - padding_w + kw * dilation_w
            in_mask = (h_in >= 0) & (h_in < in_h) & (w_in >= 0) & (w_in < in_w)
            val = tl.load(base + h_in * in_stride_h + w_in * in_stride_w, mask=in_mask, other=min_val)
            is_new = val > best
            best = tl.where(is_new, val, best)
            best_idx = tl.where(is_new & in_mask, h_in * in_w + w_in, best_idx)
    out_offs = pid_nc * out_h * out_w + h_out[:, None] * out_w + w_out[None, :]
    out_mask = (h_out[:, None] < out_h) & (w_out[None, :] < out_w)
    tl.store(output_ptr + out_offs, best, mask=out_mask)
    tl.store(indices_ptr + out_offs, best_idx, mask=out_mask)


@tiles.autotune(configs=[tiles.Config({"BLOCK_IN_H": 4, "BLOCK_IN_W": 8}, num_warps=2),
                         tiles.Config({"BLOCK_IN_H": 8, "BLOCK_IN_W": 8}, num_warps=4)],
                key=["in_h", "in_w", "kernel_h", "kernel_w", "stride_h", "stride_w"])
@tiles.jit
def max_pool2d_backward_kernel(grad_output_ptr, indices_ptr, grad_input_ptr, in_h, in_w, out_h, out_w, out_stride_nc,
                               out_stride_h, out_stride_w, kernel_h: tl.constexpr, kernel_w: tl.constexpr,
                               stride_h: tl.constexpr, stride_w: tl.constexpr, padding_h: tl.constexpr,
                               padding_w: tl.constexpr, dilation_h: tl.constexpr, dilation_w: tl.constexpr,
                               BLOCK_IN_H: tl.constexpr, BLOCK_IN_W: tl.constexpr):
    nc_idx = tl.program_id(0)
    pid_hw = tl.program_id(1)
    num_w_blocks = tl.cdiv(in_w, BLOCK_IN_W)
    h_in = (pid_hw // num_w_blocks) * BLOCK_IN_H + tl.arange(0, BLOCK_IN_H)
    w_in = (pid_hw % num_w_blocks) * BLOCK_IN_W + tl.arange(0, BLOCK_IN_W)
    flat_in = h_in[:, None] * in_w + w_in[None, :]
    acc = tl.zeros((BLOCK_IN_H, BLOCK_IN_W), dtype=tl.float32)
    idx_base = indices_ptr + nc_idx * out_stride_nc
    go_base = grad_output_ptr + nc_idx * out_stride_nc
    for kh in tl.static_range(0, kernel_h):
        for kw in tl.static_range(0, kernel_w):
            num_h = h_in[:, None] + padding_h - kh * dilation_h
            num_w = w_in[None, :] + padding_w - kw * dilation_w
            on_grid = (num_h % stride_h == 0) & (num_w % stride_w == 0)
            h_o = num_h // stride_h
            w_o = num_w // stride_w
            load_mask = on_grid & (h_o >= 0) & (h_o < out_h) & (w_o >= 0) & (w_o < out_w)
            offs = tl.where(load_mask, h_o, 0) * out_stride_h + tl.where(load_mask, w_o, 0)
            picked = tl.load(idx_base + offs, mask=load_mask, other=-1)
            acc += tl.load(go_base + offs, mask=picked == flat_in, other=0.0)
    store_mask = (h_in[:, None] < in_h) & (w_in[None, :] < in_w)
    tl.store(grad_input_ptr + nc_idx * in_h * in_w + flat_in, acc, mask=store_mask)


def _pool_ref(x, k, s, p, d, oh_n, ow_n):
    N, C, H, W = x.shape
    best = np.full((N, C, oh_n, ow_n), -np.inf, np.float32)
    idx = np.full((N, C, oh_n, ow_n), -1, np.int64)
    oh = np.arange(oh_n)[:, None]
    ow = np.arange(ow_n)[None, :]
    for kh in range(k[0]):
        for kw in range(k[1]):
            h = oh * s[0] - p[0] + kh * d[0]
            w = ow * s[1] - p[1] + kw * d[1]
            ok = (h >= 0) & (h < H) & (w >= 0) & (w < W)
            v = np.where(ok, x[:, :, np.clip(h, 0, H - 1), np.clip(w, 0, W - 1)].astype(np.float32), -np.inf)
            with np.errstate(invalid="ignore"):
                new = v > best
            best = np.where(new, v, best)
            idx = np.where(new & ok, h * W + w, idx)
    return best, idx


def check(rng):
    N, C, H, W = 2, 3, 9, 11
    k, s, p, d = (3, 2), (2, 1), (1, 1), (1, 2)
    oh_n = (H + 2 * p[0] - (k[0] - 1) * d[0] - 1) // s[0] + 1
    ow_n = (W + 2 * p[1] - (k[1] - 1) * d[1] - 1) // s[1] + 1
    x = rng.standard_normal((N, C, H, W)).astype(np.float16)
    x[0, 0, :2, :3] = -np.inf  # a window of -inf only: index stays -1
    x[0, 1, 4, 4] = np.nan
    x[1, 2, 3, 5] = np.inf
    xt = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)  # channels-last strides
    out = np.zeros((N, C, oh_n, ow_n), np.float16)
    ind = np.zeros((N, C, oh_n, ow_n), np.int64)
    st = [v // xt.itemsize for v in xt.strides]
    grid = lambda meta: (N * C, tiles.cdiv(oh_n, meta["BLOCK_H"]) * tiles.cdiv(ow_n, meta["BLOCK_W"]))  # noqa: E731
    max_pool2d_forward_kernel[grid](xt, out, ind, *st, C, H, W, oh_n, ow_n, *k, *s, *p, *d)
    best, idx = _pool_ref(x, k, s, p, d, oh_n, ow_n)
    close(out, best.astype(np.float16))
    close(ind, idx)
    assert (ind == -1).any()

    go = rng.standard_normal((N, C, oh_n, ow_n)).astype(np.float32)
    gi = np.full((N, C, H, W), 3.0, np.float32)
    grid = lambda meta: (N * C, tiles.cdiv(H, meta["BLOCK_IN_H"]) * tiles.cdiv(W, meta["BLOCK_IN_W"]))  # noqa: E731
    max_pool2d_backward_kernel[grid](go, ind, gi, H, W, oh_n, ow_n, oh_n * ow_n, ow_n, 1, *k, *s, *p, *d)
    ref = np.zeros((N * C, H * W), np.float64)
    flat_idx = ind.reshape(N * C, -1)
    flat_go = go.reshape(N * C, -1)
    for r in range(N * C):
        ok = flat_idx[r] >= 0
        np.add.at(ref[r], flat_idx[r][ok], flat_go[r][ok])
    close(gi, ref.reshape(N, C, H, W), rtol=1e-5, atol=1e-5)
