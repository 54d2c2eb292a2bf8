"""Constexpr objects as Triton has them: ``BLOCK.value``, constexpr arithmetic into annotated
locals, ``isinstance(..., tl.constexpr)``, ``tl.static_assert`` with a message, constexpr values
handed to helpers, shapes read back from tiles."""

import numpy as np
from compat_harness import close

import tiles
import tiles.language as tl


@tiles.jit
def _halves(x, HALF: tl.constexpr):
    lo = tl.arange(0, HALF)
    return lo, lo + HALF


@tiles.jit
def fold_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, SCALE: tl.constexpr):
    tl.static_assert(BLOCK.value % 16 == 0, "BLOCK must be a multiple of 16")
    tl.static_assert(isinstance(BLOCK, tl.constexpr))
    HALF: tl.constexpr = BLOCK // 2
    lo, hi = _halves(0, HALF)
    tl.static_assert(lo.shape[0] == HALF)
    base = tl.program_id(0) * BLOCK
    a = tl.load(x_ptr + base + lo, mask=base + lo < n, other=0.0)
    b = tl.load(x_ptr + base + hi, mask=base + hi < n, other=0.0)
    factor: tl.constexpr = SCALE.value * 2
    tl.store(out_ptr + tl.program_id(0) * HALF + lo, (a + b) * factor, mask=base + lo < n)


def check(rng):
    n, BLOCK = 300, 32
    x = rng.standard_normal(n).astype(np.float32)
    programs = tiles.cdiv(n, BLOCK)
    out = np.zeros(programs * (BLOCK // 2), np.float32)
    fold_kernel[(programs,)](x, out, n, BLOCK=BLOCK, SCALE=1.5)
    padded = np.zeros(programs * BLOCK, np.float32)
    padded[:n] = x
    p = padded.reshape(programs, 2, BLOCK // 2)
    ref = ((p[:, 0] + p[:, 1]) * 3.0).reshape(-1)
    valid = (np.arange(programs)[:, None] * BLOCK + np.arange(BLOCK // 2)[None, :]).reshape(-1) < n
    close(out, np.where(valid, ref, 0), rtol=1e-6, atol=1e-6)
