"""``TILES_REASSOCIATE`` (``lowering/reassociate_pointers.py``, default on): inside loops,
``base + rows[:, None] * stride + cols[None, :]`` summed as ``(base + cols) + rows * stride``.
The rewrite's shape in the IR (inside loops only), values on the numpy SIMT simulator against numpy
at odd, masked sizes (2-D copies and a masked ``tl.dot`` loop), and fewer 64-bit additions in the PTX."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.base import CodegenChoices, Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_chosen
from tiles.backends.cuda.simulator.simt import run
from tiles.backends.lowering.reassociate_pointers import reassociate_pointer_sums
from tiles.core.ops import Op


@tiles.jit
def copy_2d(x_ptr, y_ptr, M, N, stride_x, stride_y, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.arange(0, BN)
    ok = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=ok, other=-1.5)
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], x * 2.0 + 1.0, mask=ok)


@tiles.jit
def masked_matmul(a_ptr, b_ptr, c_ptr, M, N, K, sam, sbk, scm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@tiles.jit
def copy_in_steps(x_ptr, y_ptr, M, N, stride_x, stride_y, BM: tl.constexpr, BN: tl.constexpr):
    # a while loop: its rows are rebuilt from a carried scalar each iteration (as tutorial 09's
    # flattened matmul rebuilds its tile's), not an induction variable's closed form
    cols = tl.arange(0, BN)
    start = 0
    while start < M:
        rows = start + tl.arange(0, BM)
        ok = (rows[:, None] < M) & (cols[None, :] < N)
        x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=ok, other=-1.5)
        tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], x * 2.0 + 1.0, mask=ok)
        start += BM


COPY_SIG = {"x_ptr": "*fp32:16", "y_ptr": "*fp32:16", "M": "i32", "N": "i32", "stride_x": "i32", "stride_y": "i32"}


def _ir(kernel, sig, consts):
    return kernel.compile(sig, consts, backend="cuda", num_warps=4).ir


def _column_sums(ir) -> int:
    return sum(1 for i in ir.walk() if i.op is Op.ADDPTR and i.result.type.shape == (1, 64))


def test_sums_outside_loops_stay_as_written():
    ir = _ir(copy_2d, COPY_SIG, {"BM": 16, "BN": 64})
    before = [i.op for i in ir.walk()]
    assert [i.op for i in reassociate_pointer_sums(ir).walk()] == before
    assert _column_sums(ir) == 0


def test_rewrite_adds_columns_to_the_base_first():
    ir = reassociate_pointer_sums(_ir(copy_in_steps, COPY_SIG, {"BM": 16, "BN": 64}))
    defs = {r: i for i in ir.walk() for r in i.results}
    accesses = [i for i in ir.walk() if i.op in (Op.LOAD, Op.STORE)]
    assert len(accesses) == 2
    for access in accesses:
        final = defs[access.operands[0]]
        assert final.op is Op.ADDPTR
        spread = defs[final.operands[0]]
        assert spread.op is Op.BROADCAST
        column_sum = defs[spread.operands[0]]
        assert column_sum.op is Op.ADDPTR and column_sum.result.type.shape == (1, 64)


@pytest.mark.parametrize("M, N, BM, BN", [(37, 45, 16, 64), (5, 130, 8, 256), (64, 64, 32, 64)])
@pytest.mark.parametrize("kernel", [copy_2d, copy_in_steps])
def test_copy_on_the_simulator(monkeypatch, rng, M, N, BM, BN, kernel):
    monkeypatch.delenv("TILES_REASSOCIATE", raising=False)
    stride_x, stride_y = N + 3, N + 7
    x = rng.standard_normal((M, stride_x)).astype(np.float32)
    y = rng.standard_normal((M, stride_y)).astype(np.float32)
    want = y.copy()
    want[:, :N] = x[:, :N] * 2 + 1
    ir = kernel.warmup(x, y, M, N, stride_x, stride_y, BM=BM, BN=BN, num_warps=4, backend="cuda",
                       grid=(1,)).ir
    run(ir, [x, y, M, N, stride_x, stride_y], (-(-M // BM) if kernel is copy_2d else 1,), 128)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("M, N, K", [(37, 45, 50), (16, 32, 64)])
def test_masked_matmul_on_the_simulator(monkeypatch, rng, M, N, K):
    monkeypatch.delenv("TILES_REASSOCIATE", raising=False)
    BM, BN, BK = 16, 32, 16
    a = rng.standard_normal((M, K + 5)).astype(np.float16)
    b = rng.standard_normal((K, N + 3)).astype(np.float16)
    c = rng.standard_normal((M, N + 1)).astype(np.float32)
    want = c.copy()
    want[:, :N] = a[:, :K].astype(np.float64) @ b[:, :N].astype(np.float64)
    args = [a, b, c, M, N, K, K + 5, N + 3, N + 1]
    ir = masked_matmul.warmup(*args, BM=BM, BN=BN, BK=BK, num_warps=4, backend="cuda", grid=(1,)).ir
    run(ir, args, (-(-M // BM), -(-N // BN)), 128, num_stages=3)
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3)
    assert (c[:, N:] == want[:, N:]).all()  # the columns past N untouched


def _flat_matmul_ptx(reassociate: bool) -> str:
    """Tutorial 09's flattened persistent matmul (test_flat_persistent.py), whose rows are rebuilt
    from carried scalars every iteration."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_flat_persistent import _args, _compile
    *_, args = _args(256, 256, 256)
    ir = _compile(args, 4, 128, 128, 64, 8, 3)
    options = Options(8, 3, codegen=CodegenChoices(reassociate=reassociate))
    lowered = lower_chosen(ir, nvptx_target("sm_90a"), options, registry.get("cuda").target())
    return toolchain.to_ptx(lowered.code, "sm_90a")


def test_fewer_64_bit_additions():
    def adds(ptx: str) -> int:
        return len(re.findall(r"\badd\.s64\b", ptx))
    assert adds(_flat_matmul_ptx(True)) < adds(_flat_matmul_ptx(False))


def test_on_by_default(monkeypatch):
    from tiles import config
    assert CodegenChoices().reassociate
    monkeypatch.delenv("TILES_REASSOCIATE", raising=False)
    assert config.reassociate_pointers()
    monkeypatch.setenv("TILES_REASSOCIATE", "0")
    assert not config.reassociate_pointers()
