"""Kernels that import Triton's submodules directly (as FlagGems' sort/top-k do): ``core.constexpr``
annotations, ``core.static_range``, ``_log2`` from ``language.standard``, a pairwise tree sum by
repeated reshapes."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl
import tiles.language.core as core
from tiles.language.standard import _log2


@tiles.jit
def _tree_sum(x, N: core.constexpr):
    n_dims: core.constexpr = _log2(N)
    for i in core.static_range(n_dims):
        x = tl.reshape(x, [2 ** (n_dims - i - 1), 2])
        x = tl.sum(x, 1)
    return tl.reshape(x, [])


@tiles.jit
def tree_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * n + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + tl.program_id(0), _tree_sum(x, BLOCK))


def check(rng):
    rows, n = 3, 200
    x = rng.standard_normal((rows, n)).astype(np.float32)
    out = np.empty(rows, np.float32)
    tree_sum_kernel[(rows,)](x, out, n, BLOCK=256)
    close(out, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
