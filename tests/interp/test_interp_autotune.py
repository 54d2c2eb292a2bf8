"""@tiles.autotune on the interpreter: each configuration runs once while tuning."""

from __future__ import annotations

import numpy as np

import tiles
import tiles.language as tl

CALLS: dict[int, int] = {}


def _count(block: int):
    def hook(nargs):
        CALLS[block] = CALLS.get(block, 0) + 1
    return hook


@tiles.autotune(configs=[tiles.Config({"BLOCK": b}, pre_hook=_count(b)) for b in (16, 32, 64)],
                key=["n"])
@tiles.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


def test_each_config_runs_once_while_tuning():
    tiles.set_backend("interpreter")
    try:
        n = 1000
        x = np.random.default_rng(21).standard_normal(n).astype(np.float32)
        y = np.zeros_like(x)
        CALLS.clear()
        scale[lambda meta: (tiles.cdiv(n, meta["BLOCK"]),)](x, y, n)
        np.testing.assert_array_equal(y, x * 3)
        chosen = scale.best_config.kwargs["BLOCK"]
        for block in (16, 32, 64):  # the chosen one also ran the real launch
            assert CALLS[block] == 1 + (block == chosen), CALLS
    finally:
        tiles.set_backend(None)
