"""2-D loads whose addresses run down the tile's first axis are read along it and transposed through
local memory (``lowering/transpose_loads.py``): time-major ``[heads, time]`` tiles feeding a cumsum
along time, masked, with and without ``other``, checked on the numpy SIMT simulator against numpy at
odd sizes; loads with too little contiguity down axis 0 stay as they are; the PTX reads 16 bytes.
Corpus kernels the pass now transforms (conformance ``memory/strided[...,T]``, compat liger
``mta_causal_mask`` and flaggems ``pointwise_dtype``) leave on the simulator exactly what the
interpreter leaves."""

import inspect

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel
from tiles.backends.cuda.simulator.simt import run
from tiles.backends.lowering.transpose_loads import transpose_column_loads
from tiles.core.ops import Op


@tiles.jit
def time_major_cumsum(x_ptr, out_ptr, T, H, s_t, s_h, OTHER: tl.constexpr, BLOCK_H: tl.constexpr,
                      BLOCK_T: tl.constexpr):
    pid = tl.program_id(0)
    offs_h = pid * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_t = tl.arange(0, BLOCK_T)
    ok = (offs_h[:, None] < H) & (offs_t[None, :] < T)
    x = tl.load(x_ptr + offs_h[:, None] * s_h + offs_t[None, :] * s_t, mask=ok, other=OTHER)
    y = tl.cumsum(x * 0.5 + 1.0, axis=1)
    tl.store(out_ptr + offs_h[:, None] * BLOCK_T + offs_t[None, :], y, mask=offs_h[:, None] < H)


@tiles.jit
def time_major_unmasked(x_ptr, out_ptr, s_t, BLOCK_H: tl.constexpr, BLOCK_T: tl.constexpr):
    offs_h = tl.arange(0, BLOCK_H)
    offs_t = tl.arange(0, BLOCK_T)
    x = tl.load(x_ptr + offs_h[:, None] + offs_t[None, :] * s_t)
    tl.store(out_ptr + offs_h[:, None] * BLOCK_T + offs_t[None, :], tl.cumsum(x, axis=1))


def _ir(kernel, args, warps, **consts):
    return kernel.warmup(*args, **consts, num_warps=warps, backend="cuda", grid=(1,)).ir


def _transposed(ir) -> bool:
    return any(i.op is Op.PERMUTE for i in transpose_column_loads(ir).walk())


def _expected(x, H, T, bh, bt, other):
    padded = np.full((H, bt), other, np.float64)
    padded[:, :T] = x[:T, :H].T
    return np.cumsum(padded * 0.5 + 1.0, axis=1)


@pytest.mark.parametrize("H, T, bh, bt, warps, other", [(5, 45, 8, 64, 4, 0.0), (13, 100, 16, 128, 4, 2.5),
                                                        (37, 31, 16, 32, 2, -1.25), (20, 256, 16, 256, 4, 0.0)])
