"""Result types of Triton's scans on narrow inputs, as Triton 3.9 compiles them (checked with
``tl.static_print`` through ``triton.compile``): ``tl.cumsum`` and ``tl.cumprod`` widen integers
narrower than 32 bits to 32 bits of the same signedness (int8 -> int32, so an int8 running product
does not wrap at 8 bits; a bool mask counts as unsigned -> uint32) and keep floating types
(bf16 stays bf16).  Values: exact for the integer scans, and for a bf16 row whose running sums
are all representable in bf16."""

import numpy as np
from compat_harness import BF16, close

import tiles
import tiles.language as tl


@tiles.jit
def scan_promotion_kernel(x_ptr, i8_ptr, csum_ptr, isum_ptr, iprod_ptr, count_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    i8 = tl.load(i8_ptr + offs)
    tl.static_assert(tl.cumsum(x, 0).dtype == tl.bfloat16)
    tl.static_assert(tl.cumprod(x, 0).dtype == tl.bfloat16)
    tl.static_assert(tl.cumsum(i8, 0).dtype == tl.int32)
    tl.static_assert(tl.cumprod(i8, 0).dtype == tl.int32)
    tl.static_assert(tl.cumsum(i8 > 0, 0).dtype == tl.uint32)
    tl.store(csum_ptr + offs, tl.cumsum(x, 0))
    tl.store(isum_ptr + offs, tl.cumsum(i8, 0))
    tl.store(iprod_ptr + offs, tl.cumprod(i8, 0))
    tl.store(count_ptr + offs, tl.cumsum(i8 > 0, 0))


def check(rng):
    N = 32
    x = (rng.integers(1, 5, N) * 0.5).astype(BF16)  # running sums <= 64 in steps of 0.5: exact in bf16
    i8 = rng.choice(np.array([-3, -2, -1, 1, 2, 3, 127, -128], np.int8), N)
    csum = np.zeros(N, BF16)
    isum = np.zeros(N, np.int32)
    iprod = np.zeros(N, np.int32)
    count = np.zeros(N, np.uint32)
    scan_promotion_kernel[(1,)](x, i8, csum, isum, iprod, count, N=N)
    close(csum, np.cumsum(x.astype(np.float64)).astype(BF16), rtol=0, atol=0)
    close(isum, np.cumsum(i8.astype(np.int32)).astype(np.int32))
    with np.errstate(over="ignore"):
        close(iprod, np.cumprod(i8.astype(np.int32), dtype=np.int32))  # wraps at 32 bits, not 8
    close(count, np.cumsum(i8 > 0).astype(np.uint32))
