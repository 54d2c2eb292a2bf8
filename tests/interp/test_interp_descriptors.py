"""DESC_LOAD / DESC_STORE: the interpreter's rule against NumPy (zero fill, dropped writes),
and the desugared masked-pointer form (what every non-TMA backend runs) against the rule."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.core import attrs as A
from tiles.core.descriptors import desugar_descriptors
from tiles.core.errors import CompilationError
from tiles.core.ops import Op
from tiles.core.typerules import IRTypeError, infer
from tiles.core.verify import verify
from tiles.interp import interpret
from tiles.runtime.analysis import written_params


@tiles.jit
def shifted_copy(x_ptr, out_ptr, M, N, sxm, som, dm, dn, BM: tl.constexpr, BN: tl.constexpr):
    """out block (pm, pn) = x block moved by (dm, dn); both through descriptors over strided rows."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[sxm, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[som, 1], block_shape=[BM, BN])
    tile = src.load([pm * BM + dm, pn * BN + dn])
    dst.store([pm * BM - BM // 2, pn * BN - BN // 2], tile)


def _window(x: np.ndarray, r0: int, c0: int, bm: int, bn: int) -> np.ndarray:
    """x[r0:r0+bm, c0:c0+bn] with zeros outside x."""
    out = np.zeros((bm, bn), x.dtype)
    for i in range(bm):
        for j in range(bn):
            r, c = r0 + i, c0 + j
            if 0 <= r < x.shape[0] and 0 <= c < x.shape[1]:
                out[i, j] = x[r, c]
    return out


def _shifted_reference(x, out, bm, bn, dm, dn, grid):
    want = out.copy()
    for pm in range(grid[0]):
        for pn in range(grid[1]):
            tile = _window(x, pm * bm + dm, pn * bn + dn, bm, bn)
            r0, c0 = pm * bm - bm // 2, pn * bn - bn // 2
            for i in range(bm):
                for j in range(bn):
                    r, c = r0 + i, c0 + j
                    if 0 <= r < x.shape[0] and 0 <= c < x.shape[1]:
                        want[r, c] = tile[i, j]
    return want


def _random(rng, shape, dtype):
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def _padded(rng, m, n, dtype, pad):
    """A (m, n) view of rows ``n + pad`` long, so the row stride is not the row length."""
    return _random(rng, (m, n + pad), dtype)[:, :n]


def _fresh(v):
    """A copy of ``v`` with the same strides (``v`` is an array or a leading-corner view of one)."""
    if v.base is None:
        return v.copy()
    return v.base.copy()[tuple(slice(0, s) for s in v.shape)]


def _run_both(kernel_fn, grid, given, **consts):
    """Run the traced IR with DESC ops and its desugared copy; both outputs."""
    ir = kernel_fn.warmup(*given.values(), backend="interpreter", **consts).ir
    assert any(i.op in (Op.DESC_LOAD, Op.DESC_STORE) for i in ir.walk())
    verify(ir)
    sugared = copy.deepcopy(ir)
    assert desugar_descriptors(sugared)
    assert not any(i.op in (Op.DESC_LOAD, Op.DESC_STORE) for i in sugared.walk())
    verify(sugared)
    outs = []
    for k in (ir, sugared):
        args = {name: (_fresh(v) if isinstance(v, np.ndarray) else v) for name, v in given.items()}
        interpret(k, grid, [args[p.name] for p in k.params])
        outs.append(args)
    return outs


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int64])
@pytest.mark.parametrize("m,n,bm,bn", [(13, 29, 8, 16), (7, 5, 4, 8), (33, 17, 16, 4), (1, 40, 2, 32)])
def test_descriptor_copy_matches_numpy(rng, dtype, m, n, bm, bn):
    x = _padded(rng, m, n, dtype, int(rng.integers(0, 7)))
    out = _padded(rng, m, n, dtype, int(rng.integers(0, 7)))
    dm, dn = (int(v) for v in rng.integers(-bm - 2, bm + 3, 2))
    grid = (tiles.cdiv(m, bm) + 1, tiles.cdiv(n, bn) + 1)  # the extra row/column of blocks straddles the far edges
    xs, os_ = x.strides[0] // x.itemsize, out.strides[0] // out.itemsize
    given = dict(x_ptr=x, out_ptr=out, M=m, N=n, sxm=xs, som=os_, dm=dm, dn=dn)
    want = _shifted_reference(x, out, bm, bn, dm, dn, grid)
    direct, sugared = _run_both(shifted_copy, grid, given, BM=bm, BN=bn)
    np.testing.assert_array_equal(direct["out_ptr"], want)
    np.testing.assert_array_equal(sugared["out_ptr"], want)


