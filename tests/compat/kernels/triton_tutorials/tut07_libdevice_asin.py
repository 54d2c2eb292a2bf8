"""Triton tutorial 07 style: a libdevice function through ``tl.extra.libdevice``, NaN outside [-1, 1]."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
from tiles.language.extra import libdevice


@tiles.jit
def asin_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    x = libdevice.asin(x)
    tl.store(y_ptr + offsets, x, mask=mask)


def check(rng):
    x = rng.uniform(-1.2, 1.2, 517).astype(np.float32)
    x[:5] = [1.0, -1.0, -0.0, np.nan, 2.0]
    y = np.empty_like(x)
    asin_kernel[(tiles.cdiv(x.size, 128),)](x, y, x.size, BLOCK_SIZE=128)
    with np.errstate(invalid="ignore"):
        close(y, np.arcsin(x), rtol=2e-6, atol=1e-7)
