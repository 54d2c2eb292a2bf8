"""Which comparisons of a run of consecutive integers are equal across the run (axisinfo's
constancy, which lets the lowering compute one value per box of equal elements, and which sets
how many elements a masked access moves at once).  `x < c` and `x >= c` with `c` a multiple of
the run's length are; `x <= c`, `x > c`, `x == c` and `x != c` are not: treating
`cols == 0` as constant over a chunk made the lowering compute `tl.where(cols == 0, row_total, 0)`
once per chunk, so `tl.sum` of it counted a broadcast row twice (CUDA and OpenCL; found by the
conformance suite on OpenCL).  Masked loads and stores by such comparisons are checked too.
Values on the numpy SIMT simulator (the CUDA lowering; OpenCL shares it) against numpy."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.cuda.simulator.simt import run
from tiles.backends.lowering.axisinfo import analyze
from tiles.core.ops import Op


@tiles.jit
def compare_columns(o_ptr, N: tl.constexpr):
    cols = tl.arange(0, N)[None, :]
    tl.store(o_ptr + cols, (cols < 16).to(tl.int32) + (cols >= 16).to(tl.int32) + (cols == 0).to(tl.int32)
             + (cols != 0).to(tl.int32) + (cols <= 16).to(tl.int32) + (cols > 16).to(tl.int32)
             + (16 > cols).to(tl.int32) + (16 <= cols).to(tl.int32))


def test_only_lt_and_ge_keep_a_runs_constancy():
    ir = compare_columns.compile({"o_ptr": "*i32:16"}, {"N": 64}, backend="cuda", num_warps=4).ir
    info = analyze(ir)
    consts: dict[Op, list[int]] = {}
    for instr in ir.walk():
        if instr.op in (Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE):
            consts.setdefault(instr.op, []).append(info[instr.results[0]].consts(2)[1])
    assert all(c == 1 for op in (Op.EQ, Op.NE, Op.LE, Op.GT) for c in consts[op]), consts
    assert all(c >= 16 for op in (Op.LT, Op.GE) for c in consts[op]), consts


@tiles.jit
def select_first_column(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    x = tl.load(x_ptr + rows * N + cols)
    total = tl.sum(x, axis=1, keep_dims=True)
    tl.store(o_ptr + tl.arange(0, M), tl.sum(tl.where(cols == 0, total, 0), axis=1))


@tiles.jit
def masked_by_column(x_ptr, o_ptr, M: tl.constexpr, N: tl.constexpr, PICK: tl.constexpr):
    rows = tl.arange(0, M)[:, None]
    cols = tl.arange(0, N)[None, :]
    if PICK == 0:
        keep = cols == 4
    elif PICK == 1:
        keep = cols <= 4
    else:
        keep = cols > 4
    x = tl.load(x_ptr + rows * N + cols, mask=keep, other=-1.0)
    tl.store(o_ptr + rows * N + cols, x * 2.0 + 1.0, mask=keep)


def test_sum_of_a_broadcast_row_under_a_column_mask(rng):
    M, N = 16, 16
    x = rng.standard_normal(M * N).astype(np.float32)
    ir = select_first_column.warmup(x, x[:M].copy(), M=M, N=N, num_warps=4, backend="cuda", grid=(1,)).ir
    out = np.zeros(M, np.float32)
    run(ir, [x, out], (1,), 128)
    np.testing.assert_allclose(out, x.reshape(M, N).sum(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pick", [0, 1, 2])
def test_masked_load_and_store_by_column(rng, pick):
    M, N = 8, 16
    x = rng.standard_normal(M * N).astype(np.float32)
    out = rng.standard_normal(M * N).astype(np.float32)
    cols = np.arange(N)[None, :].repeat(M, 0).reshape(-1)
    keep = [cols == 4, cols <= 4, cols > 4][pick]
    want = np.where(keep, x * 2 + 1, out)
    ir = masked_by_column.warmup(x, out, M=M, N=N, PICK=pick, num_warps=4, backend="cuda", grid=(1,)).ir
    run(ir, [x, out], (1,), 128)
    np.testing.assert_array_equal(out, want)
