"""Row-wise softmax in one pass over memory: each row is loaded once, reduced twice in registers."""

from __future__ import annotations

import argparse

import numpy as np

import tiles
import tiles.language as tl
from tiles.backends.choice import add_backend_argument, chosen, describe


@tiles.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                   BLOCK: tl.constexpr):
    # A fixed number of programs stride over the rows, as a persistent kernel would.
    first_row = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row in tl.range(first_row, n_rows, row_step):
        cols = tl.arange(0, BLOCK)
        in_row = tl.load(in_ptr + row * in_row_stride + cols, mask=cols < n_cols, other=-float("inf"))
        shifted = in_row - tl.max(in_row, axis=0)
        numerator = tl.exp(shifted)
        denominator = tl.sum(numerator, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, numerator / denominator, mask=cols < n_cols)


def softmax(x: np.ndarray, num_programs: int = 8, backend: str | None = None) -> np.ndarray:
    n_rows, n_cols = x.shape
    out = np.empty_like(x)
    block = tiles.next_power_of_2(n_cols)
    grid = (min(num_programs, n_rows),)
    softmax_kernel[grid](out, x, x.strides[0] // x.itemsize, out.strides[0] // out.itemsize,
                         n_rows, n_cols, BLOCK=block, backend=backend)
    return out


def reference(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64) - x.max(axis=1, keepdims=True)
    e = np.exp(z)
    return (e / e.sum(axis=1, keepdims=True)).astype(x.dtype)


def main(n_rows: int = 123, n_cols: int = 781, backend: str | None = None) -> None:
    rng = np.random.default_rng()
    x = (rng.standard_normal((n_rows, n_cols)) * 4).astype(np.float32)
    got = softmax(x, backend=backend)
    np.testing.assert_allclose(got, reference(x), rtol=1e-5, atol=1e-7)
    print(f"softmax of {n_rows}x{n_cols}: ok")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=123)
    parser.add_argument("--cols", type=int, default=781)
    add_backend_argument(parser)
    args = parser.parse_args()
    main(args.rows, args.cols, backend=chosen(args.backend))
    print(describe(args.backend))
