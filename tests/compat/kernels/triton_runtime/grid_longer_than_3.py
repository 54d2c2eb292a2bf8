"""Grids with more than three entries, as Triton's launcher takes them (it reads the first three):
a tuple of four and a grid function returning five."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def fill_ids_kernel(out_ptr, NX: tl.constexpr, NY: tl.constexpr):
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    tl.store(out_ptr + (z * NY + y) * NX + x, x * 100 + y * 10 + z + 1)


def check(rng):
    out = np.zeros(2 * 5, np.int32)
    fill_ids_kernel[(2, 5, 1, 1)](out, NX=2, NY=5)
    x, y = np.meshgrid(np.arange(2), np.arange(5))
    close(out, (x * 100 + y * 10 + 1).reshape(-1))
    out3 = np.zeros(3 * 2 * 2, np.int32)
    grid = lambda meta: (meta["NX"], meta["NY"], 2, 1, 1)  # noqa: E731
    fill_ids_kernel[grid](out3, NX=3, NY=2)
    z, y, x = np.meshgrid(np.arange(2), np.arange(2), np.arange(3), indexing="ij")
    close(out3, (x * 100 + y * 10 + z + 1).reshape(-1))
    assert rng is not None
