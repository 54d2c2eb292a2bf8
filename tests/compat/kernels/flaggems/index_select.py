"""FlagGems style index_select along dim 0: a 2-D block of (selected rows, columns), int64 indices."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.heuristics({"BLOCK_M": lambda args: 4, "BLOCK_N": lambda args: min(64, tiles.next_power_of_2(args["N"]))})
@tiles.jit
def index_select_kernel(inp, out, M, N, index, index_len, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_x = tl.program_id(axis=0)
    pid_y = tl.program_id(axis=1)
    rows_offsets = pid_x * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    rows_mask = rows_offsets < index_len
    cols_offsets = pid_y * BLOCK_N + tl.arange(0, BLOCK_N)
    cols_mask = cols_offsets < N
    block_mask = rows_mask & cols_mask
    indices = tl.load(index + rows_offsets, mask=rows_mask, other=0)
    inp_off = indices * N + cols_offsets[None, :]
    out_off = rows_offsets * N + cols_offsets[None, :]
    selected = tl.load(inp + inp_off, mask=block_mask, other=0.0)
    tl.store(out + out_off, selected, mask=block_mask)


def check(rng):
    M, N, L = 23, 90, 13
    x = rng.standard_normal((M, N)).astype(np.float32)
    index = rng.integers(0, M, L).astype(np.int64)
    index[:2] = [0, M - 1]
    out = np.empty((L, N), np.float32)
    grid = lambda meta: (tiles.cdiv(L, meta["BLOCK_M"]), tiles.cdiv(N, meta["BLOCK_N"]))  # noqa: E731
    index_select_kernel[grid](x, out, M, N, index, L)
    close(out, x[index], rtol=0, atol=0)
