"""Last-axis scans through warp shuffles (``lowering/warp_scan.py``), run on the numpy SIMT simulator
(lanes shuffle as PTX's ``shfl.sync.bfly``): rows on a lane group, rows of whole rounds cut into warp
segments, and the local-memory rounds where neither fits; forward and reversed, a sum in int32 (exact,
wrapping) and a non-commutative recurrence (operand order)."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.cuda.simulator.simt import run


@tiles.jit
def cumsum_rows(x_ptr, out_ptr, R: tl.constexpr, C: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    tl.store(out_ptr + offs, tl.cumsum(tl.load(x_ptr + offs), axis=1, reverse=REVERSE))


@tiles.jit
def compose(a1, b1, a2, b2):
    return a1 * a2, b1 * a2 + b2


@tiles.jit
def recurrence_rows(a_ptr, b_ptr, h_ptr, R: tl.constexpr, C: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]
    _, h = tl.associative_scan((tl.load(a_ptr + offs), tl.load(b_ptr + offs)), 1, compose, reverse=REVERSE)
    tl.store(h_ptr + offs, h)


SHAPES = [  # (R, C, warps): C / 4 chunks a row
    (8, 16, 1), (4, 128, 4), (2, 64, 2),      # a row on a group of lanes (4, 32, 16 lanes)
    (2, 2048, 4), (1, 4096, 4), (2, 1024, 8), (16, 512, 4),  # rows of whole rounds: warp segments
    (1, 256, 4), (4, 256, 8),                 # neither: the local-memory rounds
]


def _flip(a, reverse):
    return a[:, ::-1] if reverse else a


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("R, C, warps", SHAPES)
def test_int_cumsum_on_the_simulator(rng, R, C, warps, reverse):
    x = rng.integers(-2**31, 2**31 - 1, (R, C), dtype=np.int32)
    x[0, :2] = [np.iinfo(np.int32).max, np.iinfo(np.int32).min]
    out = np.zeros_like(x)
    ir = cumsum_rows.warmup(x, out, R=R, C=C, REVERSE=reverse, num_warps=warps, backend="cuda").ir
    run(ir, [x, out], (1,), warps * 32)
    with np.errstate(over="ignore"):
        want = _flip(np.cumsum(_flip(x, reverse), axis=1, dtype=np.int32), reverse)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("R, C, warps", [(8, 16, 1), (2, 2048, 4), (2, 1024, 8)])
def test_recurrence_keeps_operand_order_on_the_simulator(rng, R, C, warps, reverse):
    a = rng.uniform(0.5, 1.0, (R, C)).astype(np.float64)
    b = rng.standard_normal((R, C))
    h = np.zeros_like(b)
    ir = recurrence_rows.warmup(a, b, h, R=R, C=C, REVERSE=reverse, num_warps=warps, backend="cuda").ir
    run(ir, [a, b, h], (1,), warps * 32)
    want = np.empty_like(b)
    state = np.zeros(R)
    for j in (range(C - 1, -1, -1) if reverse else range(C)):
        state = state * a[:, j] + b[:, j] if j != (C - 1 if reverse else 0) else b[:, j]
        want[:, j] = state
    np.testing.assert_allclose(h, want, rtol=1e-9, atol=1e-9)
