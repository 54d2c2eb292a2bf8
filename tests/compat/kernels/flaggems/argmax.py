"""FlagGems style argmax along the last dim: the minimum value picked from ``inp.type.element_ty``,
``tl.max(..., return_indices=True)`` per block, a running best across blocks, int64 indices."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def get_dtype_min(dtype):
    if dtype.is_floating():
        return -float("inf")
    return -2147483648


@tiles.jit
def argmax_kernel(inp, out_index, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    m_offset = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    dtype = inp.type.element_ty
    acc_type = tl.float32 if dtype is tl.bfloat16 else dtype
    min_value = get_dtype_min(dtype)
    max_values = tl.full([BLOCK_M], dtype=acc_type, value=min_value)
    argmax_values = tl.full([BLOCK_M], dtype=tl.int64, value=0)
    for start_n in range(0, N, BLOCK_N):
        n_offset = start_n + tl.arange(0, BLOCK_N)
        offset = m_offset[:, None] * N + n_offset[None, :]
        mask = (m_offset[:, None] < M) & (n_offset[None, :] < N)
        inp_vals = tl.load(inp + offset, mask=mask, other=min_value)
        local_max, local_argmax = tl.max(inp_vals, 1, return_indices=True, return_indices_tie_break_left=True)
        update = local_max > max_values
        max_values = tl.where(update, local_max, max_values)
        argmax_values = tl.where(update, start_n + local_argmax, argmax_values)
    tl.store(out_index + m_offset, argmax_values, mask=m_offset < M)


def check(rng):
    M, N = 21, 333
    x = rng.standard_normal((M, N)).astype(np.float32)
    x[3, 100] = np.inf
    x[4, [7, 200]] = 50.0
    out = np.empty(M, np.int64)
    argmax_kernel[(tiles.cdiv(M, 8),)](x, out, M, N, BLOCK_M=8, BLOCK_N=64)
    close(out, np.argmax(x, 1))
