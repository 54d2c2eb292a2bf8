"""Triton tutorial 04 style: seeded dropout from tl.rand, checked bit for bit against Philox in NumPy."""

import numpy as np
from compat_harness import close
from compat_random import rand

import tiles
import tiles.language as tl


@tiles.jit
def _seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    x_keep = random > p
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


def seeded_dropout(x, p, seed):
    output = np.empty_like(x)
    n_elements = x.size
    grid = lambda meta: (tiles.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731
    _seeded_dropout[grid](x, output, n_elements, p, seed, BLOCK_SIZE=256)
    return output


def check(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    seed = 512
    keep = rand(seed, np.arange(1000, dtype=np.uint32)) > np.float32(0.3)
    expected = np.where(keep, x / np.float32(1 - 0.3), np.float32(0))
    close(seeded_dropout(x, 0.3, seed), expected, rtol=1e-6, atol=0)
    close(seeded_dropout(x, 0.3, seed), seeded_dropout(x, 0.3, seed), rtol=0, atol=0)
