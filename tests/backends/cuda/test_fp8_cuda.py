"""float8 on CUDA (sm_89+): loads, stores, conversions and arithmetic through float32, against the
interpreter bit for bit (saturating as Triton's ``cvt.rn.satfinite``; tests/language/test_fp8_saturation.py
has the edge values on every backend)."""

import ml_dtypes
import numpy as np
import pytest
from test_tensorcore import needs_gpu

import tiles
import tiles.language as tl
from tiles.backends.base import Options
from tiles.backends.cuda import nvptx_target, toolchain
from tiles.backends.cuda.choices import lower_kernel

FP8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 448.0, 464.0, 465.0, -480.0, 57344.0, 61439.0, 61440.0,
         1e9, 2.0 ** -9, 2.0 ** -16, 2.0 ** -20, 1.0625, 3.3]


@tiles.jit
def fp8_ops(x_ptr, a_ptr, b_ptr, down_ptr, up_ptr, sum_ptr, prod_ptr, neg_ptr, lt_ptr, n,
            BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(down_ptr + offs, x.to(down_ptr.dtype.element_ty), mask=mask)
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(up_ptr + offs, a.to(tl.float32), mask=mask)
    tl.store(sum_ptr + offs, a + b, mask=mask)
    tl.store(prod_ptr + offs, a * b, mask=mask)
    tl.store(neg_ptr + offs, -a, mask=mask)
    tl.store(lt_ptr + offs, a < b, mask=mask)


@tiles.jit
def fp8_cast(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x.to(out_ptr.dtype.element_ty), mask=offs < n)


def _args(fmt, n, seed):
    rng = np.random.default_rng(seed)
    dt = FP8[fmt]
    x = np.concatenate([np.array(EDGES, np.float32), rng.standard_normal(n - len(EDGES)).astype(np.float32) * 300])
    a = (rng.standard_normal(n) * 8).astype(np.float32).astype(dt)
    b = (rng.standard_normal(n) * 8).astype(np.float32).astype(dt)
    outs = [np.zeros(n, dt), np.zeros(n, np.float32), np.zeros(n, dt), np.zeros(n, dt), np.zeros(n, dt),
            np.zeros(n, np.bool_)]
    return [x, a, b, *outs, n]


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_ptx(fmt):
    ir = fp8_ops.warmup(*_args(fmt, 300, 0), BLOCK=128, backend="cuda", num_warps=4).ir
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(4, 1)), "sm_90a")
    assert f"cvt.rn.satfinite.{fmt}x2.f32" in ptx and f"cvt.rn.f16x2.{fmt}x2" in ptx
    if not toolchain.ptxas_path():
        pytest.skip("ptxas not installed: PTX not assembled")
    assert toolchain.ptxas_info(ptx, "sm_90a").get("registers", 0) > 0


@pytest.mark.parametrize("src", [np.float32, np.float16])
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_cast_is_cvt_satfinite_alone(fmt, src):
    """A cast saturates as Triton's does: the cvt.rn.satfinite result as it is, no overflow fix-up."""
    x, out = np.ones(100, src), np.zeros(100, FP8[fmt])
    ir = fp8_cast.warmup(x, out, 100, BLOCK=128, backend="interpreter").ir
    llvm = lower_kernel(ir, nvptx_target("sm_90a"), Options(4, 1))
    assert f"cvt.rn.satfinite.{fmt}x2.f32" in llvm and "fcmp" not in llvm and "select" not in llvm
    try:
        ptx = toolchain.to_ptx(llvm, "sm_90a")
    except Exception as e:  # llvmlite built without the NVPTX target
        pytest.skip(f"no NVPTX code generation here: {e}")
    assert f"cvt.rn.satfinite.{fmt}x2.f32" in ptx
    if not toolchain.ptxas_path():
        pytest.skip("ptxas not installed: PTX not assembled")
    assert toolchain.ptxas_info(ptx, "sm_90a").get("registers", 0) > 0


def test_fp8_before_sm89_is_refused():
    ir = fp8_ops.warmup(*_args("e4m3", 300, 0), BLOCK=128, backend="cuda", num_warps=4).ir
    with pytest.raises(tiles.UnsupportedError, match="sm_89"):
        lower_kernel(ir, nvptx_target("sm_80"), Options(4, 1))


@needs_gpu
@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_matches_interpreter_gpu(fmt):
    got, want = _args(fmt, 1000, 3), _args(fmt, 1000, 3)
    grid = (tiles.cdiv(1000, 128),)
    fp8_ops[grid](*got, BLOCK=128, backend="cuda")
    fp8_ops[grid](*want, BLOCK=128, backend="interpreter")
    for g, w in zip(got[3:9], want[3:9]):
        gv, wv = g.astype(np.float32), w.astype(np.float32)
        np.testing.assert_array_equal(np.isnan(gv), np.isnan(wv))
        np.testing.assert_array_equal(np.nan_to_num(gv, nan=0.0), np.nan_to_num(wv, nan=0.0))
