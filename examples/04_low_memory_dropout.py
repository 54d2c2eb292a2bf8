"""Dropout whose mask is never stored: it is regenerated from (seed, element index) with tl.rand."""

from __future__ import annotations

import argparse

import numpy as np

import tiles
import tiles.language as tl
from tiles.backends.choice import add_backend_argument, chosen, describe


@tiles.jit
def seeded_dropout_kernel(x_ptr, out_ptr, n_elements, p, seed, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    in_bounds = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=in_bounds)
    keep = tl.rand(seed, offsets) > p
    tl.store(out_ptr + offsets, tl.where(keep, x / (1 - p), 0.0), mask=in_bounds)


def seeded_dropout(x: np.ndarray, p: float, seed: int, block: int = 1024,
                   backend: str | None = None) -> np.ndarray:
    out = np.empty_like(x)
    n = x.size
    seeded_dropout_kernel[(tiles.cdiv(n, block),)](x, out, n, p, seed, BLOCK=block, backend=backend)
    return out


def main(n: int = 10_007, p: float = 0.3, backend: str | None = None) -> None:
    rng = np.random.default_rng()
    x = (rng.random(n, dtype=np.float32) + 0.5).astype(np.float32)  # never zero: zeros mark drops
    seed = int(rng.integers(0, 2**31 - 1))
    first = seeded_dropout(x, p, seed, backend=backend)
    again = seeded_dropout(x, p, seed, backend=backend)
    other = seeded_dropout(x, p, seed + 1, backend=backend)
    np.testing.assert_array_equal(first, again)  # same seed, same mask
    kept = first != 0
    np.testing.assert_allclose(first[kept], x[kept] / np.float32(1 - p), rtol=1e-6)
    tolerance = 6 * (p * (1 - p) / n) ** 0.5
    if abs((1 - kept.mean()) - p) > tolerance:
        raise AssertionError(f"dropped fraction {1 - kept.mean():.3f} is far from p={p}")
    if np.array_equal(kept, other != 0):
        raise AssertionError("a different seed gave the same mask")
    print(f"dropout of {n} elements, p={p}: ok (dropped {1 - kept.mean():.3f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=10_007)
    parser.add_argument("--p", type=float, default=0.3)
    add_backend_argument(parser)
    args = parser.parse_args()
    main(args.n, args.p, backend=chosen(args.backend))
    print(describe(args.backend))
