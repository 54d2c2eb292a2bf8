"""enable_fp_fusion on CUDA: on by default (as Triton), ``a * b + c`` compiles to fma.rn; with
``enable_fp_fusion=False`` it rounds twice as the interpreter does.  PTX everywhere, numerics on
a GPU (fused: the FMA written out on the interpreter; unfused: the interpreter bit for bit)."""

import numpy as np
import pytest
from test_examples_ptx import CompileOnlyCUDA

import tiles
import tiles.language as tl
from tiles.backends import registry

GPU, WHY = registry.status("cuda")


@tiles.jit
def multiply_add(a_ptr, b_ptr, c_ptr, o_ptr, n, WRITTEN_FMA: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a, b, c = tl.load(a_ptr + offs, mask=mask), tl.load(b_ptr + offs, mask=mask), tl.load(c_ptr + offs, mask=mask)
    r = tl.fma(a, b, -c) if WRITTEN_FMA else a * b - c
    tl.store(o_ptr + offs, r, mask=mask)


def _inputs(n=3001):
    r = np.random.default_rng(11)
    a, b = r.standard_normal(n).astype(np.float32), r.standard_normal(n).astype(np.float32)
    c = a * b
    c[:6] = np.array([np.nan, np.inf, -0.0, 0.0, 1e30, -3.0], np.float32)
    return a, b, c, np.full(n, 7.0, np.float32)


def _ptx(**launch):
    backend = CompileOnlyCUDA()
    a, b, c, o = _inputs()
    return multiply_add.warmup(a, b, c, o, a.size, WRITTEN_FMA=False, BLOCK=256, backend=backend, **launch).asm["ptx"]


def test_fused_by_default_and_not_when_asked():
    fused, exact = _ptx(), _ptx(enable_fp_fusion=False)
    assert "fma.rn.f32" in fused and "mul.rn.f32" not in fused
    assert "fma.rn.f32" not in exact and "mul.rn.f32" in exact and "sub.rn.f32" in exact
    assert _ptx(enable_fp_fusion=True) == fused


def _run(backend, written_fma=False, **launch):
    a, b, c, o = _inputs()
    multiply_add[(tiles.cdiv(a.size, 256),)](a, b, c, o, a.size, WRITTEN_FMA=written_fma, BLOCK=256,
                                             backend=backend, **launch)
    return o


@pytest.mark.skipif(not GPU, reason=f"no CUDA GPU: {WHY}")
def test_numerics_on_gpu():
    fused, exact = _run("cuda"), _run("cuda", enable_fp_fusion=False)
    np.testing.assert_array_equal(fused, _run("interpreter", written_fma=True))
    np.testing.assert_array_equal(exact, _run("interpreter"))
    assert not np.array_equal(fused, exact)  # the product's rounding error survives only when fused
