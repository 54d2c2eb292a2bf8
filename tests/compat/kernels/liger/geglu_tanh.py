"""Liger-Kernel style GEGLU with the tanh approximation, ``tanh`` imported the way Liger does it
(libdevice first, the CUDA-specific module as a fallback)."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl

try:
    from tiles.language.extra.libdevice import tanh
except ModuleNotFoundError:
    from tiles.language.extra.cuda.libdevice import tanh


@tiles.jit
def _geglu_tanh_forward_kernel(a, b, c, stride, n_cols: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    program_id = tl.program_id(0).to(tl.int64)
    a += program_id * stride
    b += program_id * stride
    c += program_id * stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    a_row = tl.load(a + col_offsets, mask=mask, other=0).to(tl.float32)
    b_row = tl.load(b + col_offsets, mask=mask, other=0)
    sqrt_2_over_pi = 0.7978845608028654
    a_cubed = a_row * a_row * a_row
    tanh_arg = sqrt_2_over_pi * (a_row + 0.044715 * a_cubed)
    tanh_result = tanh(tanh_arg)
    geglu_a = 0.5 * a_row * (1 + tanh_result)
    c_row = geglu_a.cast(b_row.dtype) * b_row
    tl.store(c + col_offsets, c_row, mask=mask)


def check(rng):
    rows, n_cols = 5, 99
    a = (rng.standard_normal((rows, n_cols)) * 3).astype(np.float16)
    b = rng.standard_normal((rows, n_cols)).astype(np.float16)
    a[0, :3] = [0.0, -20.0, 20.0]
    c = np.empty_like(a)
    _geglu_tanh_forward_kernel[(rows,)](a, b, c, n_cols, n_cols=n_cols, BLOCK_SIZE=128)
    af = a.astype(np.float64)
    gelu = 0.5 * af * (1 + np.tanh(0.7978845608028654 * (af + 0.044715 * af ** 3)))
    close(c, gelu.astype(np.float16) * b, rtol=2e-3, atol=2e-3)
