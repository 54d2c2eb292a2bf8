"""Vector addition: each program adds one BLOCK-sized slice, masking the ragged tail."""

from __future__ import annotations

import argparse

import numpy as np

import tiles
import tiles.language as tl
from tiles.backends.choice import add_backend_argument, chosen, describe


@tiles.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    in_bounds = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=in_bounds)
    y = tl.load(y_ptr + offsets, mask=in_bounds)
    tl.store(out_ptr + offsets, x + y, mask=in_bounds)


def vector_add(x: np.ndarray, y: np.ndarray, block: int = 1024, backend: str | None = None) -> np.ndarray:
    out = np.empty_like(x)
    n = x.size
    add_kernel[(tiles.cdiv(n, block),)](x, y, out, n, BLOCK=block, backend=backend)
    return out


def main(n: int = 98_432, block: int = 1024, backend: str | None = None) -> None:
    rng = np.random.default_rng()
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    got = vector_add(x, y, block, backend)
    np.testing.assert_array_equal(got, x + y)
    print(f"vector add of {n} elements: ok (equal to NumPy's x + y)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=98_432)
    parser.add_argument("--block", type=int, default=1024)
    add_backend_argument(parser)
    args = parser.parse_args()
    main(args.n, args.block, backend=chosen(args.backend))
    print(describe(args.backend))
