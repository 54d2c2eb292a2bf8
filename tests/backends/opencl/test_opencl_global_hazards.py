"""A program's global loads and stores of one buffer by different threads keep tile order on OpenCL
(lowering/hazards.py): pocl runs a work-group's items one after another between barriers, so
without a program barrier one item's store overwrote what a later item still had to read (Triton's
test_dot ``add-rows``/``add-cols`` epilogues: 3840 of 4096 elements wrong).  Random inputs, odd
sizes, NumPy references; an in-place elementwise update takes no barrier.  In a loop, what one
iteration stores and the next loads (by other threads) is ordered by a barrier at the end of the
body; a loop that reads one buffer and writes another, or updates the same elements in place,
takes none."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_opencl_barriers import barriers

import tiles
import tiles.language as tl
from tiles.backends import registry

ok, why = registry.status("opencl")
pytestmark = pytest.mark.skipif(not ok, reason=f"OpenCL backend unavailable: {why}")


@tiles.jit
def dot_add_edge(X, Y, Z, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ROWS: tl.constexpr):
    """Triton's test_dot epilogue: z = x @ y + column 0 (ROWS) or row 0 of Z, stored over Z."""
    m = tl.arange(0, BM)
    n = tl.arange(0, BN)
    k = tl.arange(0, BK)
    x = tl.load(X + m[:, None] * K + k[None, :], mask=(m[:, None] < M) & (k[None, :] < K), other=0.0)
    y = tl.load(Y + k[:, None] * N + n[None, :], mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
    z = tl.dot(x, y, input_precision="ieee")
    if ROWS:
        z += tl.load(Z + m * N, mask=m < M, other=0.0)[:, None]
    else:
        z += tl.load(Z + n, mask=n < N, other=0.0)[None, :]
    tl.store(Z + m[:, None] * N + n[None, :], z, mask=(m[:, None] < M) & (n[None, :] < N))


@tiles.jit
def shift_in_place(Z, N, BLOCK: tl.constexpr):
    """z[i] = z[i] + z[(i + 1) % N]: every element read by another thread than the one writing it."""
    i = tl.arange(0, BLOCK)
    a = tl.load(Z + i, mask=i < N)
    b = tl.load(Z + (i + 1) % N, mask=i < N)
    tl.store(Z + i, a + b, mask=i < N)


@tiles.jit
def store_then_transpose(A, B, N, BLOCK: tl.constexpr):
    """Write a tile to A, read it back transposed (other threads' elements), write that to B."""
    r = tl.arange(0, BLOCK)
    mask = (r[:, None] < N) & (r[None, :] < N)
    v = (r[:, None] * 1000 + r[None, :]).to(tl.float32)
    tl.store(A + r[:, None] * N + r[None, :], v, mask=mask)
    t = tl.load(A + r[None, :] * N + r[:, None], mask=mask, other=0.0)
    tl.store(B + r[:, None] * N + r[None, :], t + 1.0, mask=mask)


@tiles.jit
def scale_in_place(Z, N, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Z + i, tl.load(Z + i, mask=i < N) * 2.0 + 1.0, mask=i < N)


@tiles.jit
def add_reversed_rows(Z, R, N, BLOCK: tl.constexpr):
    """z[i + 1] += z[i][::-1], row by row: each iteration reads the row the previous one wrote."""
    o = tl.arange(0, BLOCK)
    for i in range(R - 1):
        row = tl.load(Z + i * N + o, mask=o < N)
        below = Z + (i + 1) * N + (N - 1 - o)
        tl.store(below, tl.load(below, mask=o < N) + row, mask=o < N)


@tiles.jit
def slide(Z, N, STEPS, BLOCK: tl.constexpr, WHILE: tl.constexpr):
    """z[i + t] = 2 * z[i + t] + t for i = 0, 1, ...: thread t's element, next iteration thread t - 1's."""
    o = tl.arange(0, BLOCK)
    if WHILE:
        i = 0
        while i < STEPS:
            p = Z + o + i
            tl.store(p, tl.load(p, mask=o + i < N) * 2 + o, mask=o + i < N)
            i += 1
    else:
        for i in range(STEPS):
            p = Z + o + i
            tl.store(p, tl.load(p, mask=o + i < N) * 2 + o, mask=o + i < N)


@tiles.jit
def rows_apart(A, B, Z, R, N, BLOCK: tl.constexpr):
    """Read rows of A reversed into B; update Z's first row in place: no iteration reads another's writes."""
    o = tl.arange(0, BLOCK)
    for i in range(R):
        tl.store(B + i * N + o, tl.load(A + i * N + (N - 1 - o), mask=o < N), mask=o < N)
        tl.store(Z + o, tl.load(Z + o, mask=o < N) * 2 + 1, mask=o < N)


@tiles.jit
def neighbour_by_branch(Z, N, HALVE, BLOCK: tl.constexpr):
    """z[i] = z[(i + 1) % N] (doubled or halved by a run-time flag): one store in each branch."""
    i = tl.arange(0, BLOCK)
    b = tl.load(Z + (i + 1) % N, mask=i < N)
    if HALVE != 0:
        tl.store(Z + i, b * 0.5, mask=i < N)
    else:
        tl.store(Z + i, b * 2.0, mask=i < N)


PROGRAM_BARRIER = "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"


def opencl_source(kernel, *args, **consts) -> str:
    compiled = kernel.warmup(*args, **consts, grid=(1,), backend="opencl")
    source = compiled.asm["opencl"]
    return source[source.index("__kernel"):]


def ends_loop_body(source: str) -> bool:
    """Whether the first loop's body accesses memory (``*v``) only before a program barrier."""
    lines = [line.rstrip() for line in source.splitlines()]
    top = next(k for k, line in enumerate(lines) if line.lstrip().startswith(("for (", "while (")))
    indent = len(lines[top]) - len(lines[top].lstrip())
    end = next(k for k in range(top + 1, len(lines)) if lines[k] == " " * indent + "}")
    body = [line.strip() for line in lines[top + 1:end]]
    last = max((k for k, line in enumerate(body) if line == PROGRAM_BARRIER), default=-1)
    return last >= 0 and not any(re.search(r"\*v\d", line) for line in body[last:])


@pytest.mark.parametrize("rows, n, warps", [(7, 37, 1), (5, 64, 2), (9, 101, 4)])
def test_loop_reads_the_row_the_last_iteration_wrote(rng, rows, n, warps):
    z0 = (0.5 + rng.random((rows, n))).astype(np.float32)
    z = z0.copy()
    block = 1 << (n - 1).bit_length()
    add_reversed_rows[(1,)](z, rows, n, BLOCK=block, num_warps=warps, backend="opencl")
    want = z0.astype(np.float64)
    for i in range(rows - 1):
        want[i + 1] += want[i][::-1]
    np.testing.assert_allclose(z, want, rtol=1e-5)
    assert ends_loop_body(opencl_source(add_reversed_rows, z, rows, n, BLOCK=block, num_warps=warps))


@pytest.mark.parametrize("use_while", [False, True], ids=["for", "while"])
@pytest.mark.parametrize("n, steps, block, warps", [(101, 9, 128, 1), (101, 9, 128, 4), (13, 20, 16, 1)])
def test_loop_updates_elements_other_threads_update_next(rng, use_while, n, steps, block, warps):
    z0 = rng.integers(1, 100, n).astype(np.int32)
    z = z0.copy()
    slide[(1,)](z, n, steps, BLOCK=block, WHILE=use_while, num_warps=warps, backend="opencl")
    want, o = z0.astype(np.int64), np.arange(block)
    for i in range(steps):
        k = o[o + i < n]
        want[k + i] = want[k + i] * 2 + k
    np.testing.assert_array_equal(z, want)
    assert ends_loop_body(opencl_source(slide, z, n, steps, BLOCK=block, WHILE=use_while, num_warps=warps))


def test_loop_without_crossing_accesses_takes_no_barrier(rng):
    rows, n = 5, 37
    a = (1 + rng.random((rows, n))).astype(np.float32)
    b = np.zeros_like(a)
    z0 = (1 + rng.random(n)).astype(np.float32)
    z = z0.copy()
    rows_apart[(1,)](a, b, z, rows, n, BLOCK=64, num_warps=1, backend="opencl")  # no element held twice
    np.testing.assert_array_equal(b, a[:, ::-1])
    want = z0.copy()
    for _ in range(rows):
        want = want * np.float32(2) + np.float32(1)
    np.testing.assert_array_equal(z, want)
    assert PROGRAM_BARRIER not in opencl_source(rows_apart, a, b, z, rows, n, BLOCK=64, num_warps=1)


@pytest.mark.parametrize("halve", [0, 3])  # not 1: a launch specializes it (the branch folds)
def test_each_branch_orders_its_store(rng, halve):
    z0 = (1 + rng.random(45)).astype(np.float32)
    z = z0.copy()
    neighbour_by_branch[(1,)](z, 45, halve, BLOCK=64, backend="opencl")
    np.testing.assert_array_equal(z, np.roll(z0, -1) * np.float32(0.5 if halve else 2.0))
    assert opencl_source(neighbour_by_branch, z, 45, halve, BLOCK=64).count(PROGRAM_BARRIER) == 2


@pytest.mark.parametrize("rows", [True, False], ids=["add-rows", "add-cols"])
@pytest.mark.parametrize("m, n, k, warps", [(64, 64, 64, 4), (61, 37, 50, 4), (32, 64, 16, 2), (16, 16, 16, 1)])
def test_dot_epilogue_reads_z_before_writing_it(rng, rows, m, n, k, warps):
    x = (rng.random((m, k)) * 0.1).astype(np.float32)
    y = (rng.random((k, n)) * 0.1).astype(np.float32)
    z0 = (1 + rng.random((m, n)) * 0.1).astype(np.float32)
    z = z0.copy()
    bm, bn, bk = (max(16, 1 << (v - 1).bit_length()) for v in (m, n, k))
    dot_add_edge[(1,)](x, y, z, m, n, k, BM=bm, BN=bn, BK=bk, ROWS=rows, num_warps=warps, backend="opencl")
    want = x.astype(np.float64) @ y + (z0[:, :1] if rows else z0[:1, :])
    np.testing.assert_allclose(z, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n, block, warps", [(128, 128, 4), (100, 128, 1), (7, 8, 1), (1000, 1024, 8)])
def test_neighbour_read_before_write(rng, n, block, warps):
    z0 = rng.standard_normal(n).astype(np.float32)
    z = z0.copy()
    shift_in_place[(1,)](z, n, BLOCK=block, num_warps=warps, backend="opencl")
    np.testing.assert_array_equal(z, z0 + np.roll(z0, -1))


@pytest.mark.parametrize("n, block", [(32, 32), (13, 16), (64, 64)])
def test_store_then_read_back_transposed(n, block):
    a = np.full((n, n), -1.0, np.float32)
    b = np.full((n, n), -1.0, np.float32)
    store_then_transpose[(1,)](a, b, n, BLOCK=block, backend="opencl")
    v = (np.arange(n)[:, None] * 1000 + np.arange(n)[None, :]).astype(np.float32)
    np.testing.assert_array_equal(a, v)
    np.testing.assert_array_equal(b, v.T + 1)


def test_in_place_elementwise_takes_no_barrier(rng):
    from tiles.backends.opencl import OpenCLBackend
    z0 = rng.standard_normal(1003).astype(np.float32)
    z = z0.copy()
    scale_in_place[(8,)](z, 1003, BLOCK=128, backend="opencl")
    np.testing.assert_array_equal(z, z0 * np.float32(2) + np.float32(1))
    compiled = scale_in_place.warmup(z, 1003, BLOCK=128, grid=(8,), backend="opencl")
    assert barriers(OpenCLBackend()._generate(compiled, compiled.options).asm)[0] == 0
