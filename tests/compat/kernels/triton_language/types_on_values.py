"""Types on values: ``ptr.type.is_ptr()``, ``ptr.dtype.element_ty``, ``x.dtype.is_floating()``,
``primitive_bitwidth``, ``tl.pointer_type``, ``x.type.scalar``, ``tl.assume``: a dtype-generic
absolute-max kernel whose accumulator follows its input's width."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def absmax_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(x_ptr.type.is_ptr())
    tl.assume(n > 0)
    elem = x_ptr.dtype.element_ty
    if elem.is_floating() and elem.primitive_bitwidth < 32:
        acc_ty: tl.constexpr = tl.float32
    else:
        acc_ty: tl.constexpr = elem
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=acc_ty)
    for start in range(0, n, BLOCK):
        x = tl.load(x_ptr + start + offs, mask=start + offs < n, other=0).to(acc_ty)
        tl.static_assert(x.type.scalar == acc_ty)
        acc = tl.maximum(acc, tl.abs(x))
    result = tl.max(acc, 0)
    out = out_ptr.to(tl.pointer_type(out_ptr.dtype.element_ty))
    tl.store(out, result.to(out_ptr.dtype.element_ty))


def check(rng):
    for dtype, out_dtype in ((np.float16, np.float32),):
        x = (rng.standard_normal(333) * 100).astype(dtype)
        out = np.zeros(1, out_dtype)
        absmax_kernel[(1,)](x, out, x.size, BLOCK=64)
        close(out[0], np.abs(x).max().astype(out_dtype), rtol=0, atol=0)
