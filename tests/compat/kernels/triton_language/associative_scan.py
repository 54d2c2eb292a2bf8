"""A first-order linear recurrence h[t] = a[t] * h[t-1] + b[t] by ``tl.associative_scan`` over a
tuple with a user combine function (the Mamba/FLA form), a reversed scan, and ``tl.cumprod``."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def first_order_op(l_a, l_b, r_a, r_b):
    return r_a * l_a, r_a * l_b + r_b


@tiles.jit
def linear_recurrence_kernel(a_ptr, b_ptr, h_ptr, rev_ptr, prod_ptr, T, BLOCK_T: tl.constexpr):
    row = tl.program_id(0)
    t = tl.arange(0, BLOCK_T)
    mask = t < T
    a = tl.load(a_ptr + row * T + t, mask=mask, other=1.0)
    b = tl.load(b_ptr + row * T + t, mask=mask, other=0.0)
    _, h = tl.associative_scan((a, b), axis=0, combine_fn=first_order_op)
    tl.store(h_ptr + row * T + t, h, mask=mask)
    rev = tl.associative_scan(b, 0, combine_fn=_add, reverse=True)
    tl.store(rev_ptr + row * T + t, rev, mask=mask)
    tl.store(prod_ptr + row * T + t, tl.cumprod(a, 0), mask=mask)


@tiles.jit
def _add(x, y):
    return x + y


def check(rng):
    rows, T = 3, 50
    a = rng.uniform(0.5, 1.0, (rows, T)).astype(np.float32)
    b = rng.standard_normal((rows, T)).astype(np.float32)
    h = np.empty_like(a)
    rev = np.empty_like(a)
    prod = np.empty_like(a)
    linear_recurrence_kernel[(rows,)](a, b, h, rev, prod, T, BLOCK_T=64)
    ref = np.zeros((rows, T))
    state = np.zeros(rows)
    for t in range(T):
        state = a[:, t] * state + b[:, t]
        ref[:, t] = state
    close(h, ref, rtol=1e-4, atol=1e-5)
    close(rev, np.flip(np.cumsum(np.flip(b.astype(np.float64), 1), 1), 1), rtol=1e-5, atol=1e-5)
    close(prod, np.cumprod(a.astype(np.float64), 1), rtol=1e-5, atol=1e-7)
