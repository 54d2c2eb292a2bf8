"""FlagGems style cumsum over the middle dim of an (M, N, K) view, blocked over N with a carried
prefix; int32 input accumulates in int64 as torch does, chosen with a constexpr dtype check."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit(do_not_specialize=["N"])
def scan_part_sum_kernel(inp, out, M, N, K, BLOCK_SIZE: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    if tl.constexpr(inp.type.element_ty.is_int()):
        acc_dtype: tl.constexpr = tl.int64
    else:
        acc_dtype: tl.constexpr = tl.float32
    carry = tl.zeros([], dtype=acc_dtype)
    for start in range(0, N, BLOCK_SIZE):
        n = start + tl.arange(0, BLOCK_SIZE)
        offset = pid_m * N * K + n * K + pid_k
        mask = n < N
        x = tl.load(inp + offset, mask=mask, other=0).to(acc_dtype)
        result = tl.cumsum(x, axis=0) + carry
        carry += tl.sum(x, axis=0)
        tl.store(out + offset, result.to(out.dtype.element_ty), mask=mask)


def check(rng):
    M, N, K = 3, 77, 5
    xi = rng.integers(-2**30, 2**30, (M, N, K)).astype(np.int32)
    yi = np.empty((M, N, K), np.int64)
    scan_part_sum_kernel[(M, K)](xi, yi, M, N, K, BLOCK_SIZE=32)
    close(yi, np.cumsum(xi.astype(np.int64), 1))
