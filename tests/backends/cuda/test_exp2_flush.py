"""exp/exp2 on CUDA are ex2.approx.ftz (as Triton's): 2 ulp, results below 2^-126 flushed to
zero, within the bounds the backend declares (Target.approximate)."""

import numpy as np
import pytest

import tiles
import tiles.language as tl
from tiles.backends import registry
from tiles.backends.cuda import approximate_math, nvptx_target, toolchain
from tiles.core.ops import Op

GPU, WHY = registry.status("cuda")


@tiles.jit
def exp_kernel(x_ptr, y2_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y2_ptr + offs, tl.math.exp2(x), mask=mask)
    tl.store(y_ptr + offs, tl.exp(x), mask=mask)


def _inputs(n=3001):
    r = np.random.default_rng(5)
    edges = np.array([0.0, -0.0, 1.0, -126.0, -126.5, -140.0, -149.0, -150.0, 127.9, 128.0, -np.inf, np.inf,
                      np.nan, -87.4, -103.0, 88.7], np.float32)
    return np.concatenate([edges, r.uniform(-150, 128, n).astype(np.float32),
                           r.uniform(-4, 4, n).astype(np.float32)])


def test_ptx_uses_the_flushing_approximation():
    from tiles.backends.base import Options
    from tiles.backends.cuda.choices import lower_kernel
    x = _inputs()
    ir = exp_kernel.warmup(x, x, x, x.size, BLOCK=256, backend="interpreter").ir
    ptx = toolchain.to_ptx(lower_kernel(ir, nvptx_target("sm_90a"), Options(4, 3)), "sm_90a")
    assert "ex2.approx.ftz.f32" in ptx and "ex2.approx.f32" not in ptx


def test_declared_bounds_cover_the_flush():
    declared = {op: (rtol, atol) for op, rtol, atol in approximate_math(toolchain.libdevice_path() is not None)}
    assert declared[Op.EXP2][1] >= 2.0 ** -126 and declared[Op.EXP][1] >= 2.0 ** -126


@pytest.mark.skipif(not GPU, reason=f"no CUDA GPU: {WHY}")
def test_exp2_within_declared_bounds_on_gpu():
    x = _inputs()
    y2, y = np.full_like(x, 7.0), np.full_like(x, 7.0)
    exp_kernel[(tiles.cdiv(x.size, 256),)](x, y2, y, x.size, BLOCK=256, backend="cuda")
    declared = {op: (rtol, atol) for op, rtol, atol in registry.get("cuda").target().approximate}
    with np.errstate(all="ignore"):
        for got, want, op in ((y2, np.exp2(x.astype(np.float64)), Op.EXP2), (y, np.exp(x.astype(np.float64)), Op.EXP)):
            rtol, atol = declared[op]
            want32 = want.astype(np.float32)
            assert np.array_equal(np.isnan(got), np.isnan(want32))
            finite = np.isfinite(want32)
            assert np.array_equal(got[~finite & ~np.isnan(want32)], want32[~finite & ~np.isnan(want32)])
            err = np.abs(got[finite].astype(np.float64) - want[finite])
            excess = err - rtol * np.abs(want[finite]) - atol
            assert np.all(excess <= 0), f"{op}: x={x[finite][np.argmax(excess)]}"
    assert np.any((y2 == 0) & (x > -150) & (x < -126)), "no result was flushed: the inputs missed the subnormal range"
