"""Idioms of generic kernels (FlagGems' pointwise templates, Liger's activations): a ``@jit``
function passed as a ``tl.constexpr`` argument and called in the kernel, a ``noinline`` helper,
helpers with default and keyword arguments returning tuples, a tuple of pointers as one kernel
argument, ``.T``, ``tl.reduce(..., keep_dims=True)``, ``tl.sum`` over every axis (``axis=None``),
``tl.xor_sum`` and ``.to(tl.float16, fp_downcast_rounding="rtz")``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _silu(x):
    return x * tl.sigmoid(x)


@tiles.jit
def _leaky(x):
    return tl.where(x >= 0, x, 0.01 * x)


@tiles.jit(noinline=True)
def _scaled_pair(x, scale=2.0, shift=0.0):
    return x * scale + shift, x - shift


@tiles.jit
def _add_combine(a, b):
    return a + b


@tiles.jit
def _generic(ptrs, out_ptr, rowsum_ptr, stats_ptr, half_ptr, M: tl.constexpr, N: tl.constexpr,
             ACT: tl.constexpr):
    x_ptr, y_ptr = ptrs
    offs = tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    a, b = _scaled_pair(x, shift=1.0)
    z = ACT(a) + b * y
    tl.store(out_ptr + tl.arange(0, N)[:, None] * M + tl.arange(0, M)[None, :], z.T)
    rows = tl.reduce(z, 1, _add_combine, keep_dims=True)
    tl.static_assert(rows.shape == (M, 1))
    tl.store(rowsum_ptr + tl.arange(0, M)[:, None], rows)
    tl.store(stats_ptr, tl.sum(z))
    bits = tl.xor_sum(x.to(tl.int32, bitcast=True), axis=None)
    tl.store(stats_ptr + 1, bits.to(tl.float32, bitcast=True))
    tl.store(half_ptr + offs, z.to(tl.float16, fp_downcast_rounding="rtz"))


def check(rng):
    M, N = 8, 16
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = rng.standard_normal((M, N)).astype(np.float32)
    x[0, :2] = [70000.0, -70000.0]
    a, b = x * 2 + 1, x - 1
    for act, ref in ((_silu, lambda v: v * 0.5 * (1 + np.tanh(v.astype(np.float64) / 2))),
                     (_leaky, lambda v: np.where(v >= 0, v, 0.01 * v))):
        out = np.empty((N, M), np.float32)
        rowsum = np.empty((M, 1), np.float32)
        stats = np.empty(2, np.float32)
        half = np.empty((M, N), np.float16)
        _generic[(1,)]((x, y), out, rowsum, stats, half, M=M, N=N, ACT=act)
        z = (ref(a) + b * y).astype(np.float32)
        close(out, z.T, rtol=1e-5, atol=1e-5)
        close(rowsum, z.sum(1, keepdims=True), rtol=1e-5, atol=1e-3)
        close(stats[0], z.sum(), rtol=1e-5, atol=1e-2)
        close(stats[1:].view(np.int32), np.bitwise_xor.reduce(x.view(np.int32).ravel(), keepdims=True))
        rtz = np.where(np.abs(z) > 65504, np.sign(z) * np.float32(65504), z).astype(np.float16)
        nearer_zero = np.abs(rtz.astype(np.float32)) > np.abs(z)
        rtz[nearer_zero] = np.nextafter(rtz[nearer_zero], np.float16(0))
        close(half.view(np.uint16), rtz.view(np.uint16))