@tiles.jit
def cube_sum(x_ptr, out_ptr, A0, A1, A2, s0, s1, o0, o1, o2,
             B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr):
    """A 3-D block read at run-time offsets, reduced to one number per program."""
    d = tl.make_tensor_descriptor(x_ptr, shape=[A0, A1, A2], strides=[s0, s1, 1], block_shape=[B0, B1, B2])
    t = d.load([o0 + tl.program_id(0), o1, o2]).to(tl.float64)
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.sum(tl.sum(t, axis=2), axis=1), axis=0))


def test_three_dimensional_blocks(rng):
    a = rng.standard_normal((5, 6, 7))
    for _ in range(6):
        o = [int(v) for v in rng.integers(-4, 7, 3)]
        out = np.full(3, np.nan)
        given = dict(x_ptr=a, out_ptr=out, A0=5, A1=6, A2=7, s0=42, s1=7, o0=o[0], o1=o[1], o2=o[2])
        direct, sugared = _run_both(cube_sum, (3,), given, B0=2, B1=4, B2=8)
        want = [sum(_window(a[r], o[1], o[2], 4, 8).sum() for r in range(o[0] + p, o[0] + p + 2) if 0 <= r < 5)
                for p in range(3)]
        np.testing.assert_allclose(direct["out_ptr"], want, rtol=1e-12, err_msg=f"offsets {o}")
        np.testing.assert_allclose(sugared["out_ptr"], want, rtol=1e-12, err_msg=f"offsets {o}")


@tiles.jit
def fill_edges(out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """A scalar stored through a descriptor: broadcast to the block, clipped at the edges."""
    d = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    d.store([tl.program_id(0) * BM - 1, tl.program_id(1) * BN - 1], tl.program_id(0) * 10 + tl.program_id(1) + 1)


def test_scalar_store_is_clipped(rng):
    m, n = 9, 11
    out = rng.integers(-100, -1, (m, n)).astype(np.int32)
    want = out.copy()
    for pm in range(3):
        for pn in range(3):
            r0, c0 = pm * 4 - 1, pn * 4 - 1
            want[max(r0, 0):r0 + 4, max(c0, 0):c0 + 4] = pm * 10 + pn + 1
    direct, sugared = _run_both(fill_edges, (3, 3), dict(out_ptr=out, M=m, N=n), BM=4, BN=4)
    np.testing.assert_array_equal(direct["out_ptr"], want)
    np.testing.assert_array_equal(sugared["out_ptr"], want)


def test_descriptor_store_marks_its_base_written(rng):
    x, out = rng.standard_normal((4, 4)), np.zeros((4, 4))
    ir = shifted_copy.warmup(x, out, 4, 4, 4, 4, 0, 0, backend="interpreter", BM=4, BN=4).ir
    assert written_params(ir) == {"out_ptr"}


@tiles.jit
def wrong_offsets(x_ptr, BM: tl.constexpr):
    d = tl.make_tensor_descriptor(x_ptr, shape=[BM, BM], strides=[BM, 1], block_shape=[BM, BM])
    d.load([0])


def test_wrong_number_of_offsets_names_the_line():
    with pytest.raises(CompilationError, match=r"2D tensor descriptor needs 2 offsets, got 1") as err:
        wrong_offsets.warmup(np.zeros((4, 4), np.float32), BM=4, backend="interpreter")
    assert "test_interp_descriptors.py" in str(err.value)


def test_type_rule_rejects_bad_operands():
    from tiles.core import dtypes as D
    from tiles.core.dtypes import PointerType
    from tiles.core.ir import TileType
    ptr, i64, i32 = TileType(PointerType(D.float32), ()), TileType(D.int64, ()), TileType(D.int32, ())
    a = A.Descriptor((4, 8))
    assert infer(Op.DESC_LOAD, [ptr, i64, i64, i64, i64, i32, i32], a) == (TileType(D.float32, (4, 8)),)
    with pytest.raises(IRTypeError, match="offsets must be int32"):
        infer(Op.DESC_LOAD, [ptr, i64, i64, i64, i64, i64, i32], a)
    with pytest.raises(IRTypeError, match="expected base, 2 shapes"):
        infer(Op.DESC_LOAD, [ptr, i64, i64, i64, i32, i32], a)
    with pytest.raises(IRTypeError, match="value must be a float32 tile"):
        infer(Op.DESC_STORE, [ptr, i64, i64, i64, i64, i32, i32, TileType(D.float32, (8, 4))], a)


def test_checked_mode_checks_descriptor_accesses_as_masked_ones(rng):
    from tiles.core.checked import instrument
    x = rng.standard_normal((8, 8)).astype(np.float32)
    ir = shifted_copy.warmup(x, x.copy(), 8, 8, 8, 8, 0, 0, backend="interpreter", BM=4, BN=4).ir
    checked, _ = instrument(copy.deepcopy(ir))
    verify(checked)
    ops = [i.op for i in checked.walk()]
    assert Op.DESC_LOAD not in ops and Op.DESC_STORE not in ops and Op.LOAD in ops
