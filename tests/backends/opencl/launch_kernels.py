"""Kernels for the launch-safety tests: strided views, concurrent launches, a long-running kernel."""

import tiles
import tiles.language as tl


@tiles.jit(do_not_specialize=["M", "N", "sxm", "sxn", "sym", "syn"])  # one compile for every view
def affine2d_kernel(x_ptr, y_ptr, M, N, sxm, sxn, sym, syn, BM: tl.constexpr, BN: tl.constexpr):
    """y = 2 * x + y over an M x N view; strides in elements, as the caller's views have them."""
    rm = tl.arange(0, BM)[:, None]
    rn = tl.arange(0, BN)[None, :]
    mask = (rm < M) & (rn < N)
    x = tl.load(x_ptr + rm * sxm + rn * sxn, mask=mask)
    y = tl.load(y_ptr + rm * sym + rn * syn, mask=mask)
    tl.store(y_ptr + rm * sym + rn * syn, 2 * x + y, mask=mask)


@tiles.jit(do_not_specialize=["n", "s_x", "s_even", "s_odd"])
def split_kernel(x_ptr, even_ptr, odd_ptr, n, s_x, s_even, s_odd, BLOCK: tl.constexpr):
    """even[i] = x[i] + 1; odd[i] = x[i] - 1 (even and odd may interleave in one array)."""
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * s_x, mask=mask)
    tl.store(even_ptr + offs * s_even, x + 1, mask=mask)
    tl.store(odd_ptr + offs * s_odd, x - 1, mask=mask)


@tiles.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@tiles.jit
def spin_kernel(out_ptr, n, BLOCK: tl.constexpr):
    """Runs for about ``n`` dependent multiply-adds per lane: a kernel whose length we choose."""
    acc = tl.arange(0, BLOCK).to(tl.float32)
    for _ in range(n):
        acc = acc * 0.999 + 1.0
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@tiles.jit
def first_program_flag(out_ptr):
    if (tl.program_id(0) == 0) & (tl.program_id(1) == 0):
        tl.store(out_ptr, 1)


@tiles.jit
def fill_first(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs.to(tl.float32) + 0.5, mask=offs < n)
