"""Exchanges through local memory with deferred trailing barriers (lowering/exchanges.py, on
OpenCL CPU devices): chains of reductions and broadcasts of different sizes, inside a loop and
under a run-time ``if``, give NumPy's results with random inputs at odd sizes, and take fewer
barriers than with a trailing barrier after each exchange."""

from __future__ import annotations

import numpy as np
import pytest
from test_opencl_barriers import barriers

import tiles
import tiles.language as tl
from tiles.backends import registry

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")


@tiles.jit
def chained_exchanges(x_ptr, y_ptr, idx_ptr, M, N, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    row_sum = tl.sum(x, 1)                       # a reduction, then its broadcast: two exchanges
    col_max = tl.max(tl.where(mask, x, -1e30), 0)  # another size
    y = x - row_sum[:, None] * 0.25 + col_max[None, :]
    pairs = tl.reshape(y, [ROWS, COLS // 2, 2])    # left/right halves picked by sums over an axis of 2
    right = tl.arange(0, 2)[None, None, :]
    left_v = tl.sum(pairs * (1 - right), 2)
    right_v = tl.sum(pairs * right, 2)
    swapped = tl.reshape(tl.join(right_v, left_v), [ROWS, COLS])
    idx = tl.argmax(swapped, 1)
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], swapped, mask=mask)
    tl.store(idx_ptr + rows, idx, mask=rows < M)


@tiles.jit
def exchanges_in_control_flow(x_ptr, y_ptr, M, N, steps, flag, ROWS: tl.constexpr, COLS: tl.constexpr):
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, COLS)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
    for _ in range(steps):
        x = x * 0.5 + tl.sum(x, 1)[:, None] * 0.125
        x = x - tl.sum(x, 0)[None, :] * 0.0625
    if flag > 0:
        x = x + tl.max(x, 1)[:, None]
    else:
        x = x - tl.min(x, 0)[None, :]
    x = x + tl.sum(x, 1)[:, None]
    tl.store(y_ptr + rows[:, None] * N + cols[None, :], x, mask=mask)


def _chained_reference(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = x - x.sum(1, keepdims=True) * 0.25 + x.max(0, keepdims=True)
    swapped = y.reshape(y.shape[0], -1, 2)[:, :, ::-1].reshape(y.shape)
    return swapped, swapped.argmax(1)


def _control_reference(x: np.ndarray, steps: int, flag: int) -> np.ndarray:
    for _ in range(steps):
        x = x * 0.5 + x.sum(1, keepdims=True) * 0.125
        x = x - x.sum(0, keepdims=True) * 0.0625
    x = x + x.max(1, keepdims=True) if flag > 0 else x - x.min(0, keepdims=True)
    return x + x.sum(1, keepdims=True)


@pytest.fixture(params=[True, False], ids=["deferred", "trailing"])
def deferral(request, monkeypatch):
    from tiles.backends.opencl import OpenCLBackend
    monkeypatch.setattr(OpenCLBackend, "cpu_defer_exchange_barriers", request.param)
    monkeypatch.setenv("TILES_ALWAYS_COMPILE", "1")  # the caches do not key on the setting
    for kernel in (chained_exchanges, exchanges_in_control_flow):
        kernel.cache.clear()
        kernel._launches.clear()
    return request.param


@pytest.mark.parametrize("rows, cols, warps", [(16, 32, 4), (8, 8, 1), (32, 64, 2)])
def test_chained_exchanges(rng, deferral, rows, cols, warps):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    y = np.full_like(x, 7.0)
    idx = np.full(rows, -1, np.int32)
    chained_exchanges[(1,)](x, y, idx, rows, cols, ROWS=rows, COLS=cols, num_warps=warps, backend="opencl")
    want, want_idx = _chained_reference(x)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(idx, want_idx)


@pytest.mark.parametrize("m, n, steps, flag", [(13, 29, 3, 1), (16, 32, 0, -1), (5, 7, 2, -1)])
def test_exchanges_in_loops_and_branches(rng, deferral, m, n, steps, flag):
    x = rng.standard_normal((m, n)).astype(np.float32)
    y = np.full_like(x, 7.0)
    exchanges_in_control_flow[(1,)](x, y, m, n, steps, flag, ROWS=16, COLS=32, backend="opencl")
    padded = np.zeros((16, 32))  # the tile: masked-off elements load as 0 and take part after
    padded[:m, :n] = x
    want = _control_reference(padded, steps, flag)[:m, :n]
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-3)


def test_fewer_barriers_when_deferred(monkeypatch):
    from tiles.backends.opencl import OpenCLBackend, runtime
    if not runtime.is_cpu():
        pytest.skip("deferred only on CPU devices")
    x = np.zeros((16, 32), np.float32)
    compiled = chained_exchanges.warmup(x, x, np.zeros(16, np.int32), 16, 32, ROWS=16, COLS=32,
                                        grid=(1,), backend="opencl")
    counts = {}
    for defer in (False, True):
        monkeypatch.setattr(OpenCLBackend, "cpu_defer_exchange_barriers", defer)
        counts[defer] = barriers(OpenCLBackend()._generate(compiled, compiled.options).asm)[0]
    assert counts[True] < counts[False] * 0.75, counts
