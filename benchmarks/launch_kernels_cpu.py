"""The two kernels of ``cuda_launch_path_stub.py``, in a module of their own for ``launch_instructions.py``."""

import tiles
import tiles.language as tl


@tiles.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@tiles.jit
def eight_args(x, w, out, stride, n, eps, BLOCK: tl.constexpr, RELU: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + tl.program_id(0) * stride + offs, mask=mask) * tl.load(w + offs, mask=mask) + eps
    if RELU:
        v = tl.maximum(v, 0.0)
    tl.store(out + tl.program_id(0) * stride + offs, v, mask=mask)