def test_time_major_cumsum_simulated(rng, H, T, bh, bt, warps, other):
    s_t = H + 3  # the time-major input has spare columns
    x = rng.standard_normal((T, s_t)).astype(np.float32) + 0.5
    out = np.full((-(-H // bh) * bh, bt), np.nan, np.float32)
    args = [x, out, np.int32(T), np.int32(H), np.int32(s_t), 1]
    ir = _ir(time_major_cumsum, args, warps, OTHER=other, BLOCK_H=bh, BLOCK_T=bt)
    assert _transposed(ir)
    run(ir, args, (-(-H // bh),), warps * 32)
    np.testing.assert_allclose(out[:H], _expected(x, H, T, bh, bt, other), rtol=1e-5, atol=1e-4)


def test_unmasked_time_major_simulated(rng):
    bh, bt, s_t = 16, 64, 24
    x = rng.standard_normal((bt, s_t)).astype(np.float32) + 0.25
    out = np.zeros((bh, bt), np.float32)
    args = [x, out, np.int32(s_t)]
    ir = _ir(time_major_unmasked, args, 4, BLOCK_H=bh, BLOCK_T=bt)
    assert _transposed(ir)
    run(ir, args, (1,), 128)
    np.testing.assert_allclose(out, np.cumsum(x[:, :bh].T.astype(np.float64), axis=1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("bh, s_h", [(2, 1), (16, 3)])
def test_short_contiguity_stays_untransformed(rng, bh, s_h):
    # two heads (8 bytes down axis 0), or heads s_h apart (no contiguity): left as they are
    H, T, bt = bh - 1 if bh > 2 else 2, 29, 32
    s_t = H * s_h + 1
    x = rng.standard_normal((T, s_t)).astype(np.float32) + 0.5
    out = np.full((bh, bt), np.nan, np.float32)
    args = [x, out, np.int32(T), np.int32(H), np.int32(s_t), np.int32(s_h) if s_h != 1 else 1]
    ir = _ir(time_major_cumsum, args, 2, OTHER=0.0, BLOCK_H=bh, BLOCK_T=bt)
    assert not _transposed(ir)
    run(ir, args, (1,), 64)
    padded = np.zeros((H, bt))
    padded[:, :T] = x[:T, : H * s_h : s_h].T
    np.testing.assert_allclose(out[:H], np.cumsum(padded * 0.5 + 1.0, axis=1), rtol=1e-5, atol=1e-4)


def test_time_major_load_reads_16_bytes():
    # 16 heads contiguous (s_h 1, heads and s_t divisible by 16): eight ld.global.v4 a thread, where
    # the untransposed load would be 32 scalar loads
    sig = {"x_ptr": "*fp32:16", "out_ptr": "*fp32:16", "T": "i32:16", "H": "i32:16", "s_t": "i32:16"}
    consts = {"s_h": 1, "OTHER": 0.0, "BLOCK_H": 16, "BLOCK_T": 256}
    ir = time_major_cumsum.compile(sig, consts, backend="cuda", num_warps=4).ir
    from tiles.backends import registry
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(4), registry.get("cuda").target()),
                           "sm_90a")
    assert ptx.count("ld.global.v4.b32") == 8 and "ld.global.b32" not in ptx


def _corpus_kernel(project_name: str, kernel: str):
    import sys
    from pathlib import Path
    compat = str(Path(__file__).resolve().parents[2] / "compat")
    if compat not in sys.path:
        sys.path.insert(0, compat)
    from compat_harness import load
    return getattr(load(project_name), kernel)


def _strided_conformance_case(case_id: str):
    from tiles.conformance.corpus import memory
    from tiles.conformance.profiles import CI
    (case,) = [c for c in memory.cases(CI) if c.id == case_id]
    return case.kernel, case.grid, case.args(), case.constexprs


def _mta_causal_mask(rng):
    raw = rng.standard_normal((3, 21, 21)).astype(np.float32)  # scores stored transposed, as liger's check
    raw[0, 5, 2] = np.nan
    scores = np.ascontiguousarray(raw.transpose(0, 2, 1))
    out = np.zeros_like(scores)
    return (_corpus_kernel("liger/mta_causal_mask", "_mask_fwd_kernel"), (2, 2, 3),
            [scores, out, 21 * 21, 1, 21, 21], {"mask_val": -1e9, "BLOCK": 16})


def _pointwise_dtype_strided(rng):
    base = rng.standard_normal((40, 30)).astype(np.float32)  # x is base.T: columns contiguous
    y = rng.standard_normal((30, 40)).astype(np.float32)
    out = np.zeros((30, 40), np.float32)
    return (_corpus_kernel("flaggems/pointwise_dtype", "add_strided_kernel"), (2, 3),
            [base, y, out, 30, 40, 1, 30, 40, 1, 0.5], {"BLOCK_R": 16, "BLOCK_C": 16})


CORPUS_CASES = {
    "conformance memory/strided[int32,17x16,T]":
        lambda rng: _strided_conformance_case("memory/strided[int32,17x16,T]"),
    "conformance memory/strided[float64,5x3,T]":
        lambda rng: _strided_conformance_case("memory/strided[float64,5x3,T]"),
    "compat liger/mta_causal_mask": _mta_causal_mask,
    "compat flaggems/pointwise_dtype": _pointwise_dtype_strided,
}


@pytest.mark.parametrize("name", sorted(CORPUS_CASES))
def test_transposed_corpus_loads_simulated_as_interpreted(rng, name):
    # corpus kernels whose column-contiguous load is now read transposed: every array the simulated
    # lowering leaves equals the interpreter's, bit for bit (copies and selects, no arithmetic to round)
    kernel, grid, args, consts = CORPUS_CASES[name](rng)
    ir = _ir(kernel, args, 4, **consts)
    assert _transposed(ir)
    simulated = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    interpreted = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    names = list(inspect.signature(kernel.fn).parameters)  # the IR's parameters (ints equal to 1 are constants)
    run(ir, [simulated[names.index(p.name)] for p in ir.params], grid, 128)
    kernel[grid](*interpreted, **consts, num_warps=4, backend="interpreter")
    for got, want in zip(simulated, interpreted):
        if isinstance(got, np.ndarray):
            np.testing.assert_array_equal(got, want)
