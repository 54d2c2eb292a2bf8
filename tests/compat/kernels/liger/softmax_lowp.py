"""Liger-Kernel style softmax, single-block forward and backward, fed fp16 and bf16 rows *without* an
explicit upcast: the kernel loads ``x`` in its storage type and relies on Triton's reduction
typing -- ``tl.max`` of a tensor narrower than 32 bits returns float32 (Triton's ``standard.max``
casts fp16/bf16 inputs ``.to(float32)`` before reducing, in every release from 2.x to 3.9), so
``x - m`` promotes to fp32 and ``exp``/``sum``/division run in fp32 before the store rounds once.

Language features exercised: ``other=-float("inf")`` on a half-precision load;
``cache_modifier=".ca"`` loads and ``".cs"``/``".wb"`` stores; the *result dtype* of ``tl.max`` on
fp16/bf16 (float32) and hence mixed fp16-fp32 promotion in ``x - m``; an fp32 tile stored through
an fp16/bf16 pointer; ``tl.sum(dy * y)`` of a half-precision product (stays half in Triton). The
forward is checked to within one unit in the last place of the correctly rounded result."""

import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl


@tiles.jit
def _softmax_single_block_forward_kernel(Y_ptr, Y_row_stride, X_ptr, X_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_id = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(X_ptr + row_id * X_row_stride + offs, mask=mask, other=-float("inf"), cache_modifier=".ca")
    m = tl.max(x, axis=0)
    e = tl.exp(x - m)
    d = tl.sum(e, axis=0)
    tl.store(Y_ptr + row_id * Y_row_stride + offs, e / d, mask=mask, cache_modifier=".cs")


@tiles.jit
def _softmax_single_block_backward_kernel(dy_ptr, dy_stride, y_ptr, y_stride, dx_ptr, dx_stride, n_cols,
                                          BLOCK_SIZE: tl.constexpr):
    row_id = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    dy = tl.load(dy_ptr + row_id * dy_stride + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + row_id * y_stride + offs, mask=mask, other=0.0, cache_modifier=".ca")
    dot = tl.sum(dy * y, axis=0)
    tl.store(dx_ptr + row_id * dx_stride + offs, y * (dy - dot), mask=mask, cache_modifier=".wb")


def _ulps(a, b):
    ia = a.view(np.int16).astype(np.int64)
    ib = b.view(np.int16).astype(np.int64)
    return np.abs(ia - ib)


def check(rng):
    rows, cols = 6, 200
    for dt in (np.dtype(np.float16), BF16):
        x = (rng.standard_normal((rows, cols)) * 3).astype(dt)
        x[0, :2] = [-np.inf, 8.0]
        y = np.zeros((rows, cols), dt)
        _softmax_single_block_forward_kernel[(rows,)](y, cols, x, cols, cols, BLOCK_SIZE=256)
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(1, keepdims=True))
        ref = (e / e.sum(1, keepdims=True)).astype(dt)
        worst = int(_ulps(y, ref).max())
        assert worst <= 1, f"{dt}: softmax off by {worst} ulps (tl.max of {dt} must reduce to float32)"

        dy = rng.standard_normal((rows, cols)).astype(dt)
        dx = np.zeros((rows, cols), dt)
        _softmax_single_block_backward_kernel[(rows,)](dy, cols, y, cols, dx, cols, cols, BLOCK_SIZE=256)
        y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
        close(dx.astype(np.float32), y64 * (dy64 - (dy64 * y64).sum(1, keepdims=True)), rtol=5e-2, atol=2e-2)
