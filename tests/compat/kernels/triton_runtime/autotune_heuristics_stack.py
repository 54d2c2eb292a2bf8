"""``@autotune`` over ``@heuristics`` over ``@jit``: the heuristic reads the tuned block size
(EVEN_N skips masks), ``tiles.next_power_of_2`` in a heuristic, a key on a dtype-carrying argument."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.autotune(configs=[tiles.Config({"BLOCK_N": 32}), tiles.Config({"BLOCK_N": 64})], key=["n_cols"])
@tiles.heuristics({
    "EVEN_N": lambda args: args["n_cols"] % args["BLOCK_N"] == 0,
    "ROWS_P2": lambda args: tiles.next_power_of_2(args["n_rows"]),
})
@tiles.jit
def col_mean_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr,
                    ROWS_P2: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, ROWS_P2)
    ptrs = x_ptr + rows[:, None] * n_cols + cols[None, :]
    if EVEN_N:
        x = tl.load(ptrs, mask=rows[:, None] < n_rows, other=0.0)
    else:
        x = tl.load(ptrs, mask=(rows[:, None] < n_rows) & (cols[None, :] < n_cols), other=0.0)
    mean = tl.sum(x, 0) / n_rows
    if EVEN_N:
        tl.store(out_ptr + cols, mean)
    else:
        tl.store(out_ptr + cols, mean, mask=cols < n_cols)


def check(rng):
    for n_rows, n_cols in ((7, 96),):
        x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
        out = np.empty(n_cols, np.float32)
        grid = lambda meta, n_cols=n_cols: (tiles.cdiv(n_cols, meta["BLOCK_N"]),)  # noqa: E731
        col_mean_kernel[grid](x, out, n_rows, n_cols)
        close(out, x.mean(0), rtol=1e-5, atol=1e-6)
