"""Kernels for the CUDA thread/stream/device tests (run on a GPU, or over the fake libcuda)."""

import tiles
import tiles.language as tl


@tiles.jit(do_not_specialize=["n"])
def scale_add_kernel(x, y, out, n, alpha, BLOCK: tl.constexpr):
    """out = alpha * x + y."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x_ = tl.load(x + offs, mask=mask)
    tl.store(out + offs, alpha * x_ + tl.load(y + offs, mask=mask), mask=mask)


@tiles.jit(do_not_specialize=["M", "N", "sxm", "sxn", "sym", "syn"])
def affine2d_kernel(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    """y = 2 * x + y over an M x N view; strides in elements."""
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    mask = (rm < M) & (rn < N)
    x = tl.load(x_ptr + rm * sxm + rn * sxn, mask=mask)
    y = tl.load(y_ptr + rm * sym + rn * syn, mask=mask)
    tl.store(y_ptr + rm * sym + rn * syn, 2 * x + y, mask=mask)


@tiles.jit(do_not_specialize=["n", "rounds"])
def slow_copy_kernel(x, out, n, rounds, BLOCK: tl.constexpr):
    """out = x after ``rounds`` dependent no-op passes: a kernel that is slow on purpose, so a
    stream-ordering bug (reading before an earlier write finished) would show."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask)
    acc = v * 0.0
    for _ in range(rounds):
        acc = acc * 0.5
    tl.store(out + offs, v + acc, mask=mask)
