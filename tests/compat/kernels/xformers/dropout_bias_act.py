"""xformers style fused ``dropout(activation(x + bias))`` with per-row seeds read from a tensor:
``tl.rand(seed, offsets)`` takes a seed *loaded* in the kernel (int64 seeds, so the Philox key
uses both halves), the activation picked by a string ``tl.constexpr`` (exact GELU through
``tl.erf``, or squared ReLU), the kept values scaled by ``1 / (1 - p)``, and the backward pass
recomputing the same mask from the same seeds instead of storing it."""

import math

import numpy as np
from compat_harness import close
from compat_random import rand

import tiles
import tiles.language as tl


@tiles.jit
def _activation(x, ACT: tl.constexpr):
    if ACT == "gelu":
        return 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    else:
        r = tl.maximum(x, 0.0)
        return r * r


@tiles.jit
def _fwd(y_ptr, x_ptr, bias_ptr, seeds_ptr, n_cols, p, ACT: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    x += tl.load(bias_ptr + cols, mask=mask, other=0.0)
    x = _activation(x, ACT)
    seed = tl.load(seeds_ptr + row)
    keep = tl.rand(seed, cols) > p
    tl.store(y_ptr + row * n_cols + cols, tl.where(keep, x / (1 - p), 0.0), mask=mask)


@tiles.jit
def _bwd(dx_ptr, dy_ptr, seeds_ptr, n_cols, p, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    dy = tl.load(dy_ptr + row * n_cols + cols, mask=mask, other=0.0)
    keep = tl.rand(tl.load(seeds_ptr + row), cols) > p
    tl.store(dx_ptr + row * n_cols + cols, tl.where(keep, dy / (1 - p), 0.0), mask=mask)


def check(rng):
    rows, cols, p = 5, 300, 0.3
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    bias = rng.standard_normal(cols).astype(np.float32)
    seeds = rng.integers(1, 2**40, rows).astype(np.int64)
    keep = np.stack([rand(int(s), np.arange(cols, dtype=np.uint32)) > np.float32(p) for s in seeds])
    z = (x + bias).astype(np.float64)
    gelu = 0.5 * z * (1 + np.vectorize(math.erf)(z / np.sqrt(2)))
    for act, ref in (("gelu", gelu), ("relu2", np.maximum(z, 0) ** 2)):
        y = np.empty_like(x)
        _fwd[(rows, tiles.cdiv(cols, 128))](y, x, bias, seeds, cols, p, ACT=act, BLOCK=128)
        close(y, np.where(keep, ref / (1 - p), 0), rtol=1e-5, atol=1e-5)
    dy = rng.standard_normal((rows, cols)).astype(np.float32)
    dx = np.empty_like(dy)
    _bwd[(rows, tiles.cdiv(cols, 128))](dx, dy, seeds, cols, p, BLOCK=128)
    close(dx, np.where(keep, dy / np.float32(1 - p), 0), rtol=1e-6, atol=1e-6)
    assert 0.6 < keep.mean() < 0.8
